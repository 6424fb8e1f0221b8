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
}

# ---------------------------------------------------------------- pass 1 --
NR == FNR {
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
  } else if ($1 == "@end" && $2 == "code") {
    in_code1 = 0
  } else if ($1 == "@xref" && $2 == "label" && want_label) {
    label_ch[$3] = cur
    label_num[$3] = chnum[cur] letters(ncode[cur])
    want_label = 0
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

function flush_code(    i, foot, sep) {
  print "" > outfile
  print "::: {.chunk #" c_label "}" > outfile
  if (c_prev != "")
    print "[⟨" mdesc(c_name) " " ref(c_label) "⟩+≡]{.chunk-head}" > outfile
  else
    print "[⟨" mdesc(c_name) " " ref(c_label) "⟩≡]{.chunk-head}" > outfile
  print "" > outfile
  print "~~~~~~~~~~~~ {.c}" > outfile
  # drop the empty line noweb reports after the chunk header, and trailing
  # blank lines, so the code block shows just the code
  while (c_nlines > 0 && c_line[c_nlines] ~ /^[ \t]*$/)
    c_nlines--
  for (i = 1; i <= c_nlines; i++)
    print c_line[i] > outfile
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
    pending_ref = ""; ids_pending = ""; in_xuses = 0
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
    } else if ($1 == "@use") {
      c_cur = c_cur "⟨" substr($0, 6) " " (pending_ref in label_num ? label_num[pending_ref] : "?") "⟩"
    } else if ($1 == "@nl") {
      # the first newline ends the chunk's header line, not a code line
      if (!header_nl)
        c_line[++c_nlines] = c_cur
      header_nl = 0
      c_cur = ""
    } else if ($1 == "@index") {
      if ($2 == "isused") ids_pending = ids_pending (ids_pending == "" ? "" : ", ") ref($3)
      else if ($2 == "isdefined") ids_pending = ref($3)
      else if ($2 == "defitem") {
        if (!($3 in c_name_of_c))
          c_defs = c_defs (c_defs == "" ? "" : ", ") "`" $3 "`"
        ids_pending = ""
      } else if ($2 == "useitem") {
        if (!($3 in c_name_of_c))
          c_uses = c_uses (c_uses == "" ? "" : ", ") "`" $3 "` " ids_pending
        ids_pending = ""
      } else if ($2 == "begindefs" || $2 == "beginuses") ids_pending = ""
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
    chunk_refs[k] = chunk_refs[k] (chunk_refs[k] == "" ? "" : ", ") ref($3)
    next
  }
  if ($1 == "@index" && $2 == "entrybegin") {
    if ($4 in c_name_of_c) { j = 0; next }
    j = ++nids
    id_name[j] = $4
    id_defs[j] = ""
    id_uses[j] = ""
    next
  }
  if ($1 == "@index" && $2 == "entrydefn") {
    if (j == 0) next
    id_defs[j] = id_defs[j] (id_defs[j] == "" ? "" : ", ") "**" ref($3) "**"
    next
  }
  if ($1 == "@index" && $2 == "entryuse") {
    if (j == 0) next
    id_uses[j] = id_uses[j] (id_uses[j] == "" ? "" : ", ") ref($3)
    next
  }
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
    print "Все идентификаторы C, которые определяют главы: фрагмент с определением" > f
    print "(жирным) и фрагменты, где идентификатор используется; затем все" > f
    print "именованные фрагменты." > f
    print "" > f
    print "## Идентификаторы {#identifier-list .unnumbered}" > f
  } else {
    print "# Index of identifiers and chunks {#identifiers .unnumbered}" > f
    print "" > f
    print "Every C identifier the chapters define, with the chunk that defines it" > f
    print "(in bold) and the chunks that use it; then every named chunk." > f
    print "" > f
    print "## Identifiers {#identifier-list .unnumbered}" > f
  }
  print "" > f
  for (j = 1; j <= nids; j++)
    print "- `" id_name[j] "`: " id_defs[j] (id_uses[j] == "" ? "" : "; " id_uses[j]) > f
  print "" > f
  print "" > f
  if (lang == "ru") print "## Фрагменты {#chunk-list .unnumbered}" > f
  else print "## Chunks {#chunk-list .unnumbered}" > f
  print "" > f
  for (k = 1; k <= nchunks; k++)
    print "- ⟨" mdesc(chunk_name[k]) "⟩: " chunk_refs[k] > f
  close(f)

  if (mode == "html") {
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
    close(t)
  }
}
