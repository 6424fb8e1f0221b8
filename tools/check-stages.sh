#!/bin/sh
# The stage rule of llm/error.h, checked over the library's sources: every
# stage a source names is <module>.<verb> after a public function. For a
# function llm_<type>_<verb>, where llm_<type> is a type of the library, the
# stage is <type>.<verb> (tensor.offset, tape.matmul, linear.forward); for
# any other function llm_<name> declared in llm/<header>.h it is
# <header>.<name> (softmax.log_softmax, data.batch_count).
# A dotted lowercase string literal in tangled/src is taken for a stage,
# except a header's name (tape_op.h) and a parameter's (token_embedding.weight,
# final_norm.gain, *.bias); the check fails on one that no public function
# gives, and prints it.
# Usage: tools/check-stages.sh [INCLUDE_DIR [SRC_DIR]]
set -eu
inc=${1:-tangled/include/llm}
src=${2:-tangled/src}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the library's types: llm_tensor, llm_tape, llm_linear, ...
sed -n 's/^typedef \(struct\|enum\) llm_\([a-z0-9_]*\).*/\2/p' "$inc"/*.h | sort -u > "$tmp/types"

# every public function that can refuse, with the stage the rule gives it
for h in "$inc"/*.h; do
  module=$(basename "$h" .h)
  [ "$module" = evidence ] && continue
  sed -n 's/^[a-z_]* \{0,1\}[a-z_]* \**llm_\([a-z0-9_]*\)(.*/\1/p' "$h" | while read -r name; do
    awk -v name="$name" -v module="$module" '
      { if (index(name, $0 "_") == 1 && length($0) > length(best)) best = $0 }
      END {
        if (best != "") print best "." substr(name, length(best) + 2)
        else print module "." name
      }' "$tmp/types"
  done
done | sort -u > "$tmp/allowed"

# the stages the sources name
grep -oh '"[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*"' "$src"/*.c "$src"/*.h | tr -d '"' |
  grep -v '\.\(h\|weight\|gain\|bias\)$' | sort -u > "$tmp/named"

bad=$(comm -23 "$tmp/named" "$tmp/allowed")
if [ -n "$bad" ]; then
  echo "stages: these stages name no public function (see the rule in llm/error.h):"
  for s in $bad; do
    printf '  %s in %s\n' "$s" "$(grep -l "\"$s\"" "$src"/*.c "$src"/*.h | tr '\n' ' ')"
  done
  exit 1
fi
echo "stages: $(wc -l < "$tmp/named") stage names, each a public function's"
