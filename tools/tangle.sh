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
noroots "$@" | sed -n 's/^<<\(tangled\/.*\)>>$/\1/p' | sort -u |
while IFS= read -r root; do
  dest="$out/${root#tangled/}"
  mkdir -p "$(dirname "$dest")"
  notangle -R"$root" "$@" | cpif "$dest"
done
