#!/bin/sh
# Checks the typesetting of one edition's PDF (run by tools/pdf.sh):
#   - no line runs into the margin by more than PDF_OVERFULL_PT points
#     (an overfull \hbox in XeLaTeX's log; default 5);
#   - no code chunk's header line ⟨…⟩≡ is the last line of a page, cut off
#     from its code (pdftotext, page by page).
# It names each problem with its page (and, for an overfull line, the line
# of book.tex and the chapter around it).
#
# Usage: tools/check-pdf.sh LANG WORKDIR [strict [WHAT]]
#   WORKDIR holds book.tex, book.log and book.pdf. With "strict" (or
#   PDF_CHECK_STRICT=1) any problem fails; otherwise it only reports. WHAT
#   names what was typeset (default: the LANG edition).
set -eu
lang=$1 work=$2
strict=${3:-${PDF_CHECK_STRICT:-0}}
what=${4:-the $lang edition}
[ "$strict" = strict ] && strict=1
limit=${PDF_OVERFULL_PT:-5}

# Overfull lines: XeLaTeX's log says "Overfull \hbox (Xpt too wide) ... at
# lines A--B" (or "detected at line A"); the page is the one being built when
# the next "[N" shipout appears, the chapter the last \hypertarget{chNN-...}
# of book.tex above line A.
awk -v limit="$limit" -v tex="$work/book.tex" '
  BEGIN {
    while ((getline l < tex) > 0) {
      n++
      if (match(l, /\\hypertarget\{ch[0-9][0-9]-[^}-]*[^}]*\}\{\}/)) {
        c = substr(l, RSTART + 13, RLENGTH - 16); if (c !~ /--/) chap_at[n] = c
      }
    }
    cur = "front matter"
    for (i = 1; i <= n; i++) { if (i in chap_at) cur = chap_at[i]; chap[i] = cur }
  }
  /^Overfull \\hbox/ {
    w = $3; gsub(/[()pt]/, "", w); total++
    if (w + 0 > limit + 0) {
      line = $0; sub(/.*lines? /, "", line); sub(/--.*/, "", line)
      big++; pend[big] = sprintf("%.1fpt over, book.tex line %d (%s)", w, line, chap[line + 0])
      npend++
    }
  }
  {
    # every page shipped out is "[N" in the log; the overfull lines before it
    # are on page N
    s = $0
    while (match(s, /\[[0-9]+[] \n]|\[[0-9]+$/)) {
      p = substr(s, RSTART + 1, RLENGTH - 1); gsub(/[] ]/, "", p)
      for (k = big - npend + 1; k <= big; k++) print "  page " p ": " pend[k]
      npend = 0
      s = substr(s, RSTART + RLENGTH)
    }
  }
  END {
    for (k = big - npend + 1; k <= big; k++) print "  page ?: " pend[k]
    printf "overfull %d %d\n", total + 0, big + 0
  }' "$work/book.log" > "$work/overfull.txt"

# Stranded chunk headers: the last line of a page (not counting its page
# number) ends a chunk header.
pdftotext -layout "$work/book.pdf" "$work/book.txt"
awk 'BEGIN { RS = "\f" }
  {
    n = split($0, L, "\n"); last = ""
    for (i = n; i > 0; i--) {
      if (L[i] ~ /^[ \t]*$/ || L[i] ~ /^[ \t]*[0-9ivxlcdm]+[ \t]*$/) continue
      last = L[i]; break
    }
    if (last ~ /⟩\+?≡[ \t]*$/) { c++; sub(/^[ \t]+/, "", last); print "  page " NR ": " last }
  }
  END { printf "stranded %d\n", c + 0 }' "$work/book.txt" > "$work/stranded.txt"

set -- $(tail -1 "$work/overfull.txt")
over_all=$2 over_big=$3
set -- $(tail -1 "$work/stranded.txt")
stranded=$2
echo "check-pdf: $what has $over_all overfull lines, $over_big over ${limit}pt; $stranded chunk headers cut off from their code"
status=0
if [ "$over_big" -gt 0 ]; then
  echo "check-pdf: lines over ${limit}pt into the margin ($what):" >&2
  sed '$d' "$work/overfull.txt" >&2
  status=1
fi
if [ "$stranded" -gt 0 ]; then
  echo "check-pdf: chunk headers at the foot of a page ($what):" >&2
  sed '$d' "$work/stranded.txt" >&2
  status=1
fi
if [ "$status" -ne 0 ] && [ "$strict" != 1 ]; then
  echo "check-pdf: report only (PDF_CHECK_STRICT=1, or strict=1 in tools/pdf.sh, makes these fail)" >&2
  status=0
fi
exit $status
