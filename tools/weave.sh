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
# The four back-end runs are independent: two at a time (one per edition's
# html and pdf), each machine core taking one.
weave_one() {
  mkdir -p "$tmp/$1-$2" "$out/$1-$2"
  awk -f tools/nwpandoc.awk -v mode="$1" -v lang="$2" -v out="$tmp/$1-$2" \
    "$tmp/markup" "$tmp/markup"
  for f in "$tmp/$1-$2"/*.md; do
    cpif "$out/$1-$2/$(basename "$f")" < "$f"
  done
}
for lang in en ru; do
  weave_one html "$lang" & html=$!
  weave_one pdf "$lang" & pdf=$!
  wait "$html" || exit 1
  wait "$pdf" || exit 1
done
