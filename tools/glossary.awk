# glossary.awk -- the book's one Russian vocabulary (book/glossary.txt).
#
# Usage:
#   awk -f tools/glossary.awk book/glossary.txt chapters/*.nw book/front.md
#       checks: exit status 1 and one line FILE:LINE per rejected variant
#       found in a Russian block (prose, headings, captions; code chunks and
#       `inline code` are not prose and are not searched), and per
#       "digest" or "reference course" in an English block
#   awk -f tools/glossary.awk -v page=en book/glossary.txt   (or page=ru)
#       writes the glossary page of that edition as pandoc Markdown
#
# Byte-level matching: the variants are literal UTF-8 text, so any awk does.
# A variant that starts with a lower-case letter is also refused with a
# capital first letter.

function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }

function capital(s,    i) {
  for (i = 1; i <= nletters; i++)
    if (substr(s, 1, length(low[i])) == low[i])
      return up[i] substr(s, length(low[i]) + 1)
  return s
}

BEGIN {
  nletters = split("а б в г д е ё ж з и й к л м н о п р с т у ф х ц ч ш щ ъ ы ь э ю я " \
                   "a b c d e f g h i j k l m n o p q r s t u v w x y z", low, " ")
  split("А Б В Г Д Е Ё Ж З И Й К Л М Н О П Р С Т У Ф Х Ц Ч Ш Щ Ъ Ы Ь Э Ю Я " \
        "A B C D E F G H I J K L M N O P Q R S T U V W X Y Z", up, " ")
  nvar = 0; nterm = 0; bad = 0
  nen = split("digest|Digest|reference course|Reference course", en_bad, "|")
}

FILENAME ~ /glossary\.txt$/ {
  if ($0 ~ /^#/ || $0 ~ /^[ \t]*$/) next
  nf = split($0, f, /\|/)
  if (nf < 2) { printf "%s:%d: an entry needs at least English | Russian\n", FILENAME, FNR; bad = 1; next }
  nterm++
  en[nterm] = trim(f[1]); ru[nterm] = trim(f[2])
  rej[nterm] = nf >= 3 ? trim(f[3]) : ""
  note[nterm] = nf >= 4 ? trim(f[4]) : ""
  n = split(rej[nterm], vs, /; /)
  for (i = 1; i <= n; i++) {
    v = trim(vs[i])
    if (v == "") continue
    nvar++; var[nvar] = v; var_term[nvar] = nterm
    nvar++; var[nvar] = capital(v); var_term[nvar] = nterm
  }
  next
}

# ---- checking the chapters and the front matter
page != "" { next }

FNR == 1 { in_ru = 0; in_en = 0; in_code = 0 }
/^<<.*>>=[ \t]*$/ { in_code = 1; next }
in_code && /^@([ \t]|$)/ { in_code = 0; next }
in_code { next }
/^::: *\{ *lang=ru *\}/ { in_ru = 1; in_en = 0; next }
/^::: *\{ *lang=en *\}/ { in_ru = 0; in_en = 1; next }
# The English text speaks of the course in one way too.
in_en {
  text = $0
  gsub(/`[^`]*`/, "", text)
  for (i = 1; i <= nen; i++)
    if (index(text, en_bad[i]) > 0) {
      printf "%s:%d: \"%s\": the book calls the course it follows \"the Rust course\" (book/front.md)\n",
        FILENAME, FNR, en_bad[i]
      bad = 1
    }
}
in_ru {
  text = $0
  gsub(/`[^`]*`/, "", text)
  for (i = 1; i <= nvar; i++) {
    if (i % 2 == 0 && var[i] == var[i - 1]) continue
    if (index(text, var[i]) > 0) {
      t = var_term[i]
      printf "%s:%d: «%s» is not the book's Russian for \"%s\": write «%s» (book/glossary.txt)\n",
        FILENAME, FNR, var[i], en[t], ru[t]
      bad = 1
    }
  }
}

END {
  if (page == "") exit bad
  if (page == "en") {
    print "# Glossary {#glossary .unnumbered}"
    print ""
    print "The Russian edition uses one Russian term for each English one. This"
    print "table is the list it keeps to; `make check` refuses the variants in"
    print "its last column anywhere in the Russian text."
    print ""
    print "| English | Russian | not used | note |"
  } else {
    print "# Словарь терминов {#glossary .unnumbered}"
    print ""
    print "В русском издании у каждого английского термина один русский. Эта"
    print "таблица — список, которого держится книга; `make check` не"
    print "пропускает в русском тексте варианты из третьего столбца."
    print ""
    print "| по-английски | по-русски | не пишем | примечание |"
  }
  print "|:---|:---|:---|:---|"
  for (t = 1; t <= nterm; t++) {
    nn = note[t]; k = index(nn, ";")
    if (page == "en") nn = k ? trim(substr(nn, 1, k - 1)) : nn
    else nn = k ? trim(substr(nn, k + 1)) : ""
    r = rej[t]; gsub(/; /, ", ", r)
    printf "| %s | %s | %s | %s |\n", en[t], ru[t], r, nn
  }
  print ""
  if (page == "en")
    print ": The book's terms: English, the Russian chosen, the variants the Russian text does not use."
  else
    print ": Термины книги: английский, выбранный русский и варианты, которых в русском тексте нет."
}
