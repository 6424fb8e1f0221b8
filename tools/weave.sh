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
for mode in html pdf; do
  for lang in en ru; do
    mkdir -p "$tmp/$mode-$lang" "$out/$mode-$lang"
    awk -f tools/nwpandoc.awk -v mode="$mode" -v lang="$lang" -v out="$tmp/$mode-$lang" \
      "$tmp/markup" "$tmp/markup"
    for f in "$tmp/$mode-$lang"/*.md; do
      cpif "$out/$mode-$lang/$(basename "$f")" < "$f"
    done
  done
done
