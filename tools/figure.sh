#!/bin/sh
# Compiles one figure for one edition: figures/chNN-name.tex -> PDF (print)
# and XDV (for the web's SVG, see the Makefile).
#
# Usage: tools/figure.sh LANG figures/chNN-name.tex OUT.pdf BUILDDIR
# The figure sees \booklang (en or ru), the book's figure preamble and its
# chapter's trace data ($BUILDDIR/figures/data/chNN-*.tex). XeLaTeX stops at
# the first error, and a character missing from a font is an error.
set -eu
lang=$1 src=$2 pdf=$3 b=$4
name=$(basename "$src" .tex)
chap=${name%%-*}
data=$(ls "$b"/figures/data/"$chap"-*.tex 2>/dev/null | head -1)
[ -n "$data" ] || { echo "figure.sh: no trace data for $name ($b/figures/data/$chap-*.tex)" >&2; exit 1; }
work="$b/figures/work/$lang/$name"
mkdir -p "$work" "$(dirname "$pdf")"
top=$(pwd)
case $data in /*) ;; *) data="$top/$data" ;; esac
if ! (cd "$work" && TEXINPUTS="$top/book:$top/figures:" xelatex -interaction=nonstopmode -halt-on-error \
      -jobname="$name" "\\def\\booklang{$lang}\\def\\tracedata{$data}\\input{$top/$src}" > build.log 2>&1); then
  echo "figure.sh: $src ($lang) failed:" >&2
  grep -A3 '^!' "$work/build.log" >&2 || tail -20 "$work/build.log" >&2
  exit 1
fi
# The web's copy: the same figure through TikZ's dvisvgm driver to XDV, which
# dvisvgm turns into an SVG whose text stays text (fonts embedded as WOFF2)
# -- OUT.xdv next to OUT.pdf, written first, so never older than it.
if ! (cd "$work" && TEXINPUTS="$top/book:$top/figures:" xelatex -no-pdf -interaction=nonstopmode -halt-on-error \
      -jobname="$name-svg" "\\def\\pgfsysdriver{pgfsys-dvisvgm.def}\\def\\booklang{$lang}\\def\\tracedata{$data}\\input{$top/$src}" \
      > build-svg.log 2>&1); then
  echo "figure.sh: $src ($lang, for SVG) failed:" >&2
  grep -A3 '^!' "$work/build-svg.log" >&2 || tail -20 "$work/build-svg.log" >&2
  exit 1
fi
cp "$work/$name-svg.xdv" "${pdf%.pdf}.xdv"
cp "$work/$name.pdf" "$pdf"
