#!/bin/sh
# Builds one edition's PDF (front matter, every chapter, the index), or
# checks one chapter of it on its own (the author's loop).
#
# Usage: tools/pdf.sh LANG BUILDDIR OUT.pdf SLUG...    the whole book
#        tools/pdf.sh --part LANG BUILDDIR SLUG        one chapter
#        tools/pdf.sh --part LANG BUILDDIR identifiers the index alone
#
# pandoc writes LaTeX, XeLaTeX runs until the contents and cross-references
# settle. Either fails on a LaTeX error, on a character missing from the
# fonts, on a link to an anchor that does not exist, and on the typesetting
# problems tools/check-pdf.sh finds (lines into the margin, chunk headers
# cut off from their code).
#
# A chapter on its own is typeset with the book's preamble and filters, in
# one XeLaTeX pass that reads the last whole book's labels (so a reference
# to another chapter's chunk is as wide as in the book), and its page breaks
# are the book's: a chapter begins on a page of its own. Its links are
# checked against the whole book with this chapter's part replaced
# (BUILDDIR/pdf/LANG/current.tex, kept up to date by each run). The whole
# book is built again by make, and by make check when anything other than
# a chapter changed. The index of identifiers and chunks is checked the same
# way, as a part of its own: a code edit that changes its entries need not
# typeset the whole book.
set -eu
part=
if [ "$1" = --part ]; then part=1; shift; fi
lang=$1 b=$2
top=$(pwd)
case $b in /*) babs=$b ;; *) babs="$top/$b" ;; esac
book="$b/pdf/$lang"
if [ -n "$part" ]; then
  slug=$3
  work="$book/part/$slug"
  inputs="$b/weave/pdf-$lang/$slug.md"
  [ -f "$book/book.aux" ] && [ -f "$book/current.tex" ] ||
    { echo "pdf.sh: no whole $lang book in $book to check $slug against (run make pdf)" >&2; exit 1; }
  # where the part begins in the book's LaTeX
  if [ "$slug" = identifiers ]; then
    start='\hypertarget{identifiers}{%'
    what="the index of the $lang edition"
    # the book's preamble styles code (book/header.tex), which pandoc
    # defines only for a document with code: an empty block before the
    # index, outside the part that replaces the book's
    mkdir -p "$work"
    printf '```c\n```\n' > "$work/code.md"
    inputs="$work/code.md $inputs"
  else
    n=${slug%%-*}
    n=${n#0}                                  # 08 is eight, not an octal number
    start="\\setcounter{chapter}{$((n - 1))}"
    what="chapter $slug of the $lang edition"
  fi
else
  out=$3
  shift 3
  work=$book
  inputs="$b/weave/front-$lang.md"
  for s in "$@"; do inputs="$inputs $b/weave/pdf-$lang/$s.md"; done
  inputs="$inputs $b/weave/glossary-$lang.md $b/weave/corpus-$lang.md $b/weave/pdf-$lang/identifiers.md"
  what="the $lang edition"
  mkdir -p "$(dirname "$out")"
fi
mkdir -p "$work"
# The title page's version and date: the commit the book is built from
# (git describe; "-dirty" when the tree has changes) and that commit's date;
# outside a git checkout, "unversioned" and today.
version=$(git describe --always --dirty 2>/dev/null) || version=unversioned
day=$(git log -1 --format=%cd --date=short 2>/dev/null) || day=
[ -n "$day" ] || day=$(date +%Y-%m-%d)
date=$(echo "$day" | awk -F- -v lang="$lang" -v v="$version" '{
  split("January February March April May June July August September October November December", en, " ")
  split("января февраля марта апреля мая июня июля августа сентября октября ноября декабря", ru, " ")
  if (lang == "ru") printf "Версия %s, %d %s %d г.", v, $3, ru[$2 + 0], $1
  else printf "Version %s, %d %s %d", v, $3, en[$2 + 0], $1 }')
if [ -n "$part" ]; then whole=; else whole=--toc; fi
# shellcheck disable=SC2086
pandoc --from markdown --to latex --standalone --highlight-style=tango --lua-filter tools/book.lua \
  --lua-filter tools/print.lua \
  --metadata-file book/metadata.yaml -M lang="$lang" -M tracedir="$b/traces" \
  -M figdir="$babs/figures/$lang" -M figext=pdf -M reportdir="$b/reports" -M date="$date" \
  --top-level-division=chapter --number-sections $whole \
  --include-in-header book/header.tex -o "$work/book.tex" $inputs 2> "$work/pandoc.log" ||
  { cat "$work/pandoc.log" >&2; exit 1; }
# Chapters share section ids (predict, notation, ...); the reader warns about
# them before tools/book.lua makes them unique, so those warnings are noise.
grep -v -e 'Duplicate identifier' -e '^ *Defaulting to' "$work/pandoc.log" >&2 || true
xelatex_pass() {
  if ! (cd "$work" && xelatex -interaction=nonstopmode -halt-on-error book.tex > xelatex.log 2>&1); then
    echo "pdf.sh: XeLaTeX failed on $what (pass $1):" >&2
    grep -A4 '^!' "$work/book.log" >&2 || tail -30 "$work/xelatex.log" >&2
    exit 1
  fi
}
if [ -n "$part" ]; then
  # the chapter without the title page, starting on a page of its own
  awk '/^\\maketitle$/ { next } { print }' "$work/book.tex" > "$work/book.tex.new"
  mv "$work/book.tex.new" "$work/book.tex"
  cp "$book/book.aux" "$work/book.aux"
  xelatex_pass 1
else
  # twice on a first build, usually once after an edit that moved no page break
  for pass in 1 2 3; do
    for f in aux toc; do
      if [ -f "$work/book.$f" ]; then cp "$work/book.$f" "$work/book.$f.before"; else : > "$work/book.$f.before"; fi
    done
    xelatex_pass "$pass"
    cmp -s "$work/book.aux" "$work/book.aux.before" && cmp -s "$work/book.toc" "$work/book.toc.before" && break
  done
fi
if grep -n 'Missing character' "$work/book.log" >&2; then
  echo "pdf.sh: $what uses characters no font has" >&2
  exit 1
fi
# Every \hyperlink must reach a \hypertarget (xdvipdfmx does not complain).
# current.tex is the whole book as it stands: after a whole build the book
# itself; after a chapter's check, the book with that chapter's part (from
# its \setcounter{chapter} to the next chapter, the glossary or the back
# matter) replaced by the chapter's new text. (Typeset alone, a chapter is
# the first of its part and opens with the part's title page; the whole
# book's part titles stay where they are.)
if [ -n "$part" ]; then
  # two chapters of one edition may be checked at once (make -j2): one at a
  # time rewrites current.tex and reads its links
  exec 9> "$book/current.lock"
  flock 9
  START=$start awk -v newpart="$work/book.tex" '
    BEGIN {
      start = ENVIRON["START"]
      while ((getline l < newpart) > 0) {
        if (l == start) on = 1
        else if (l ~ /^\\(end\{document\}|backmatter)/) on = 0
        if (on && l !~ /^\\setcounter\{part\}/) text = text l "\n"
      }
      if (text == "") { print "pdf.sh: no " start " in " newpart > "/dev/stderr"; exit 1 }
    }
    $0 == start { printf "%s", text; skip = 1; done = 1; next }
    skip && /^\\setcounter\{chapter\}|^\\hypertarget\{glossary\}|^\\backmatter/ { skip = 0 }
    !skip || /^\\setcounter\{part\}/ { print }
    END { if (!done) { print "pdf.sh: the whole book has no " start > "/dev/stderr"; exit 1 } }
  ' "$book/current.tex" > "$work/current.tex.new"
  mv "$work/current.tex.new" "$book/current.tex"
else
  cp "$work/book.tex" "$book/current.tex"
fi
grep -o '\\hyperlink{[^}]*}' "$book/current.tex" | sed 's/.*{\(.*\)}/\1/' | sort -u > "$work/links"
grep -o '\\hypertarget{[^}]*}' "$book/current.tex" | sed 's/.*{\(.*\)}/\1/' | sort -u > "$work/targets"
if [ -n "$part" ]; then flock -u 9; fi
dead=$(comm -23 "$work/links" "$work/targets")
if [ -n "$dead" ]; then
  echo "pdf.sh: $what links to anchors that do not exist:" $dead >&2
  exit 1
fi
# Typesetting: strict=0 only reports problems; strict=1 (or
# PDF_CHECK_STRICT=1 in the environment) makes them fail the build.
strict=${PDF_CHECK_STRICT:-1}
tools/check-pdf.sh "$lang" "$work" "$strict" "$what"
if [ -z "$part" ]; then cp "$work/book.pdf" "$out"; fi
