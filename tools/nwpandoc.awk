# nwpandoc.awk -- the book's noweb back end: noweb pipeline in, pandoc Markdown out.
#
# Usage:
#   markup chapters/*.nw | autodefs.c | finduses | noidx > MARKUP
#   awk -f tools/nwpandoc.awk -v mode=html -v lang=en -v out=DIR MARKUP MARKUP
#
# The markup is read twice: the first pass learns every chapter's number and
# titles and every code chunk's label and display number ("8a", "8b", ...),
# the second writes one Markdown file per chapter (DIR/NN-slug.md), the
# identifier and chunk index (DIR/identifiers.md) and, in html mode, the table
# of contents (DIR/toc.md).
#
# Prose passes through untouched, it is already pandoc Markdown, except the
# blocks tagged with the other language, which are left out. A code chunk
# becomes a Div holding a heading line, a C code block and a footer of
# cross-references. Language-specific words are written as Spans tagged
# {lang=en} and {lang=ru}; the book filter keeps the edition's language.
# In html mode a link to a chunk in another chapter names that chapter's page;
# in pdf mode every link is a local anchor, since the PDF is one document.
#
# Scope of definitions. noweb indexes identifiers across the whole book; the
# book narrows that as C does. A chunk belongs to the library when it is part
# of a file under tangled/src/ or tangled/include/. A definition in a library
# header, or in a library .c file of a name the headers declare (and not
# `static`), is seen from everywhere; any other definition (a demo's or a
# bench's, a library file's static function or file-local macro or type) only
# from the chunks of its own file, or of its own chapter for a chunk that is
# part of no file. A use links to the definitions it sees in its own chapter
# if there are any, otherwise to those it sees elsewhere, and to nothing if it
# sees none. The identifier index lists only the library's definitions and
# the uses that link to them. autodefs.c reads `static TYPE name(` and
# `typedef TYPE (*name)(` as definitions of TYPE: such a definition of a name
# that is defined for real elsewhere is dropped.

