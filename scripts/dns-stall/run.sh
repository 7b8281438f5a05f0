#!/usr/bin/env bash
# blocking-api under a name server that stops answering: one lab run (ramp-100 at half length,
# 200 threads) whose DEPS_URL names mock-deps by a host name, resolved by a name server of our own
# (responder.py, on 127.0.0.53:53, glibc's `timeout:5 attempts:2` as in a container) that drops
# every query for STALL_S seconds [20] from WAIT_S seconds [4] after the API's first lookup, i.e.
# from the end of the warm-up into the measured run. What a stalled name server costs each client:
# docs/containers.md. Needs root (a mount namespace gives the lab its own /etc/resolv.conf) and
# the release build; the name server's log is written beside the report.
#
# usage: scripts/dns-stall/run.sh OUT [lab options, e.g. --blocking-client reqwest-blocking]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1
shift
bin=${BIN_DIR:-target/release}
here=$(mktemp -d)
trap 'rm -f "$here/stall"; kill $(jobs -p) 2>/dev/null; pkill -f "responder.py 127.0.0.53" || true' EXIT
printf 'nameserver 127.0.0.53\noptions timeout:5 attempts:2\n' >"$here/resolv.conf"
mkdir -p "$(dirname "$out")"
python3 scripts/dns-stall/responder.py 127.0.0.53 "$here/stall" >"$out.names.log" 2>&1 &
"$bin/mock-deps" --bind-addr 127.0.0.1:19090 >"$out.mock.log" 2>&1 &
sleep 1
(
    # The API's first lookup: the first query 10 s or more after the lab's own at its start.
    until awk '$1 >= 10 {found = 1} END {exit !found}' "$out.names.log"; do sleep 0.2; done
    sleep "${WAIT_S:-4}"
    touch "$here/stall"
    sleep "${STALL_S:-20}"
    rm -f "$here/stall"
) &
unshare -m sh -c "mount --bind '$here/resolv.conf' /etc/resolv.conf && exec '$bin/loadtest' lab \
    --apis blocking-api --deps-url http://mock-deps:19090 --profile ramp-100 \
    --duration-scale 0.5 --no-progress --out '$out' $*"
echo "queries answered: $(grep -c answered "$out.names.log"), dropped: $(grep -c DROPPED "$out.names.log")"
