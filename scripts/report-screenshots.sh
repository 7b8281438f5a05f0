#!/usr/bin/env bash
# Screenshots of a report page as a reader sees it: headless Chromium at desktop (1400 px) and
# phone (390 px) widths, the first screen and the whole page, in colour and in greyscale; and a
# check that at neither width the page is wider than the window (no sideways scrolling), nor a
# table's key column (`th.key`: what a reader opens a scenario page for) hidden behind its
# table's own sideways scroll: it fails, naming the widest elements or the hidden column.
#
#   scripts/report-screenshots.sh [PAGE.html] [OUT_DIR]
#   SHOTS=0 scripts/report-screenshots.sh PAGE.html    # the overflow check only
#   scripts/report-screenshots.sh scenarios [OUT_DIR]   # every scenario page, from fixtures
#
# PAGE.html (report.html or a scenario.html) defaults to the fixture report (rendered afresh by the
# report test into target/report-fixture/); OUT_DIR to screenshots/ (ignored by git: screenshots
# never go in); images are named after the page (report-page-390.png, …). `scenarios` renders
# every scenario page (SCENARIO_FIXTURE_OUT=DIR cargo test -p loadtest --lib scenario:: writes
# them: events and batching from the committed results, remotecall, db-latency, overload and
# faults from their test fixtures; lab-report's capacity_table_width test the capacity and
# threads pages of the committed searches) and checks (and shoots) each.
# Needs `chromium` (Debian: apt-get install chromium). Nothing is fetched: the report is
# self-contained, and Chromium runs with networking features off and a throw-away profile.
set -euo pipefail
cd "$(dirname "$0")/.."

report=${1:-}
out=${2:-screenshots}
if [ "$report" = scenarios ]; then
    pages="$PWD/target/scenario-fixture"
    rm -rf "$pages"
    SCENARIO_FIXTURE_OUT="$pages" cargo test -q -p loadtest --lib scenario:: >/dev/null
    SCENARIO_FIXTURE_OUT="$pages" cargo test -q -p lab-report --test capacity_table_width >/dev/null
    status=0
    for page in "$pages"/*-scenario.html; do
        "$0" "$page" "$out" || status=1
    done
    exit $status
fi
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

# The overflow probe: the page with a script that lays it out at the width in the URL's fragment
# and writes what overflows into the DOM, which Chromium then prints. Headless Chromium's window
# is at least 500 px wide when it prints the DOM, so the probe sets the page's own width instead.
# (Only this copy has a script; the page has none. Appended after </html>, which HTML parsers
# move into the body.)
cat >"$tmp/probe.js.html" <<'EOF_PROBE'
<script>addEventListener("load",()=>{const w=+location.hash.slice(1);
document.documentElement.style.width=w+"px";document.documentElement.style.overflow="visible";
const wide=[...document.querySelectorAll("body *")].filter(e=>e.getBoundingClientRect().right>w+1)
.slice(0,5).map(e=>e.tagName.toLowerCase()+(e.id?"#"+e.id:""));
const hidden=[...document.querySelectorAll("th.key")].filter(t=>{const b=t.closest(".scroll");
return b&&t.getBoundingClientRect().right>b.getBoundingClientRect().right+1;}).map(t=>t.textContent);
const m=document.createElement("pre");
m.textContent="overflow="+Math.max(0,document.body.scrollWidth-w)+" hidden="+hidden.length+" widest="+wide.join(",")+" key="+hidden.join(",");
document.body.append(m);});</script>
EOF_PROBE
cat "$report" "$tmp/probe.js.html" >"$tmp/probe.html"

overflow() { # overflow WIDTH: fails when the page is wider than a WIDTH px window
    local dom line
    dom=$(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --user-data-dir="$tmp/profile" --window-size="$1,900" \
        --virtual-time-budget=2000 --dump-dom "file://$tmp/probe.html#$1" 2>/dev/null)
    line=$(grep -o 'overflow=[-0-9]* hidden=[0-9]* widest=[^<]*' <<<"$dom" || echo "overflow=? (the probe did not run)")
    if [ "$(cut -d' ' -f1-2 <<<"$line")" != "overflow=0 hidden=0" ]; then
        echo "$(basename "$report") at $1 px is wider than the window or hides a key column: $line" >&2
        return 1
    fi
    echo "$(basename "$report") at $1 px: no horizontal overflow, no key column behind a scroll"
}

name=$(basename "$report" .html)
status=0
for width in 1400 390; do
    overflow "$width" || status=1
    [ "${SHOTS:-1}" = 0 ] && continue
    # First screen: what a reader sees before scrolling (a laptop, a phone).
    height=$([ "$width" = 390 ] && echo 844 || echo 900)
    shot colour.html "$width" "$height" "$out/$name-first-screen-$width.png"
    shot grey.html "$width" "$height" "$out/$name-first-screen-$width-grey.png"
    # The whole page (tall window; the rest of the image stays white).
    shot colour.html "$width" 16000 "$out/$name-page-$width.png"
    shot grey.html "$width" 16000 "$out/$name-page-$width-grey.png"
done
exit $status
