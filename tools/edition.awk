# edition.awk -- one edition of a bilingual Markdown file.
#
# Usage: awk -f tools/edition.awk -v lang=en book/front.md > front-en.md
# Blocks fenced as ::: {lang=xx} for the other language are left out, with
# everything inside them; the edition's own blocks pass through whole.
skip > 0 {
  if ($0 ~ /^:::+[ \t]*$/) skip--
  else if ($0 ~ /^:::+[ \t]*[^ \t:]/) skip++
  next
}
/^:::+ *\{ *lang="?(en|ru)"? *\}/ && $0 !~ ("lang=\"?" lang) { skip = 1; next }
{ print }
