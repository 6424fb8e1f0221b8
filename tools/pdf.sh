#!/bin/sh
# Builds one edition's PDF: front matter, every chapter, the index.
#
# Usage: tools/pdf.sh LANG BUILDDIR OUT.pdf SLUG...
# pandoc writes LaTeX, XeLaTeX runs twice (contents and cross-references).
# The build fails on a LaTeX error, on a character missing from the fonts,
# and on a link to an anchor that does not exist.
set -eu
lang=$1 b=$2 out=$3
shift 3
top=$(pwd)
case $b in /*) babs=$b ;; *) babs="$top/$b" ;; esac
work="$b/pdf/$lang"
mkdir -p "$work" "$(dirname "$out")"
inputs="$b/weave/front-$lang.md"
for s in "$@"; do inputs="$inputs $b/weave/pdf-$lang/$s.md"; done
inputs="$inputs $b/weave/glossary-$lang.md $b/weave/pdf-$lang/identifiers.md"
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
# shellcheck disable=SC2086
pandoc --from markdown --to latex --standalone --highlight-style=tango --lua-filter tools/book.lua \
  --lua-filter tools/print.lua \
  --metadata-file book/metadata.yaml -M lang="$lang" -M tracedir="$b/traces" \
  -M figdir="$babs/figures/$lang" -M figext=pdf -M reportdir="$b/reports" -M date="$date" \
  --top-level-division=chapter --number-sections --toc \
  --include-in-header book/header.tex -o "$work/book.tex" $inputs 2> "$work/pandoc.log" ||
  { cat "$work/pandoc.log" >&2; exit 1; }
# Chapters share section ids (predict, notation, ...); the reader warns about
# them before tools/book.lua makes them unique, so those warnings are noise.
grep -v -e 'Duplicate identifier' -e '^ *Defaulting to' "$work/pandoc.log" >&2 || true
# XeLaTeX runs until the contents and cross-references settle: twice on a
# first build, usually once after an edit that moved no page break.
for pass in 1 2 3; do
  for f in aux toc; do
    if [ -f "$work/book.$f" ]; then cp "$work/book.$f" "$work/book.$f.before"; else : > "$work/book.$f.before"; fi
  done
  if ! (cd "$work" && xelatex -interaction=nonstopmode -halt-on-error book.tex > xelatex.log 2>&1); then
    echo "pdf.sh: XeLaTeX failed on the $lang edition (pass $pass):" >&2
    grep -A4 '^!' "$work/book.log" >&2 || tail -30 "$work/xelatex.log" >&2
    exit 1
  fi
  cmp -s "$work/book.aux" "$work/book.aux.before" && cmp -s "$work/book.toc" "$work/book.toc.before" && break
done
if grep -n 'Missing character' "$work/book.log" >&2; then
  echo "pdf.sh: the $lang edition uses characters no font has" >&2
  exit 1
fi
# every \hyperlink must reach a \hypertarget (xdvipdfmx does not complain)
grep -o '\\hyperlink{[^}]*}' "$work/book.tex" | sed 's/.*{\(.*\)}/\1/' | sort -u > "$work/links"
grep -o '\\hypertarget{[^}]*}' "$work/book.tex" | sed 's/.*{\(.*\)}/\1/' | sort -u > "$work/targets"
dead=$(comm -23 "$work/links" "$work/targets")
if [ -n "$dead" ]; then
  echo "pdf.sh: the $lang edition links to anchors that do not exist:" $dead >&2
  exit 1
fi
# Typesetting: lines into the margin, chunk headers cut off from their code
# (tools/check-pdf.sh). strict=0 only reports them; strict=1 (or
# PDF_CHECK_STRICT=1 in the environment) makes them fail the build.
strict=${PDF_CHECK_STRICT:-1}
tools/check-pdf.sh "$lang" "$work" "$strict"
cp "$work/book.pdf" "$out"
