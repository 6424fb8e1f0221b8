#!/bin/sh
# Mutation testing: applies each mutant of a list to the library, one at a
# time, rebuilds the unit tests in a build directory of their own and runs
# them; a mutant is killed when the tests fail (or crash, or time out).
# Prints the survivors and the score. Not part of make check.
#
# Usage: tools/mutate.sh [LIST]   (default tools/mutants.txt)
# A list line is: FILE<TAB>FROM<TAB>TO<TAB>WHY, FILE under tangled/src; FROM
# must occur exactly once in FILE. Lines starting with # are comments.
# The sources are restored (with their times) after every mutant, also
# when the script is interrupted.
set -u
LIST=${1:-tools/mutants.txt}
B=build/mutate
TAB=$(printf '\t')
backup=""
# The mutated object goes too, so the next build compiles the restored file.
restore() {
  [ -n "$backup" ] || return 0
  cp -p "$backup" "$target" && rm -f "$backup" "$B/obj/$(basename "$target" .c).o"
  backup=""
}
trap 'restore; exit 2' INT TERM
trap 'restore' EXIT

make -s --no-print-directory B=$B $B/bin/unit-tests >/dev/null || {
  echo "mutate: the unmutated tests do not build"; exit 2; }
$B/bin/unit-tests >/dev/null 2>&1 || { echo "mutate: the unmutated tests fail"; exit 2; }

total=0; killed=0; survivors=""; invalid=""
while IFS="$TAB" read -r file from to why; do
  case "$file" in ''|'#'*) continue ;; esac
  target=tangled/src/$file
  n=$(grep -cF -- "$from" "$target" || true)
  if [ "$n" != 1 ]; then
    echo "mutate: '$from' occurs $n times in $target (fix the list)"; exit 2
  fi
  total=$((total + 1))
  backup=$(mktemp)
  cp -p "$target" "$backup"
  FROM="$from" TO="$to" perl -0pi -e 's/\Q$ENV{FROM}\E/$ENV{TO}/' "$target"
  if ! make -s --no-print-directory B=$B $B/bin/unit-tests >/dev/null 2>&1; then
    verdict="INVALID"
  elif CK_DEFAULT_TIMEOUT=10 timeout 300 $B/bin/unit-tests >/dev/null 2>&1; then
    verdict="SURVIVED"
    survivors="$survivors
  $file: '$from' -> '$to' ($why)"
  else
    verdict="killed"
  fi
  case $verdict in
    killed) killed=$((killed + 1)) ;;
    INVALID) invalid="$invalid
  $file: '$from' -> '$to' does not compile" ;;
  esac
  printf 'mutant %2d %-8s %s: %s\n' "$total" "$verdict" "$file" "$why"
  restore
done < "$LIST"
# the library as it is, rebuilt, so that build/mutate is not left mutated
make -s --no-print-directory B=$B $B/bin/unit-tests >/dev/null 2>&1

[ -n "$survivors" ] && echo "survivors:$survivors"
[ -n "$invalid" ] && echo "invalid (fix the list; counted as not killed):$invalid"
echo "mutate: $killed of $total mutants killed ($((total > 0 ? 100 * killed / total : 0))%)"
[ "$killed" = "$total" ]
