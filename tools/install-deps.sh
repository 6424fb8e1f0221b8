#!/bin/sh
# Installs the Debian packages the book needs, or says how to.
#
# Usage: tools/install-deps.sh
# Exit status: 0 when every package is present (after installing the missing
# ones as root); 1 when packages are missing and we are not root, after
# printing the one apt-get line that would install them.
set -eu

PACKAGES="gcc clang make pkg-config check valgrind noweb pandoc
texlive-xetex texlive-latex-recommended texlive-latex-extra texlive-pictures
texlive-lang-cyrillic texlive-lang-chinese texlive-fonts-recommended lmodern
fonts-dejavu-core fonts-dejavu-extra fonts-noto-cjk dvisvgm ghostscript
poppler-utils chromium"

missing=""
for p in $PACKAGES; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  case "$status" in
    *" installed") ;;
    *) missing="$missing $p" ;;
  esac
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ]; then
  echo "install-deps: installing:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing
  exit 0
fi

echo "install-deps: missing Debian packages:$missing" >&2
echo "install-deps: run this once as root, then run make again:" >&2
echo "  apt-get install -y --no-install-recommends$missing" >&2
exit 1
