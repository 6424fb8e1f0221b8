# site-keys.awk -- what the browser check of one page depends on, written as
# text to KEYS/<page with / as __>, and on standard output a line
# "PAGE FILE" a page, FILE being that file's name in KEYS (and in the
# stamps); tools/check-site.sh opens again only the pages whose text
# differs from the one stamped when they last passed.
#
# A page's check reads its own bytes, the files it loads (style sheets,
# scripts, figures: their bytes), the files it links to (a PDF: that it
# exists; a page: its signature, i.e. its anchors, language and kind, which
# is all the link check reads of it) and the checker itself. A search page
# also follows its results to any page, so it depends on every signature.
#
# Usage: awk -v keys=DIR -v tool=HASH -f tools/site-keys.awk SUMS SIGS REFS
#   SUMS  sha256sum lines of every file of the site ("hash  path")
#   SIGS  "page signature" for every page
#   REFS  grep -o -H lines "page:attr=\"value\"" of every page
FILENAME == ARGV[1] { sum[$2] = $1; next }
FILENAME == ARGV[2] { sig[$1] = $2; order[++npages] = $1; next }
{
  colon = index($0, ":")
  page = substr($0, 1, colon - 1)
  value = substr($0, colon + 1)
  sub(/^[a-z]+="/, "", value); sub(/"$/, "", value)
  if (value ~ /^(https?|mailto|data):/) next
  sub(/[#?].*/, "", value)
  if (value == "") next
  target = resolve(page, value)
  if ((page, target) in seen) next
  seen[page, target] = 1
  deps[page] = deps[page] depend(target) "\n"
}

# A link's target, relative to the site's root.
function resolve(page, value,    n, i, k, part, out, path) {
  path = page; sub(/[^\/]*$/, "", path)
  n = split(path value, part, "/")
  k = 0
  for (i = 1; i <= n; i++) {
    if (part[i] == "" || part[i] == ".") continue
    if (part[i] == "..") { if (k > 0) k--; continue }
    out[++k] = part[i]
  }
  path = ""
  for (i = 1; i <= k; i++) path = path (i > 1 ? "/" : "") out[i]
  return path
}

function depend(target) {
  if (target ~ /\.html$/) return "page " target " " (target in sig ? sig[target] : "absent")
  if (target ~ /\.pdf$/) return "file " target " " (target in sum ? "present" : "absent")
  return "file " target " " (target in sum ? sum[target] : "absent")
}

END {
  for (i = 1; i <= npages; i++) {
    page = order[i]
    name = page; gsub(/\//, "__", name)
    print page, name
    file = keys "/" name
    printf "checker %s\nitself %s\n%s", tool, sum[page], deps[page] > file
    if (page ~ /(^|\/)search\.html$/)
      for (j = 1; j <= npages; j++) printf "result %s %s\n", order[j], sig[order[j]] > file
    close(file)
  }
}
