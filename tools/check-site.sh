#!/bin/sh
# Opens the woven site from disk in headless Chromium and runs
# tools/check-site.js over every page; fails on any problem it reports.
#
# Usage: tools/check-site.sh build/html
set -eu
html=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pages=$(cd "$html" && find . -name '*.html' ! -name check.html | sed 's|^\./||' | sort)
{
  printf 'window.PAGES = [\n'
  for p in $pages; do printf '  "%s",\n' "$p"; done
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
! grep -q '^FAIL' "$work/result"
