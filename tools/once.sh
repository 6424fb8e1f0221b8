#!/bin/sh
# Runs a command again only when its inputs changed: the author's loop.
#
# Usage: tools/once.sh STAMP FILE... -- COMMAND [ARG...]
# The stamp holds a checksum of the FILEs' contents and of the command
# line. When the stamp matches, the command passed before on exactly these
# bytes and is not run again (it is deterministic: the same binary with the
# same arguments gives the same result); otherwise it runs, and the stamp is
# written only when it succeeds. Delete the stamps (or the build directory)
# to run everything.
set -eu
stamp=$1
shift
files=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do files="$files $1"; shift; done
[ $# -gt 0 ] || { echo "once.sh: usage: STAMP FILE... -- COMMAND" >&2; exit 2; }
shift
# shellcheck disable=SC2086
sum=$( { sha256sum $files; printf '%s\n' "$*"; } | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then
  echo "unchanged since it last passed: not run again"
  exit 0
fi
rm -f "$stamp"
"$@"
mkdir -p "$(dirname "$stamp")"
echo "$sum" > "$stamp"
