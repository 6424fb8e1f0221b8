# figure-size.awk -- fails when a figure's smallest text would be too small
# to read in print. Reads one figure's SVG (dvisvgm's output: the width in
# points on the <svg> element, one CSS rule a font size, in points too).
# The PDF sets a figure at its own size, or scales it down to the line
# (LINE points) when it is wider; its smallest text must then still be
# MIN points. A phone shows a figure at 1.25 times its own size (book/
# style.css), 5/3 CSS pixels a point, so text of OWN points or more reads at
# 8 px there (tools/check-site.js measures it).
#
# Usage: awk [-v name=NAME] -f tools/figure-size.awk FIGURE.svg
# (NAME, the figure's name in the messages, is FIGURE.svg by default)
BEGIN { LINE = 470; MIN = 4.5; OWN = 4.8; width = 0; small = 0 }
width == 0 && match($0, /<svg[^>]* width='[0-9.]+pt'/) {
    s = substr($0, RSTART, RLENGTH)
    sub(/.* width='/, "", s); sub(/pt'.*/, "", s)
    width = s + 0
}
{
    line = $0
    while (match(line, /font-size:[0-9.]+px/)) {
        size = substr(line, RSTART + 10, RLENGTH - 12) + 0
        if (small == 0 || size < small) small = size
        line = substr(line, RSTART + RLENGTH)
    }
}
END {
    if (name == "") name = FILENAME
    if (width == 0) { print name ": no width in points" > "/dev/stderr"; exit 1 }
    if (small == 0) exit 0                      # a figure with no text
    if (small < OWN) {
        printf "%s: its smallest text, %.1f pt, is under %.1f pt, too small on a phone\n",
               name, small, OWN > "/dev/stderr"
        exit 1
    }
    scale = width > LINE ? LINE / width : 1
    if (small * scale < MIN) {
        printf "%s: its smallest text, %.1f pt, is %.1f pt in print (the figure is %.0f pt wide, the line %d pt); make it narrower or its text larger (at least %.1f pt)\n",
               name, small, small * scale, width, LINE, MIN > "/dev/stderr"
        exit 1
    }
}
