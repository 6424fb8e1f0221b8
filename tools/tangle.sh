#!/bin/sh
# Tangles every root chunk named tangled/... from the chapters into OUTDIR.
#
# Usage: tools/tangle.sh OUTDIR CHAPTER.nw...
# All chapters are tangled together, so a chunk begun in one chapter may be
# continued in a later one. Each file is written through cpif, so a file
# whose text did not change keeps its timestamp and make rebuilds nothing
# that depends on it.
set -eu
out=$1
shift
# noweb's front end reads the chapters once; its tangler (what notangle
# runs) then writes each root from that one markup.
lib=/usr/lib/noweb
markup=$(mktemp)
trap 'rm -f "$markup"' EXIT
"$lib/markup" "$@" > "$markup"
sed -n 's/^@defn \(tangled\/.*\)$/\1/p' "$markup" | sort -u |
while IFS= read -r root; do
  dest="$out/${root#tangled/}"
  mkdir -p "$(dirname "$dest")"
  "$lib/nt" -R"$root" < "$markup" | cpif "$dest"
done
