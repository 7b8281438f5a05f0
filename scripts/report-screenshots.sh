#!/usr/bin/env bash
# Screenshots of a report.html as a reader sees it: headless Chromium at desktop (1400 px) and
# phone (390 px) widths, the first screen and the whole page, in colour and in greyscale.
#
#   scripts/report-screenshots.sh [REPORT.html] [OUT_DIR]
#
# REPORT.html defaults to the fixture report (rendered afresh by the report test into
# target/report-fixture/); OUT_DIR to screenshots/ (ignored by git: screenshots never go in).
# Needs `chromium` (Debian: apt-get install chromium). Nothing is fetched: the report is
# self-contained, and Chromium runs with networking features off and a throw-away profile.
set -euo pipefail
cd "$(dirname "$0")/.."

report=${1:-}
out=${2:-screenshots}
if [ -z "$report" ]; then
    # The test writes the fixture report when REPORT_FIXTURE_OUT is set.
    REPORT_FIXTURE_OUT="$PWD/target/report-fixture" \
        cargo test -q -p lab-report --test report_verdict fixture_report_renders -- --exact >/dev/null
    report=target/report-fixture/report.html
fi
[ -f "$report" ] || { echo "no such report: $report" >&2; exit 1; }
command -v chromium >/dev/null || { echo "chromium not found (apt-get install chromium)" >&2; exit 1; }
mkdir -p "$out"

tmp=$(mktemp -d /tmp/report-shots.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp "$report" "$tmp/colour.html"
# The same page drawn in greyscale: can every line still be told apart?
sed 's|</head>|<style>html{filter:grayscale(1)}</style></head>|' "$report" >"$tmp/grey.html"

shot() { # shot PAGE WIDTH HEIGHT OUTPUT
    chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --user-data-dir="$tmp/profile" \
        --window-size="$2,$3" --screenshot="$4" "file://$tmp/$1" >/dev/null 2>&1
    echo "$4"
}

for width in 1400 390; do
    # First screen: what a reader sees before scrolling (a laptop, a phone).
    height=$([ "$width" = 390 ] && echo 844 || echo 900)
    shot colour.html "$width" "$height" "$out/first-screen-$width.png"
    shot grey.html "$width" "$height" "$out/first-screen-$width-grey.png"
    # The whole page (tall window; the rest of the image stays white).
    shot colour.html "$width" 16000 "$out/page-$width.png"
    shot grey.html "$width" 16000 "$out/page-$width-grey.png"
done
