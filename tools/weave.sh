#!/bin/sh
# Weaves all chapters into pandoc Markdown, one file per chapter, edition
# (en, ru) and kind (html: one page per chapter; pdf: one book), through
# noweb's own front end and cross-referencers and the book's back end.
#
# Usage: tools/weave.sh OUTDIR CHAPTER.nw...
# Writes OUTDIR/{html,pdf}-{en,ru}/*.md; a file whose text did not change
# keeps its timestamp.
set -eu
out=$1
shift
lib=/usr/lib/noweb
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$lib/markup" "$@" | "$lib/autodefs.c" | "$lib/finduses" | "$lib/noidx" > "$tmp/markup"
# The four back-end runs are independent: two at a time, each machine core
# taking one. The html runs (which also highlight the code) take longer
# than the pdf runs, so the two html runs go together, then the two pdf
# runs, and neither pair waits long for its slower half.
weave_one() {
  mkdir -p "$tmp/$1-$2" "$out/$1-$2"
  awk -f tools/nwpandoc.awk -v mode="$1" -v lang="$2" -v out="$tmp/$1-$2" \
    "$tmp/markup" "$tmp/markup"
  for f in "$tmp/$1-$2"/*.md; do
    cpif "$out/$1-$2/$(basename "$f")" < "$f"
  done
}
for kind in html pdf; do
  weave_one "$kind" en & en=$!
  weave_one "$kind" ru & ru=$!
  wait "$en" || exit 1
  wait "$ru" || exit 1
done
