# trace2tex.awk -- a chapter's trace as pgfkeys, for its figures.
#
# Usage: awk -f tools/trace2tex.awk book/trace-words.txt \
#            build/traces/chNN-slug.trace > DATA.tex
#   v KEY VALUE        -> \pgfkeyssetvalue{/trace/KEY}{VALUE}
#   r TABLE CELL...    -> \pgfkeyssetvalue{/trace/TABLE/I/J}{CELL} (I, J from 0)
#                         and /trace/TABLE/rows, /trace/TABLE/cols
# A value or cell that is one of the words of book/trace-words.txt also gets
# its Russian under /trace-ru/..., which \tv and \tvc take in the Russian
# edition. TeX's special characters in values are escaped; figures use \tv
# and \tvc (book/figure-preamble.tex).
BEGIN { FS = "\t" }
FNR == NR { if (!/^#/ && NF == 2) ru[$1] = $2; next }
function put(key, value) {
  printf "\\pgfkeyssetvalue{/trace/%s}{%s}\n", key, tex(value)
  if (value in ru) printf "\\pgfkeyssetvalue{/trace-ru/%s}{%s}\n", key, tex(ru[value])
}
function tex(s) {
  gsub(/\\/, "\\textbackslash{}", s)
  gsub(/[#$%&_{}]/, "\\\\&", s)
  gsub(/~/, "\\textasciitilde{}", s)
  gsub(/\^/, "\\textasciicircum{}", s)
  return s
}
/^#/ || /^$/ { next }
$1 == "v" { put($2, $3); next }
$1 == "r" {
  i = rows[$2]++
  for (j = 3; j <= NF; j++)
    put($2 "/" i "/" (j - 3), $j)
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
