#!/usr/bin/env bash
# CPU cost and profile of one API at saturation, as docs/benchmarks.md measures CPU per order:
# mocks at 0 ms, the API alone on one CPU (taskset -c 1), a closed loop of unique orders from
# `loadtest run` and everything else on the other CPU. Prints the API's CPU µs per order (user,
# system), the harness's (PostgreSQL's process tree, mock-deps, the load generator), and with --flamegraph FILE.svg records `perf record -g` of the API during the measured
# window and folds it with inferno (cargo install inferno).
#
#   scripts/profile-api.sh blocking-api|reactive-api [--orders N] [--clients C] [--flamegraph OUT.svg]
#
# Needs the release binaries (cargo build --release); perf needs root. Stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."

api=${1:?usage: $0 blocking-api|reactive-api [--orders N] [--clients C] [--flamegraph OUT.svg]}
shift
orders=20000
clients=32
svg=""
while [ $# -gt 0 ]; do
    case "$1" in
        --orders) orders=$2; shift 2 ;;
        --clients) clients=$2; shift 2 ;;
        --flamegraph) svg=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
bin=target/release
for b in "$api" mock-deps loadtest pg-ephemeral; do
    [ -x "$bin/$b" ] || { echo "$bin/$b missing: cargo build --release" >&2; exit 1; }
done
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

work=$(mktemp -d /tmp/order-lab-profile.XXXXXX)
pids=()
pg_dir=""
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -z "$pg_dir" ] || "$bin/pg-ephemeral" stop "$pg_dir" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
started=$("$bin/pg-ephemeral" start) # its directory, then its URL
pg_dir=${started%%$'\n'*}
db=${started#*$'\n'}

deps_port=$(free_port)
BIND_ADDR=127.0.0.1:$deps_port SELLER_LATENCY_MS=0 RISK_LATENCY_MS=0 PAY_LATENCY_MS=0 RUST_LOG=warn \
    taskset -c 0 "$bin/mock-deps" >"$work/deps.log" 2>&1 &
pids+=($!)
api_port=$(free_port)
# A closed loop bounds the load itself: no refusal on loop lag (the API is meant to saturate).
MAX_LOOP_LAG_MS=0 DATABASE_URL=$db DEPS_URL=http://127.0.0.1:$deps_port BIND_ADDR=127.0.0.1:$api_port \
    REQUEST_HASH_KEY=profile-request-hash-key RUST_LOG=warn \
    taskset -c 1 "$bin/$api" >"$work/api.log" 2>&1 &
api_pid=$!
pids+=($api_pid)
deps_pid=${pids[0]}
pg_pid=$(head -1 "$pg_dir/data/postmaster.pid")
for _ in $(seq 1 100); do
    curl -fsS -o /dev/null "http://127.0.0.1:$api_port/ready" 2>/dev/null && break
    sleep 0.1
done
curl -fsS -o /dev/null "http://127.0.0.1:$api_port/ready" || { cat "$work/api.log" >&2; exit 1; }

load() {
    taskset -c 0 "$bin/loadtest" run --target "http://127.0.0.1:$api_port" \
        --profile "closed-$clients-$1" --out "$work/$2.json" >"$work/$2.log" 2>&1
}
cpu_ticks() { awk '{print $14, $15}' "/proc/$api_pid/stat"; }
# utime+stime of a process, plus what it reaped (cutime+cstime) and its live children's: a
# PostgreSQL backend that exits moves its CPU into the postmaster's cutime.
tree_ticks() {
    local total
    total=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat")
    for c in $(pgrep -P "$1"); do
        total=$((total + $(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || echo 0)))
    done
    echo "$total"
}

order_count() { psql -qtA "$db" -c 'SELECT count(*) FROM orders'; }

psql -qtA "$db" -c 'CREATE EXTENSION IF NOT EXISTS pg_stat_statements' >/dev/null
load $((orders / 5)) warmup
psql -qtA "$db" -c 'SELECT pg_stat_statements_reset()' >/dev/null
sessions0=$(psql -qtA "$db" -c 'SELECT sum(sessions) FROM pg_stat_database')
read -r u0 s0 < <(cpu_ticks)
n0=$(order_count)
pg0=$(tree_ticks "$pg_pid")
deps0=$(tree_ticks "$deps_pid")
# The load generator runs as this shell's child: `times` (in this shell, not a subshell, whose
# counters start at zero) gives the CPU of the children it reaped.
times >"$work/times0"
gen0=$(tail -1 "$work/times0")
if [ -n "$svg" ]; then
    perf record -F 499 -g --call-graph dwarf,16384 -p "$api_pid" -o "$work/perf.data" \
        >"$work/perf.log" 2>&1 &
    perf_pid=$!
    sleep 1
fi
start=$(date +%s.%N)
load "$orders" measured
end=$(date +%s.%N)
read -r u1 s1 < <(cpu_ticks)
pg1=$(tree_ticks "$pg_pid")
deps1=$(tree_ticks "$deps_pid")
times >"$work/times1"
gen1=$(tail -1 "$work/times1")
n1=$(order_count)
sessions1=$(psql -qtA "$db" -c 'SELECT sum(sessions) FROM pg_stat_database')
if [ -n "$svg" ]; then
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
fi

hz=$(getconf CLK_TCK)
python3 - "$api" "$u0" "$s0" "$u1" "$s1" "$n0" "$n1" "$hz" "$start" "$end" "$clients" \
    "$pg0" "$pg1" "$deps0" "$deps1" "$gen0" "$gen1" <<'EOF'
import re, sys
api, u0, s0, u1, s1, n0, n1, hz, start, end, clients, pg0, pg1, deps0, deps1, gen0, gen1 = sys.argv[1:]
n = int(n1) - int(n0)
us = lambda a, b: (int(b) - int(a)) * 1e6 / int(hz) / max(n, 1)
user, system = us(u0, u1), us(s0, s1)
secs = float(end) - float(start)
print(f"{api}: {n} orders in {secs:.1f} s ({n / secs:.0f}/s, {clients} clients, mocks 0 ms, API on CPU 1)")
print(f"{api}: CPU per order {user + system:.0f} µs (user {user:.0f}, system {system:.0f})")
# `times` prints the children's "user system" as e.g. 0m1.230s 0m0.450s.
secs_of = lambda t: sum(int(m) * 60 + float(s) for m, s in re.findall(r"(\d+)m([\d.]+)s", t))
gen_us = (secs_of(gen1) - secs_of(gen0)) * 1e6 / max(n, 1)
print(f"harness per order: PostgreSQL {us(pg0, pg1):.0f} µs, mock-deps {us(deps0, deps1):.0f} µs, "
      f"load generator {gen_us:.0f} µs (all on CPU 0)")
EOF

echo "PostgreSQL during the measured window: $((sessions1 - sessions0)) new sessions; statements by total time:"
psql -q "$db" -c "SELECT calls, round(total_exec_time::numeric, 1) AS total_ms,
    round((total_exec_time / calls)::numeric, 3) AS mean_ms, left(regexp_replace(query, '\s+', ' ', 'g'), 70) AS query
    FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 8"

if [ -n "$svg" ]; then
    command -v inferno-flamegraph >/dev/null || { echo "inferno missing: cargo install inferno" >&2; exit 1; }
    folded=${svg%.svg}.folded
    perf script -i "$work/perf.data" 2>/dev/null | inferno-collapse-perf >"$folded"
    inferno-flamegraph --minwidth 0.3 --title "$api, mocks at 0 ms, closed-$clients-$orders" <"$folded" >"$svg"
    echo "flamegraph: $svg (folded stacks: $folded, not kept in git)"
fi
