# parity.awk -- every prose passage must exist in English and in Russian.
#
# Usage: awk -f tools/parity.awk chapters/*.nw book/front.md
#
# Prose is written in fenced Divs ::: {lang=en} and ::: {lang=ru}. Each
# English block must be followed by its Russian twin, before any code chunk
# or other English block, and the twins must carry the same structure: the
# same heading levels and explicit ids, the same trace values ([key]{.tv}),
# trace tables, figures and number of display formulas. Exit status 1 and
# one line per problem (FILE:LINE: ...) when they do not pair up.

function problem(line, msg) {
  printf "%s:%d: %s\n", FILENAME, line, msg
  bad = 1
}

function sig_add(kind, s) {
  if (kind == "sorted") tv[cur_lang] = tv[cur_lang] " " s
  else seq[cur_lang] = seq[cur_lang] " " s
}

function sorted_words(s,    n, a, i, j, t, r) {
  n = split(s, a, " ")
  for (i = 2; i <= n; i++)
    for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
  r = ""
  for (i = 1; i <= n; i++) r = r " " a[i]
  return r
}

function close_lang(line) {
  if (cur_lang == "en") {
    want_ru = 1
    en_line = open_line
  } else {
    if (seq["en"] != seq["ru"])
      problem(open_line, "Russian block's structure differs from its English twin (line " en_line "):\n  en:" seq["en"] "\n  ru:" seq["ru"])
    if (sorted_words(tv["en"]) != sorted_words(tv["ru"]))
      problem(open_line, "Russian block's trace values differ from its English twin (line " en_line "):\n  en:" sorted_words(tv["en"]) "\n  ru:" sorted_words(tv["ru"]))
    want_ru = 0
  }
  cur_lang = ""
}

FNR == 1 {
  if (NR > 1) end_file()
  in_code = 0; in_predict = 0; depth = 0; cur_lang = ""; want_ru = 0; pairs = 0
}

function end_file() {
  if (cur_lang != "") problem(open_line, "language block never closed")
  if (want_ru) problem(en_line, "English block has no Russian twin")
  if (pairs == 0) problem(1, "no language blocks at all")
}

in_code {
  if ($0 ~ /^@( |$)/) in_code = 0
  next
}

/^<<.*>>=[ \t]*$/ {
  if (cur_lang != "") problem(FNR, "code chunk inside a language block")
  if (want_ru) { problem(en_line, "English block is followed by a code chunk, not its Russian twin"); want_ru = 0 }
  in_code = 1
  next
}

/^:::+[ \t]*\{[^}]*lang="?(en|ru)"?/ {
  l = ($0 ~ /lang="?en"?/) ? "en" : "ru"
  if (cur_lang != "") { problem(FNR, "language blocks do not nest"); next }
  if (l == "en" && want_ru) problem(en_line, "English block has no Russian twin")
  if (l == "ru" && !want_ru) problem(FNR, "Russian block has no English twin before it")
  if (l == "ru") pairs++
  cur_lang = l
  open_line = FNR
  depth = 0
  seq[l] = ""
  tv[l] = ""
  next
}

/^:::+[ \t]*$/ {
  if (cur_lang != "" && depth == 0) close_lang(FNR)
  else if (depth > 0) depth--
  next
}

/^:::+[ \t]*[^ \t:]/ {
  if (cur_lang != "") {
    depth++
    if (match($0, /rows="?[A-Za-z0-9_]+/)) {
      s = substr($0, RSTART + 5, RLENGTH - 5); gsub(/"/, "", s)
      sig_add("seq", "table:" s)
    }
  }
  next
}

cur_lang != "" {
  # inline code is quoted text, not structure
  text = $0
  gsub(/`[^`]*`/, "", text)
  line = text
  if (line ~ /^#+ /) {
    h = line; sub(/ .*/, "", h)
    if (length(h) <= 2) in_predict = (line ~ /\{#predict[ }]/)
    id = ""
    if (match(line, /\{#[^ }]+/)) id = substr(line, RSTART + 1, RLENGTH - 1)
    sig_add("seq", "h" length(h) id)
  }
  while (match(line, /\[[^][]*\]\{\.tv[ }]/)) {
    s = substr(line, RSTART + 1, RLENGTH - 6)
    rest = substr(line, RSTART + RLENGTH - 1)
    sig_add("sorted", "tv:" s)
    # the opening questions must not carry their answers: a trace value in
    # the Predict section is an error unless it is one of the fixture's
    # inputs, marked [key]{.tv .given}
    if (in_predict && rest !~ /^ *\.given/)
      problem(FNR, "trace value " s " in the Predict section gives an answer away: show it with the evidence ({.predictions}), or mark an input [" s "]{.tv .given}")
    line = substr(line, RSTART + RLENGTH)
  }
  line = text
  while (match(line, /\\tv\{[^}]*\}/)) {
    sig_add("sorted", "tv:" substr(line, RSTART + 4, RLENGTH - 5))
    line = substr(line, RSTART + RLENGTH)
  }
  line = text
  while (match(line, /!\[[^]]*\]\([^)]*\)/)) {
    s = substr(line, RSTART, RLENGTH); sub(/^.*\(/, "", s); sub(/\)$/, "", s)
    sig_add("seq", "figure:" s)
    line = substr(line, RSTART + RLENGTH)
  }
  line = text
  while ((i = index(line, "$$")) > 0) {
    sig_add("seq", "$$")
    line = substr(line, i + 2)
  }
  next
}

$0 !~ /^[ \t]*$/ {
  if (want_ru) { problem(FNR, "text between an English block and its Russian twin"); want_ru = 0 }
  else problem(FNR, "prose outside a language block")
}

END {
  if (NR > 0) end_file()
  exit bad
}
