#!/bin/sh
# Writes the site's front page: book/landing.html with its @...@ lines and
# words filled in from what the build has made, so that nothing on it is
# typed by hand:
#   @FIRST-xx@     a link to the first chapter written, with its title
#   @COUNT-xx@     how many chapters are written
#   @CHAPTERS-xx@  one list item per chapter page present, number and title
#   @PDFS-xx@      one list item per edition's PDF, with its size (or a note
#                  that it is not built yet)
# Titles are read from the chapter pages' <title>, sizes from the PDFs.
#
# Usage: tools/landing.sh book/landing.html HTMLDIR SLUG... > HTMLDIR/index.html
# (the Makefile writes it again after building the PDFs, for their sizes)
set -eu
template=$1 html=$2
shift 2

# one line per chapter page: LANG <tab> NN-slug <tab> title (HTML, as pandoc wrote it)
list=$(for lang in en ru; do
  for slug in "$@"; do
    page="$html/$lang/$slug.html"
    [ -f "$page" ] || { echo "landing.sh: no page $page" >&2; exit 1; }
    title=$(sed -n 's:.*<title>\(.*\) — [^<]*</title>.*:\1:p' "$page" | head -1)
    printf '%s\t%s\t%s\n' "$lang" "$slug" "$title"
  done
done)

# one line per PDF: LANG <tab> size in bytes (nothing if not built)
sizes=$(for lang in en ru; do
  f="$html/book-$lang.pdf"
  if [ -f "$f" ]; then printf '%s\t%s\n' "$lang" "$(wc -c < "$f" | tr -d ' ')"; fi
done)

awk -v list="$list" -v sizes="$sizes" '
function size_text(bytes, lang,    s) {
  if (bytes >= 1000000) s = sprintf("%.1f", bytes / 1000000)
  else s = sprintf("%.0f", bytes / 1000)
  if (lang == "ru") { sub(/\./, ",", s); return s "\302\240" (bytes >= 1000000 ? "МБ" : "КБ") }
  return s "\302\240" (bytes >= 1000000 ? "MB" : "kB")
}
# Russian: the number agrees with its noun (1 глава, 2 главы, 5 глав)
function glav(n,    m10, m100) {
  m10 = n % 10; m100 = n % 100
  if (m10 == 1 && m100 != 11) return "глава"
  if (m10 >= 2 && m10 <= 4 && (m100 < 12 || m100 > 14)) return "главы"
  return "глав"
}
BEGIN {
  n = split(list, rows, "\n")
  for (i = 1; i <= n; i++) {
    if (split(rows[i], f, "\t") < 3) continue
    lang = f[1]; num = f[2]; sub(/-.*/, "", num); num += 0
    items[lang] = items[lang] "<li><span class=\"num\">" num "</span> <a href=\"" lang "/" f[2] ".html\">" f[3] "</a></li>\n"
    count[lang]++
    if (!(lang in first))
      first[lang] = (lang == "ru") ? \
        "<a href=\"ru/" f[2] ".html\">главы " num " «" f[3] "»</a>" : \
        "<a href=\"en/" f[2] ".html\">chapter " num ", “" f[3] "”</a>"
  }
  m = split(sizes, srows, "\n")
  for (i = 1; i <= m; i++)
    if (split(srows[i], f, "\t") == 2) size[f[1]] = f[2]
  name["en", "en"] = "English"; name["en", "ru"] = "Russian"
  name["ru", "ru"] = "по-русски"; name["ru", "en"] = "по-английски"
  for (k = 1; k <= 2; k++) {
    page = (k == 1) ? "en" : "ru"
    pdfs[page] = ""
    for (e = 1; e <= 2; e++) {
      ed = (e == 1) ? page : ((page == "en") ? "ru" : "en")
      if (ed in size)
        pdfs[page] = pdfs[page] "<li><a href=\"book-" ed ".pdf\" hreflang=\"" ed "\">" name[page, ed] "</a>, " size_text(size[ed], page) "</li>\n"
      else if (page == "ru")
        pdfs[page] = pdfs[page] "<li>" name[page, ed] ": файл ещё не собран (<code>make pdf</code>)</li>\n"
      else
        pdfs[page] = pdfs[page] "<li>" name[page, ed] ": the file is not built yet (<code>make pdf</code>)</li>\n"
    }
  }
  if (count["en"] == 0 || count["ru"] == 0) {
    print "landing.sh: no chapter pages in one of the editions" > "/dev/stderr"
    exit 1
  }
  cnt["en"] = count["en"] " " (count["en"] == 1 ? "chapter" : "chapters") ", in the order of the book:"
  # написана 1 глава, написаны 24 главы, написано 25 глав
  g = glav(count["ru"])
  cnt["ru"] = "Пока " (g == "глава" ? "написана" : (g == "главы" ? "написаны" : "написано")) " " count["ru"] " " g ", в порядке книги:"
}
{
  line = $0
  if (line ~ /^@(CHAPTERS|PDFS)-(en|ru)@$/) {
    l = substr(line, length(line) - 2, 2)
    printf "%s", (line ~ /CHAPTERS/) ? items[l] : pdfs[l]
    next
  }
  while (match(line, /@(FIRST|COUNT)-(en|ru)@/)) {
    key = substr(line, RSTART + 1, RLENGTH - 2)
    l = substr(key, length(key) - 1)
    val = (key ~ /^FIRST/) ? first[l] : cnt[l]
    line = substr(line, 1, RSTART - 1) val substr(line, RSTART + RLENGTH)
  }
  if (line ~ /@[A-Z]+-(en|ru)@/) { print "landing.sh: unknown placeholder in " line > "/dev/stderr"; exit 1 }
  print line
}' "$template"
