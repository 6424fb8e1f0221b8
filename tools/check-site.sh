#!/bin/sh
# Opens the woven site from disk in headless Chromium and runs
# tools/check-site.js over its pages; fails on any problem it reports.
#
# Usage: tools/check-site.sh build/html [STAMPS]
#
# With STAMPS (a folder), a page that passed is stamped with what its check
# depended on (tools/site-keys.awk), and the next run opens only the pages
# whose dependencies changed; with no stamps at all, every page is opened.
set -eu
html=$(cd "$1" && pwd)
stamps=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -f "$html/check.html" "$html/check-pages.js" "$html/check-site.js"
pages=$(cd "$html" && find . -name '*.html' | sed 's|^\./||' | sort)
[ -n "$pages" ] || { echo "check-site: no pages in $1" >&2; exit 1; }

# What each page's check depends on.
mkdir -p "$work/keys"
tool=$(cat tools/check-site.js tools/check-site.sh tools/site-keys.awk | sha256sum | cut -c1-64)
(cd "$html" && find . -type f | sed 's|^\./||' | sort | xargs sha256sum) > "$work/sums"
for p in $pages; do
  s=$( { grep -o ' id="[^"]*"' "$html/$p" | sort -u
         grep -o '<html[^>]*>' "$html/$p"
         grep -o '<meta name="page"[^>]*>' "$html/$p"; } | sha256sum | cut -c1-64)
  echo "$p $s"
done > "$work/sigs"
(cd "$html" && grep -o -H '\(href\|src\|action\)="[^"]*"' $pages) > "$work/refs" || true
awk -v keys="$work/keys" -v tool="$tool" -f tools/site-keys.awk "$work/sums" "$work/sigs" "$work/refs" \
  > "$work/names"
printf 'checker %s\n%s\n' "$tool" "$pages" > "$work/keys/site"

# the pages to open: all, or those whose keys differ from their stamps
check=
while read -r p k; do
  if [ -z "$stamps" ] || ! cmp -s "$work/keys/$k" "$stamps/$k"; then check="$check $p"; fi
done < "$work/names"
total=$(echo "$pages" | wc -l)
if [ -z "$check" ] && [ -n "$stamps" ] && cmp -s "$work/keys/site" "$stamps/site"; then
  echo "check-site: all $total pages as they were when they passed"
  exit 0
fi

{
  printf 'window.PAGES = [\n'
  for p in $pages; do printf '  "%s",\n' "$p"; done
  printf '];\nwindow.CHECK = [\n'
  for p in $check; do printf '  "%s",\n' "$p"; done
  printf '];\n'
} > "$html/check-pages.js"
cp tools/check-site.js "$html/check-site.js"
cat > "$html/check.html" <<'HTML'
<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>site check</title></head>
<body><pre id="result">RUNNING</pre>
<script src="check-pages.js"></script><script src="check-site.js"></script></body></html>
HTML
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$work/profile" --allow-file-access-from-files \
  --virtual-time-budget=120000 --dump-dom "file://$html/check.html" \
  > "$work/dom.html" 2> "$work/chromium.log" || true
rm -f "$html/check.html" "$html/check-pages.js" "$html/check-site.js"
sed -n '/<pre id="result">/,/<\/pre>/p' "$work/dom.html" |
  sed 's/.*<pre id="result">//; s/<\/pre>.*//' > "$work/result"
if ! grep -q '^DONE$' "$work/result"; then
  echo "check-site: the browser check did not finish" >&2
  cat "$work/result" >&2
  tail -5 "$work/chromium.log" >&2
  exit 1
fi
grep -v '^DONE$' "$work/result"
if [ -n "$stamps" ]; then
  mkdir -p "$stamps"
  while read -r p k; do
    case " $check " in *" $p "*) ;; *) continue ;; esac     # a page opened this run
    if grep -qF "FAIL $p: " "$work/result"; then rm -f "$stamps/$k"; else cp "$work/keys/$k" "$stamps/$k"; fi
  done < "$work/names"
  if grep -q '^FAIL' "$work/result"; then rm -f "$stamps/site"; else cp "$work/keys/site" "$stamps/site"; fi
fi
! grep -q '^FAIL' "$work/result"
