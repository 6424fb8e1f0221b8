#!/bin/sh
# Fails, naming each file, when tangled/ is not what the chapters produce.
#
# Usage: tools/check-tangle.sh SCRATCHDIR CHAPTER.nw...
set -eu
scratch=$1
shift
rm -rf "$scratch"
mkdir -p "$scratch"
tools/tangle.sh "$scratch" "$@"
status=0
for f in $(cd "$scratch" && find . -type f | sort); do
  f=${f#./}
  if [ ! -f "tangled/$f" ]; then
    echo "tangle drift: tangled/$f is missing (the chapters define it); run make tangle" >&2
    status=1
  elif ! cmp -s "$scratch/$f" "tangled/$f"; then
    echo "tangle drift: tangled/$f differs from what chapters/ produce; run make tangle" >&2
    diff -u "tangled/$f" "$scratch/$f" | head -20 >&2 || true
    status=1
  fi
done
for f in $(cd tangled && find . -type f | sort); do
  f=${f#./}
  if [ ! -f "$scratch/$f" ]; then
    echo "tangle drift: tangled/$f is defined by no chapter; remove it or run make tangle" >&2
    status=1
  fi
done
exit $status
