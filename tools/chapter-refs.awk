# chapter-refs.awk -- references from one chapter to another.
#
# Usage: awk -f tools/chapter-refs.awk chapters/*.nw book/front.md
#
# In prose a chapter is referred to by a link, [chapter 22](ch:22) or
# [главе 22](ch:22#section), which tools/book.lua turns into a link to the
# chapter (or, for a chapter not written yet, into its plain words). This
# check
#   - fails on a reference written as plain words ("chapter 22",
#     «в главе 22») outside a link, and on a link to a chapter the book's
#     plan does not have (outside 1..41);
#   - lists, without failing, the references to chapters that are not
#     written yet (chapters/NN-*.nw missing): they become errors only once
#     every chapter exists (set ALL=1 to make them errors now).
# Code chunks, `inline code` and math are not prose and are not searched.

function problem(msg) { printf "%s:%d: %s\n", FILENAME, FNR, msg; bad = 1 }

BEGIN {
  while (("ls chapters" | getline f) > 0)
    if (f ~ /^[0-9][0-9]-.*\.nw$/) present[substr(f, 1, 2)] = 1
  close("ls chapters")
  last = 41
}

FNR == 1 { in_code = 0; in_prose = 0 }
/^<<.*>>=[ \t]*$/ { in_code = 1; next }
in_code && /^@([ \t]|$)/ { in_code = 0; next }
in_code { next }
/^::: *\{ *lang=(en|ru) *\}/ { in_prose = 1; next }
!in_prose { next }
/^#/ { next }
{
  text = $0
  gsub(/`[^`]*`/, "", text)
  gsub(/\$[^$]*\$/, "", text)
  # links to chapters
  t = text
  while (match(t, /\]\(ch:[0-9]+/)) {
    n = substr(t, RSTART + 5, RLENGTH - 5)
    t = substr(t, RSTART + RLENGTH)
    if (length(n) != 2 || n + 0 < 1 || n + 0 > last)
      problem("a link to chapter " n ": the book has chapters 01 to " last " (write ch:NN with two digits)")
    else if (!(n in present)) {
      ahead[n] = ahead[n] " " FILENAME ":" FNR
      nahead++
    }
  }
  # plain words outside links: drop the links' texts first
  t = text
  gsub(/\[[^]]*\]\([^)]*\)/, "", t)
  if (match(t, /[Cc]hapters? [0-9]+/) || match(t, /(Г|г)лав(а|е|ы|у|ой|ам|ах|ами) [0-9]+/))
    problem("\"" substr(t, RSTART, RLENGTH) "\" is a chapter reference in plain words: write it as a link, [chapter N](ch:NN)")
}

END {
  if (nahead > 0) {
    printf "chapter-refs: %d references to chapters not written yet:", nahead
    for (n in ahead) printf " %s", n
    printf "\n"
    if (ENVIRON["ALL"] == "1") {
      for (n in ahead) printf "  chapter %s:%s\n", n, ahead[n]
      bad = 1
    }
  }
  exit bad
}
