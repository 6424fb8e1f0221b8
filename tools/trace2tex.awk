# trace2tex.awk -- a chapter's trace as pgfkeys, for its figures.
#
# Usage: awk -f tools/trace2tex.awk build/traces/chNN-slug.trace > DATA.tex
#   v KEY VALUE        -> \pgfkeyssetvalue{/trace/KEY}{VALUE}
#   r TABLE CELL...    -> \pgfkeyssetvalue{/trace/TABLE/I/J}{CELL} (I, J from 0)
#                         and /trace/TABLE/rows, /trace/TABLE/cols
# TeX's special characters in values are escaped; figures use
# \pgfkeysvalueof{/trace/KEY}.
BEGIN { FS = "\t" }
function tex(s) {
  gsub(/\\/, "\\textbackslash{}", s)
  gsub(/[#$%&_{}]/, "\\\\&", s)
  gsub(/~/, "\\textasciitilde{}", s)
  gsub(/\^/, "\\textasciicircum{}", s)
  return s
}
/^#/ || /^$/ { next }
$1 == "v" { printf "\\pgfkeyssetvalue{/trace/%s}{%s}\n", $2, tex($3); next }
$1 == "r" {
  i = rows[$2]++
  for (j = 3; j <= NF; j++)
    printf "\\pgfkeyssetvalue{/trace/%s/%d/%d}{%s}\n", $2, i, j - 3, tex($j)
  cols[$2] = NF - 2
  next
}
{ printf "trace2tex: %s:%d: not a trace line\n", FILENAME, FNR > "/dev/stderr"; exit 1 }
END {
  for (t in rows) {
    printf "\\pgfkeyssetvalue{/trace/%s/rows}{%d}\n", t, rows[t]
    printf "\\pgfkeyssetvalue{/trace/%s/cols}{%d}\n", t, cols[t]
  }
}
