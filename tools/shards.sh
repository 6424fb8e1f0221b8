#!/bin/sh
# Runs a test program as N processes at once, each on its share of the
# suites (the program takes K/N, see tests/check_main.c), and fails if any
# share fails. Each share's output is printed whole, one after the other.
#
# Usage: tools/shards.sh N COMMAND [ARG...]
set -eu
n=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
k=0
while [ "$k" -lt "$n" ]; do
  ( "$@" "$k/$n" > "$tmp/$k.out" 2>&1; echo $? > "$tmp/$k.rc" ) &
  k=$((k + 1))
done
wait
status=0
k=0
while [ "$k" -lt "$n" ]; do
  cat "$tmp/$k.out"
  [ "$(cat "$tmp/$k.rc")" = 0 ] || status=1
  k=$((k + 1))
done
exit $status