function basename_nw(path,    s) {
  s = path
  sub(/^.*\//, "", s)
  sub(/\.nw$/, "", s)
  return s
}

# Chunk letters: a..z, then aa, ab, ...
function letters(k,    s) {
  s = ""
  while (k > 0) {
    s = substr("abcdefghijklmnopqrstuvwxyz", (k - 1) % 26 + 1, 1) s
    k = int((k - 1) / 26)
  }
  return s
}

# Backslash-escape Markdown punctuation so a chunk name is read as text.
function mdesc(s) {
  gsub(/[][\\`*_{}()#+.!<>|~^$@&:;"'=%,?\/-]/, "\\\\&", s)
  return s
}

function yamlq(s) {
  gsub(/'/, "''", s)
  return "'" s "'"
}

function link(label) {
  if (mode == "html" && label_ch[label] != cur)
    return label_ch[label] ".html#" label
  return "#" label
}

# pdf mode: the page of a chunk (tools/print.lua labels every chunk), for
# the index in print: " p. 123"
function page_of(label) {
  if (mode != "pdf" || !(label in label_num))
    return ""
  return "\302\240" (lang == "ru" ? "с." : "p.") "\302\240`\\pageref*{" label "}`{=latex}"
}

function ref(label) {
  if (!(label in label_num))
    return "?"
  return "[" label_num[label] "](" link(label) ")"
}

function en_ru(en, ru) {
  return "[" en "]{lang=en}[" ru "]{lang=ru}"
}

function strip_attrs(s) {
  sub(/[ \t]*\{[^}]*\}[ \t]*$/, "", s)
  sub(/^#[ \t]+/, "", s)
  return s
}

# autodefs.c takes the first word of some column-0 lines for a definition;
# names of C itself and of its library are never the book's definitions.
BEGIN {
  n = split("auto break case char const continue default do double else enum " \
            "extern float for goto if inline int long register restrict return " \
            "short signed sizeof static struct switch typedef union unsigned void " \
            "volatile while size_t uint64_t int64_t uint32_t FILE NULL printf " \
            "fprintf snprintf vsnprintf puts putchar memcpy memset memcmp " \
            "memmove strlen strcmp malloc calloc realloc free exp log sqrt fabs", w, " ")
  for (i = 1; i <= n; i++) c_name_of_c[w[i]] = 1
  # the classes of C's words in pandoc's highlighting (tango)
  n = split("return if for case else while do break continue switch default goto", w, " ")
  for (i = 1; i <= n; i++) c_class[w[i]] = "cf"
  n = split("sizeof struct typedef enum extern union inline _Static_assert _Alignof _Generic", w, " ")
  for (i = 1; i <= n; i++) c_class[w[i]] = "kw"
  n = split("const static auto register volatile restrict signed unsigned char short int long " \
            "float double void _Bool bool size_t ptrdiff_t uintptr_t intptr_t va_list FILE " \
            "int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t", w, " ")
  for (i = 1; i <= n; i++) c_class[w[i]] = "dt"
}

# ---------------------------------------------------------------- pass 1 --
NR == FNR {
  # the most frequent lines, which this pass does not read
  if ($1 == "@index" && ($2 == "isused" || $2 == "isdefined") || $1 == "@xref" && $2 == "ref") next
  if ($1 == "@file") {
    cur = basename_nw($2)
    nch++
    order[nch] = cur
    num = cur
    sub(/-.*$/, "", num)
    chnum[cur] = num + 0
    ncode[cur] = 0
    lang1 = ""
    line1 = ""
  } else if ($1 == "@begin" && $2 == "code") {
    ncode[cur]++
    want_label = 1
    in_code1 = 1
    label1 = ""
    name1 = ""
    code1 = ""
  } else if ($1 == "@end" && $2 == "code") {
    in_code1 = 0
  } else if (in_code1 && $1 == "@text") {
    code1 = code1 substr($0, 7)
  } else if (in_code1 && $1 == "@nl") {
    # `static TYPE name(`, `static const char *const name[] =`: name is static
    if (match(code1, /(^|[^A-Za-z0-9_])static[ \t]/)) {
      code1 = substr(code1, RSTART + RLENGTH)
      if (match(code1, /[A-Za-z_][A-Za-z0-9_]*[ \t]*[][(=;,]/)) {
        code1 = substr(code1, RSTART, RLENGTH)
        sub(/[ \t]*[][(=;,]$/, "", code1)
        static_decl[code1, label1] = 1
      }
    } else if (match(code1, /^[ \t]*typedef[ \t]+[A-Za-z_][A-Za-z0-9_]*[ \t]*\([ \t]*\*/)) {
      code1 = substr(code1, RSTART, RLENGTH)
      sub(/^[ \t]*typedef[ \t]+/, "", code1)
      sub(/[ \t]*\([ \t]*\*$/, "", code1)
      type_word[code1, label1] = 1
    }
    code1 = ""
  } else if ($1 == "@xref" && $2 == "label" && want_label) {
    label_ch[$3] = cur
    label_num[$3] = chnum[cur] letters(ncode[cur])
    label1 = $3
    want_label = 0
  } else if (in_code1 && $1 == "@defn") {
    name1 = substr($0, 7)
    label_name[label1] = name1
  } else if (in_code1 && $1 == "@use") {
    nedges++
    edge_child[nedges] = substr($0, 6)
    edge_parent[nedges] = name1
  } else if (in_code1 && $1 == "@index" && $2 == "defn") {
    real_def[$3, label1] = 1
    real_def_any[$3] = 1
    mention[$3, label1] = 1
  } else if (in_code1 && $1 == "@index" && $2 == "use") {
    mention[$3, label1] = 1
  } else if (in_code1 && $1 == "@index" && $2 == "localdefn") {
    static_def[$3, label1] = 1
  } else if (!in_code1 && $1 == "@text") {
    line1 = line1 substr($0, 7)
  } else if (!in_code1 && $1 == "@nl") {
    if (line1 ~ /^:::+ *\{ *lang="?en"? *\}/) lang1 = "en"
    else if (line1 ~ /^:::+ *\{ *lang="?ru"? *\}/) lang1 = "ru"
    else if (line1 ~ /^# / && lang1 != "" && !((cur, lang1) in title))
      title[cur, lang1] = strip_attrs(line1)
    line1 = ""
  }
  next
}

# ---------------------------------------------------------------- scopes --
# Called once, between the passes: which chunks are the library's, and which
# definitions autodefs.c made up.
function find_scopes(    l, e, r, changed, k, p) {
  # reach[name, root]: the chunk named name is part of the file root
  for (l in label_name)
    if (label_name[l] ~ /^tangled\//) {
      if (!(label_name[l] in is_root)) root[++nroot] = label_name[l]
      is_root[label_name[l]] = 1
      reach[label_name[l], label_name[l]] = 1
    }
  do {
    changed = 0
    for (e = 1; e <= nedges; e++)
      for (r = 1; r <= nroot; r++)
        if (((edge_parent[e], root[r]) in reach) && !((edge_child[e], root[r]) in reach)) {
          reach[edge_child[e], root[r]] = 1
          changed = 1
        }
  } while (changed)
  # the files each chunk is part of: lroot[l, 1..nlroot[l]]
  for (l in label_name)
    for (r = 1; r <= nroot; r++)
      if ((label_name[l], root[r]) in reach) { has_root[l] = 1; lroot[l, ++nlroot[l]] = root[r] }
  for (l in label_name)
    for (r = 1; r <= nroot; r++)
      if (root[r] ~ /^tangled\/(src|include)\// && ((label_name[l], root[r]) in reach)) {
        lib_label[l] = 1
        if (root[r] ~ /^tangled\/include\//) header_label[l] = 1
      }
  # the names the headers declare
  for (k in mention) {
    split(k, p, SUBSEP)
    if (p[2] in header_label) header_name[p[1]] = 1
  }
  for (k in static_def) {
    split(k, p, SUBSEP)
    if (!(k in real_def) && (p[1] in real_def_any)) false_def[k] = 1
  }
  for (k in type_word) {
    split(k, p, SUBSEP)
    for (l in label_name)
      if (l != p[2] && ((p[1], l) in real_def)) { false_def[k] = 1; break }
  }
}

# Whether the chunks labelled a and b are parts of one file.
function same_file(a, b,    k) {
  for (k = 1; k <= nlroot[a]; k++)
    if ((label_name[b], lroot[a, k]) in reach) return 1
  return 0
}

# Whether a use of id in the current chunk sees the definition in chunk l.
function visible(id, l) {
  if ((id, l) in false_def) return 0
  if (l in header_label) return 1
  if ((l in lib_label) && !((id, l) in static_decl) && (id in header_name)) return 1
  if ((l in has_root) && (c_label in has_root)) return same_file(l, c_label)
  return label_ch[l] == cur
}

# The definitions a use of id in the current chunk links to, among the
# candidates cand[1..ncand]: the visible ones of this chapter, else all the
# visible ones. Sets resolved_lib when one of them is the library's.
function resolve(id,    i, l, s, sl, lib_s, lib_sl) {
  s = ""; sl = ""; lib_s = 0; lib_sl = 0
  for (i = 1; i <= ncand; i++) {
    l = cand[i]
    if (!visible(id, l)) continue
    if (label_ch[l] == cur) {
      s = s (s == "" ? "" : ", ") ref(l)
      if (l in lib_label) lib_s = 1
    } else {
      sl = sl (sl == "" ? "" : ", ") ref(l)
      if (l in lib_label) lib_sl = 1
    }
  }
  resolved_lib = (s != "") ? lib_s : lib_sl
  return (s != "") ? s : sl
}

FNR == 1 { find_scopes() }

# ---------------------------------------------------------------- pass 2 --
function open_chapter(name,    i, prev, next_) {
  cur = name
  outfile = out "/" cur ".md"
  for (i = 1; i <= nch; i++)
    if (order[i] == cur) {
      prev = (i > 1) ? order[i - 1] : ""
      next_ = (i < nch) ? order[i + 1] : ""
    }
  if (mode == "html") {
    print "---" > outfile
    print "chapter: " chnum[cur] > outfile
    print "slug: " cur > outfile
    print "title-en: " yamlq(title[cur, "en"]) > outfile
    print "title-ru: " yamlq(title[cur, "ru"]) > outfile
    if (prev != "") {
      print "prev: " prev > outfile
      print "prev-title-en: " yamlq(title[prev, "en"]) > outfile
      print "prev-title-ru: " yamlq(title[prev, "ru"]) > outfile
    }
    if (next_ != "") {
      print "next: " next_ > outfile
      print "next-title-en: " yamlq(title[next_, "en"]) > outfile
      print "next-title-ru: " yamlq(title[next_, "ru"]) > outfile
    }
    print "---" > outfile
    print "" > outfile
  } else {
    print "" > outfile
    print "```{=latex}" > outfile
    print "\\setcounter{chapter}{" (chnum[cur] - 1) "}" > outfile
    print "```" > outfile
    print "" > outfile
  }
  print "::::::::::::::: {#ch" cur " .chapter chapter=\"" chnum[cur] "\" trace=\"ch" cur "\"}" > outfile
  print "" > outfile
}

function close_chapter() {
  if (outfile == "")
    return
  print "" > outfile
  print ":::::::::::::::" > outfile
  close(outfile)
  outfile = ""
}

# ------------------------------------------------------ C, read as C sees it --
# Where a use of an identifier stands: in code, or in a comment or a string
# (finduses marks names everywhere; the Uses line names only the uses in
# code). cs: 0 code, 1 line comment, 2 block comment, 3 string, 4 character.
function c_scan(t,    ch) {
  while (t != "") {
    if (cs == 0) {
      if (!match(t, /\/\/|\/\*|["']/)) return
      ch = substr(t, RSTART, RLENGTH)
      cs = (ch == "//") ? 1 : (ch == "/*") ? 2 : (ch == "\"") ? 3 : 4
    } else if (cs == 2) {
      if (!match(t, /\*\//)) return
      cs = 0
    } else if (cs == 3) {
      if (!match(t, /\\.|"/)) return
      if (RLENGTH == 1) cs = 0
    } else if (cs == 4) {
      if (!match(t, /\\.|'/)) return
      if (RLENGTH == 1) cs = 0
    } else return
    t = substr(t, RSTART + RLENGTH)
  }
}

# HTML mode: a code line as HTML, highlighted as pandoc's tango style does
# (the same span classes: kw, cf, dt, dv, fl, bn, st, sc, ch, co, pp, im,
# op), with every chunk reference (written \001k\002 in the line) a link to
# the chunk's definition. hb: a block comment is open; hp: a preprocessor
# line goes on. The text of the line is unchanged.
function h_esc(t) {
  gsub(/&/, "\\&amp;", t); gsub(/</, "\\&lt;", t); gsub(/>/, "\\&gt;", t)
  return t
}

function h_add(cls, t) {
  if (cls != h_cls) {
    if (h_buf != "") h_out = h_out (h_cls == "" ? h_esc(h_buf) : "<span class=\"" h_cls "\">" h_esc(h_buf) "</span>")
    h_buf = ""
    h_cls = cls
  }
  h_buf = h_buf t
}

function h_chunkref(k) {
  h_add("-", "")
  h_out = h_out "<a class=\"chunk-ref\" href=\"" h_esc(link(ref_label[k])) "\">⟨" h_esc(ref_name[k]) \
          " <span class=\"chunk-num\">" (ref_label[k] in label_num ? label_num[ref_label[k]] : "?") "</span>⟩</a>"
}

function h_line(s,    i, n, ch, w, q, cls, e) {
  h_out = ""; h_buf = ""; h_cls = ""
  n = length(s)
  i = 1
  if (!hb && !hp && match(s, /^[ \t]*#[ \t]*[a-z]*/)) {
    h_add("", substr(s, 1, index(s, "#") - 1))
    if (match(s, /^[ \t]*#[ \t]*include[ \t]*/)) {
      h_add("pp", substr(s, index(s, "#"), RSTART + RLENGTH - index(s, "#")))
      i = RSTART + RLENGTH
      if (match(substr(s, i), /^(<[^>]*>|"[^"]*")/)) {
        h_add("im", substr(s, i, RLENGTH))
        i += RLENGTH
      }
    } else {
      hp = 1
      i = index(s, "#")
    }
  }
  while (i <= n) {
    ch = substr(s, i, 1)
    if (ch == "\001") {
      e = index(substr(s, i), "\002")
      h_chunkref(substr(s, i + 1, e - 2) + 0)
      i += e
      continue
    }
    if (hb) {
      if (ch == "*" && substr(s, i + 1, 1) == "/") { h_add("co", "*/"); hb = 0; i += 2 }
      else if (match(substr(s, i), /^[^*\001]+/)) { h_add("co", substr(s, i, RLENGTH)); i += RLENGTH }
      else { h_add("co", ch); i++ }
      continue
    }
    if (ch == "/" && substr(s, i + 1, 1) == "*") { h_add("co", "/*"); hb = 1; i += 2; continue }
    if (ch == "/" && substr(s, i + 1, 1) == "/") {
      # to the end of the line, chunk references still links
      match(substr(s, i), /^[^\001]*/)
      h_add("co", substr(s, i, RLENGTH)); i += RLENGTH
      continue
    }
    if (hp) {
      if (match(substr(s, i), /^[^\001\/]+/)) { h_add("pp", substr(s, i, RLENGTH)); i += RLENGTH }
      else { h_add("pp", ch); i++ }
      continue
    }
    if (ch == "\"" || ch == "'") {
      cls = (ch == "\"") ? "st" : "ch"
      h_add(cls, ch); i++
      while (i <= n) {
        q = substr(s, i, 1)
        if (q == "\001") break
        if (q == "\\") { h_add(cls == "st" ? "sc" : "ch", substr(s, i, 2)); i += 2; continue }
        if (q != ch && match(substr(s, i), (ch == "\"") ? "^[^\"\\\\\001]+" : "^[^'\\\\\001]+")) {
          h_add(cls, substr(s, i, RLENGTH)); i += RLENGTH; continue
        }
        h_add(cls, q); i++
        if (q == ch) break
      }
      continue
    }
    if (ch ~ /[A-Za-z_]/) {
      match(substr(s, i), /^[A-Za-z_][A-Za-z0-9_]*/)
      w = substr(s, i, RLENGTH)
      h_add((w in c_class) ? c_class[w] : "", w)
      i += RLENGTH
      continue
    }
    if (ch ~ /[0-9]/ || (ch == "." && substr(s, i + 1, 1) ~ /[0-9]/)) {
      if (match(substr(s, i), /^0[xX][0-9A-Fa-f]+[uUlL]*/)) cls = "bn"
      else {
        match(substr(s, i), /^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?[uUlLfF]*/)
        w = substr(s, i, RLENGTH)
        cls = (w ~ /[.eE]/) ? "fl" : "dv"
      }
      h_add(cls, substr(s, i, RLENGTH))
      i += RLENGTH
      continue
    }
    if (ch ~ /[][(){}<>=!&|^~?:;,*%+-]/) {
      match(substr(s, i), /^[][(){}<>=!&|^~?:;,*%+-]+/)
      h_add("op", substr(s, i, RLENGTH)); i += RLENGTH; continue
    }
    if (ch ~ /[.\/]/) { h_add("op", ch); i++; continue }
    if (match(substr(s, i), /^[ \t]+/)) { h_add("", substr(s, i, RLENGTH)); i += RLENGTH; continue }
    h_add("", ch); i++
  }
  h_add("-", "")
  if (hp && s !~ /\\$/) hp = 0
  return h_out
}

function flush_code(    i, foot, sep) {
  print "" > outfile
  print "::: {.chunk #" c_label "}" > outfile
  if (c_prev != "")
    print "[⟨" mdesc(c_name) " " ref(c_label) "⟩+≡]{.chunk-head}" > outfile
  else
    print "[⟨" mdesc(c_name) " " ref(c_label) "⟩≡]{.chunk-head}" > outfile
  print "" > outfile
  # drop the empty line noweb reports after the chunk header, and trailing
  # blank lines, so the code block shows just the code
  while (c_nlines > 0 && c_line[c_nlines] ~ /^[ \t]*$/)
    c_nlines--
  if (mode == "html") {
    # raw HTML, so that a chunk reference in the code is a link
    print "~~~~~~~~~~~~ {=html}" > outfile
    hb = 0; hp = 0
    printf "%s", "<div class=\"sourceCode\"><pre class=\"sourceCode c\"><code class=\"sourceCode c\">" > outfile
    for (i = 1; i <= c_nlines; i++)
      printf "%s%s", h_line(c_line[i]), (i < c_nlines ? "\n" : "") > outfile
    print "</code></pre></div>" > outfile
  } else {
    print "~~~~~~~~~~~~ {.c}" > outfile
    for (i = 1; i <= c_nlines; i++)
      print c_line[i] > outfile
  }
  print "~~~~~~~~~~~~" > outfile
  print "" > outfile

  foot = ""
  sep = ""
  if (c_file != "") {
    foot = foot sep en_ru("File", "Файл") " `" c_file "`."
    sep = " "
  }
  if (c_prev != "") {
    foot = foot sep en_ru("Continues", "Продолжает") " " ref(c_prev) "."
    sep = " "
  }
  if (c_next != "") {
    foot = foot sep en_ru("Continued in", "Продолжение в") " " ref(c_next) "."
    sep = " "
  }
  if (c_usedin != "") {
    foot = foot sep en_ru("Used in", "Используется в") " " c_usedin "."
    sep = " "
  }
  if (c_defs != "") {
    foot = foot sep en_ru("Defines", "Определяет") " " c_defs "."
    sep = " "
  }
  if (c_uses != "") {
    foot = foot sep en_ru("Uses", "Использует") " " c_uses "."
    sep = " "
  }
  if (foot != "")
    print "[" foot "]{.chunk-foot}" > outfile
  print ":::" > outfile
  print "" > outfile
}

{
  if ($1 == "@file") {
    close_chapter()
    open_chapter(basename_nw($2))
    next
  }
  if ($1 == "@begin" && $2 == "code") {
    in_code = 1
    c_label = ""; c_name = ""; c_prev = ""; c_next = ""; c_file = ""
    c_usedin = ""; c_defs = ""; c_uses = ""; c_nlines = 0; c_cur = ""
    pending_ref = ""; ids_pending = ""; in_xuses = 0; ncand = 0; delete in_cand
    cs = 0; nrefs = 0; split("", code_use)
    next
  }
  if ($1 == "@end" && $2 == "code") {
    flush_code()
    in_code = 0
    next
  }
  if ($1 == "@begin" && $2 == "docs") { dline = ""; next }
  if ($1 == "@end" && $2 == "docs") { next }

  if (in_code) {
    if ($1 == "@xref") {
      if ($2 == "label" && c_label == "") c_label = $3
      else if ($2 == "ref") pending_ref = $3
      else if ($2 == "prevdef") c_prev = $3
      else if ($2 == "nextdef") c_next = $3
      else if ($2 == "beginuses") in_xuses = 1
      else if ($2 == "enduses") in_xuses = 0
      else if ($2 == "useitem" && in_xuses)
        c_usedin = c_usedin (c_usedin == "" ? "" : ", ") ref($3)
      else if ($2 == "notused") {
        name = substr($0, length("@xref notused ") + 1)
        if (name ~ /^tangled\//) c_file = name
      }
    } else if ($1 == "@defn") {
      c_name = substr($0, 7)
      header_nl = 1
    } else if ($1 == "@text") {
      c_cur = c_cur substr($0, 7)
      c_scan(substr($0, 7))
    } else if ($1 == "@use" && mode == "html") {
      ref_label[++nrefs] = pending_ref
      ref_name[nrefs] = substr($0, 6)
      c_cur = c_cur "\001" nrefs "\002"
    } else if ($1 == "@use") {
      c_cur = c_cur "⟨" substr($0, 6) " " (pending_ref in label_num ? label_num[pending_ref] : "?") "⟩"
    } else if ($1 == "@nl") {
      if (cs != 2) cs = 0
      # the first newline ends the chunk's header line, not a code line
      if (!header_nl)
        c_line[++c_nlines] = c_cur
      header_nl = 0
      c_cur = ""
    } else if ($1 == "@index") {
      if ($2 == "use" && cs == 0) code_use[$3] = 1
      if ($2 == "isdefined") {
        if (!($3 in in_cand)) { cand[++ncand] = $3; in_cand[$3] = 1 }
      } else if ($2 == "defitem") {
        # a library name links to its entry in the index (html only)
        if (!($3 in c_name_of_c) && !(($3, c_label) in false_def))
          c_defs = c_defs (c_defs == "" ? "" : ", ") \
            ((mode == "html" && (c_label in lib_label)) ? "[`" $3 "`](identifiers.html#id-" $3 ")" : "`" $3 "`")
      } else if ($2 == "useitem") {
        # a name used only in comments and strings is not a use
        if (!($3 in c_name_of_c) && ($3 in code_use)) {
          ids_pending = resolve($3)
          if (ids_pending != "")
            c_uses = c_uses (c_uses == "" ? "" : ", ") "`" $3 "` " ids_pending
          if (resolved_lib) lib_use[$3, c_label] = 1
        }
        ncand = 0; delete in_cand
      } else if ($2 == "begindefs" || $2 == "beginuses") { ncand = 0; delete in_cand }
    }
    next
  }

  # outside code: docs text and the final indexes
  if ($1 == "@text") { dline = dline substr($0, 7); next }
  if ($1 == "@quote") { dline = dline "[["; next }
  if ($1 == "@endquote") { dline = dline "]]"; next }
  if ($1 == "@nl") {
    # keep only this edition's prose: a block tagged with the other
    # language is skipped up to its closing fence
    if (skip_depth > 0) {
      if (dline ~ /^:::+[ \t]*$/) skip_depth--
      else if (dline ~ /^:::+[ \t]*[^ \t:]/) skip_depth++
    } else if (dline ~ /^:::+ *\{ *lang="?(en|ru)"? *\}/ && dline !~ ("lang=\"?" lang)) {
      skip_depth = 1
    } else if (outfile != "") print dline > outfile
    dline = ""
    next
  }
  if (($1 == "@xref" && $2 == "beginchunks") || ($1 == "@index" && $2 == "beginindex")) {
    # the indexes of the whole book follow the last chapter: their links
    # are written from no chapter's page
    close_chapter()
    cur = ""
    next
  }
  if ($1 == "@xref" && $2 == "chunkbegin") {
    k = ++nchunks
    chunk_label[k] = $3
    chunk_name[k] = substr($0, length("@xref chunkbegin " $3 " ") + 1)
    chunk_refs[k] = ""
    next
  }
  if ($1 == "@xref" && $2 == "chunkdefn") {
    chunk_refs[k] = chunk_refs[k] (chunk_refs[k] == "" ? ref($3) page_of($3) : ", " ref($3))
    next
  }
  # the index lists the library's identifiers: their definitions in the
  # library and the uses that link to them
  if ($1 == "@index" && $2 == "entrybegin") {
    if ($4 in c_name_of_c) { j = 0; next }
    j = ++nids
    id_name[j] = $4
    id_defs[j] = ""
    id_uses[j] = ""
    next
  }
  if ($1 == "@index" && $2 == "entrydefn") {
    if (j == 0 || !($3 in lib_label) || ((id_name[j], $3) in false_def)) next
    id_defs[j] = id_defs[j] (id_defs[j] == "" ? "" : ", ") "**" ref($3) "**" page_of($3)
    id_targets[j] = id_targets[j] " " label_ch[$3] ".html#" $3
    if ($3 in header_label) id_pub[j] = 1
    next
  }
  if ($1 == "@index" && $2 == "entryuse") {
    if (j == 0 || !((id_name[j], $3) in lib_use)) next
    id_uses[j] = id_uses[j] (id_uses[j] == "" ? "" : ", ") ref($3)
    next
  }
}

# The index's order: by name without the library's prefix llm_ / LLM_ (which
# nearly every name has), ignoring case; its letter is the first of that.
function sort_key(name,    k) {
  k = name
  sub(/^(llm|LLM)_/, "", k)
  return tolower(k) " " name
}

function letter_of(key,    c) {
  c = toupper(substr(key, 1, 1))
  return (c ~ /[A-Z]/) ? c : "_"
}

# sorted[1..nsorted]: the index entries of one part (pub = 1: the public
# interface, 0: the rest of the library), in sort_key order.
function sort_part(pub,    j, i, k) {
  nsorted = 0
  for (j = 1; j <= nids; j++) {
    if (id_defs[j] == "" || is_public(j) != pub) continue
    k = sort_key(id_name[j])
    for (i = nsorted; i > 0 && sort_keys[i] > k; i--) {
      sorted[i + 1] = sorted[i]
      sort_keys[i + 1] = sort_keys[i]
    }
    sorted[i + 1] = j
    sort_keys[i + 1] = k
    nsorted++
  }
}

# The public interface: the names the headers declare. noweb finds no
# definition in a prototype, so a name counts when a header chunk defines it,
# or mentions it and it has the library's prefix (a header's comment may
# mention a static helper's plain name).
function is_public(j) {
  return (j in id_pub) || ((id_name[j] in header_name) && id_name[j] ~ /^(llm|LLM)_/)
}

# The letters of one part, as jump links: prefix is the anchors' prefix.
function letter_links(pub, prefix,    i, l, last, s) {
  sort_part(pub)
  s = ""; last = ""
  for (i = 1; i <= nsorted; i++) {
    l = letter_of(sort_keys[i])
    if (l != last) s = s (s == "" ? "" : " ") "[" (l == "_" ? "\\_" : l) "](#" prefix "-" tolower(l) ")"
    last = l
  }
  return s
}

# One part of the index. In html, a heading per letter and an anchor per
# entry (id-NAME, the name itself links to it); in pdf, the plain list.
function print_part(f, pub, prefix,    i, j, l, last, up) {
  sort_part(pub)
  up = (lang == "ru") ? "к буквам" : "to the letters"
  last = ""
  for (i = 1; i <= nsorted; i++) {
    j = sorted[i]
    l = letter_of(sort_keys[i])
    if (mode == "html" && l != last) {
      print "" > f
      print "### " (l == "_" ? "\\_" : l) " [↑](#index-letters \"" up "\"){.up} {#" prefix "-" tolower(l) " .unnumbered .letter}" > f
      print "" > f
    }
    last = l
    if (mode == "html")
      print "- [`" id_name[j] "`](#id-" id_name[j] "){#id-" id_name[j] "}: " id_defs[j] (id_uses[j] == "" ? "" : "; " id_uses[j]) > f
    else
      print "- `" id_name[j] "`: " id_defs[j] (id_uses[j] == "" ? "" : "; " id_uses[j]) > f
  }
  print "" > f
}

END {
  close_chapter()
  cur = ""
  f = out "/identifiers.md"
  if (mode == "html") {
    print "---" > f
    print "title-en: 'Index of identifiers and chunks'" > f
    print "title-ru: 'Указатель идентификаторов и фрагментов'" > f
    print "---" > f
  }
  print "" > f
  if (lang == "ru") {
    print "# Указатель идентификаторов и фрагментов {#identifiers .unnumbered}" > f
    print "" > f
    print "Все идентификаторы C, которые определяет библиотека (`tangled/src`," > f
    print "`tangled/include`): фрагмент с определением (жирным) и фрагменты, где" > f
    print "идентификатор используется. Сначала открытый интерфейс, то есть имена," > f
    print "объявленные в заголовках `tangled/include/llm/*.h`, затем внутренние имена" > f
    print "библиотеки, затем все именованные фрагменты. Имена упорядочены без" > f
    print "приставки `llm_` (`LLM_`), которая есть почти у всех: `llm_tensor_zeros`" > f
    print "стоит на букву T. Имена, которые демонстрация главы определяет для себя," > f
    print "указаны только в подписях фрагментов своей главы." > f
  } else {
    print "# Index of identifiers and chunks {#identifiers .unnumbered}" > f
    print "" > f
    print "Every C identifier the library defines (`tangled/src`, `tangled/include`)," > f
    print "with the chunk that defines it (in bold) and the chunks that use it: first" > f
    print "the public interface, the names the headers `tangled/include/llm/*.h`" > f
    print "declare, then the library's internal names, then every named chunk. Names" > f
    print "are ordered without the prefix `llm_` (`LLM_`) nearly all of them have:" > f
    print "`llm_tensor_zeros` is under T. The names a chapter's demo defines for itself" > f
    print "are listed only in the footers of its own chapter's chunks." > f
  }
  print "" > f
  if (mode == "html") {
    print "::: {#index-letters .letters}" > f
    print "[" en_ru("Public interface", "Открытый интерфейс") "](#api){.part}" > f
    print "[" letter_links(1, "api") "]{.jump}" > f
    print "" > f
    print "[" en_ru("Inside the library", "Внутри библиотеки") "](#internal){.part}" > f
    print "[" letter_links(0, "internal") "]{.jump}" > f
    print "" > f
    print "[" en_ru("Chunks", "Фрагменты") "](#chunk-list){.part}" > f
    print ":::" > f
    print "" > f
  }
  if (lang == "ru") {
    print "## Открытый интерфейс {#api .unnumbered}" > f
    print "" > f
    print "Имена, объявленные в заголовках `tangled/include/llm/*.h`: то, что видит" > f
    print "программа, подключившая библиотеку (и слой демонстраций: `evidence.h`, `probe.h`)." > f
  } else {
    print "## The public interface {#api .unnumbered}" > f
    print "" > f
    print "The names the headers `tangled/include/llm/*.h` declare: what a program that" > f
    print "links the library sees (and the demo layer: `evidence.h`, `probe.h`)." > f
  }
  print_part(f, 1, "api")
  print "" > f
  if (lang == "ru") {
    print "## Внутри библиотеки {#internal .unnumbered}" > f
    print "" > f
    print "Имена, которых нет ни в одном открытом заголовке: закрытый интерфейс ленты" > f
    print "`tangled/src/tape_op.h`, статические вспомогательные функции, макросы и типы" > f
    print "отдельных файлов. Снаружи библиотеки их не видно." > f
  } else {
    print "## Inside the library {#internal .unnumbered}" > f
    print "" > f
    print "The names no public header declares: the tape's private interface" > f
    print "`tangled/src/tape_op.h`, static helpers, and the macros and types of one" > f
    print "file. Nothing outside the library sees them." > f
  }
  print_part(f, 0, "internal")
  print "" > f
  if (lang == "ru") print "## Фрагменты {#chunk-list .unnumbered}" > f
  else print "## Chunks {#chunk-list .unnumbered}" > f
  print "" > f
  for (k = 1; k <= nchunks; k++)
    print "- ⟨" mdesc(chunk_name[k]) "⟩: " chunk_refs[k] > f
  close(f)

  if (mode == "html") {
    # the library's names and their definitions, for the links from prose
    # (tools/web.lua): NAME PAGE#LABEL..., a line each
    t = out "/iddefs.md"
    for (j = 1; j <= nids; j++)
      if (id_targets[j] != "") print id_name[j] id_targets[j] > t
    close(t)
    t = out "/toc.md"
    print "" > t
    if (lang == "ru") {
      print "# Оглавление {#contents .unnumbered}" > t
      print "" > t
      print "Вся книга одним PDF: [по-русски](../book-ru.pdf), [по-английски](../book-en.pdf)." > t
    } else {
      print "# Contents {#contents .unnumbered}" > t
      print "" > t
      print "The whole book as one PDF: [English](../book-en.pdf), [Russian](../book-ru.pdf)." > t
    }
    print "" > t
    for (i = 1; i <= nch; i++) {
      c = order[i]
      print "- [" chnum[c] " · " en_ru(mdesc(title[c, "en"]), mdesc(title[c, "ru"])) "](" c ".html)" > t
    }
    print "- [" en_ru("Index of identifiers and chunks", "Указатель идентификаторов и фрагментов") "](identifiers.html)" > t
    print "- [" en_ru("Glossary", "Словарь терминов") "](glossary.html)" > t
    print "- [" en_ru("The book\\'s corpus", "Корпус книги") "](corpus.html)" > t
    close(t)
  }
}
