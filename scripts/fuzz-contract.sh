#!/usr/bin/env bash
# The contract checked from outside: schemathesis (an OpenAPI fuzzer, pinned in
# scripts/install-deps.sh's `fuzz` group) drives each API against docs/openapi.json with every
# check on, and this fails on any finding that scripts/fuzz-contract.toml does not accept with a
# reason.
#
#   scripts/fuzz-contract.sh [blocking-api|reactive-api ...]    (default: both, one after the other)
#
# Each API gets a throw-away PostgreSQL of its own (`pg-ephemeral`, as scripts/test.sh) and
# mock-deps with 0 ms latencies: the fuzzer sends thousands of requests and none should wait on a
# mocked second. FUZZ_MAX_TIME (default 75) bounds each API's run in seconds.
#
# Debug binaries: the fuzzer's throughput is bound by its own Python (one worker, tens of
# requests a second), not by the server, and CI builds these very binaries for the tests just
# before (scripts/test.sh), so this step compiles nothing there.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh fuzz
schemathesis=$(scripts/install-deps.sh --schemathesis-path)
cargo build -p blocking-api -p reactive-api -p mock-deps -p testbed --bins
bin=${CARGO_TARGET_DIR:-target}/debug
max_time=${FUZZ_MAX_TIME:-75}
apis=("$@")
[ ${#apis[@]} -gt 0 ] || apis=(blocking-api reactive-api)
reports=${FUZZ_REPORTS:-reports/fuzz-contract}
mkdir -p "$reports"

# What this script started, stopped on any exit: processes by their own pid, clusters by their
# directory.
pids=()
clusters=()
cleanup() {
    for pid in ${pids[@]+"${pids[@]}"}; do
        kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    done
    for dir in ${clusters[@]+"${clusters[@]}"}; do
        "$bin/pg-ephemeral" stop "$dir" || true
    done
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits (at most 30 s) until `url` answers 200, or fails naming `what` and its log.
wait_for() {
    local url=$1 what=$2 log=$3
    for _ in $(seq 300); do
        if curl -fsS -o /dev/null "$url" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "fuzz-contract: $what did not answer $url within 30 s; its log:" >&2
    tail -20 "$log" >&2
    exit 1
}

failed=()
for api in "${apis[@]}"; do
    case $api in
    blocking-api | reactive-api) ;;
    *) echo "fuzz-contract: unknown API '$api' (blocking-api, reactive-api)" >&2; exit 2 ;;
    esac
    started=$("$bin/pg-ephemeral" start) # its directory, then its URL
    clusters+=("${started%%$'\n'*}")
    database_url=${started#*$'\n'}

    deps_port=$(free_port)
    BIND_ADDR=127.0.0.1:$deps_port SELLER_LATENCY_MS=0 RISK_LATENCY_MS=0 PAY_LATENCY_MS=0 \
        RUST_LOG=warn "$bin/mock-deps" >"$reports/$api-mock-deps.log" 2>&1 &
    pids+=($!)
    wait_for "http://127.0.0.1:$deps_port/admin/stats" mock-deps "$reports/$api-mock-deps.log"

    # MAX_LOOP_LAG_MS=0: no refusal for a late event loop. The fuzzer sends one request at a
    # time, but a debug build on a machine busy with other jobs runs its loop late enough for
    # the default (5 ms) to answer 503 `overloaded`: the overload contract, tested by its own
    # tests (contract_overload.rs), not what a request's answer to its content is.
    api_port=$(free_port)
    DATABASE_URL=$database_url DEPS_URL=http://127.0.0.1:$deps_port BIND_ADDR=127.0.0.1:$api_port \
        REQUEST_HASH_KEY=fuzz-contract-request-hash-key MAX_LOOP_LAG_MS=0 RUST_LOG=warn \
        "$bin/$api" >"$reports/$api.log" 2>&1 &
    pids+=($!)
    wait_for "http://127.0.0.1:$api_port/health" "$api" "$reports/$api.log"

    # One order made before the run: GET /orders/{id} is fuzzed against it (the config reads
    # FUZZ_ORDER_ID), not only against ids of no order.
    location=$(curl -fsS -o /dev/null -w '%header{location}' -X POST \
        -H "Authorization: Bearer sk_fuzz" -H "Content-Type: application/json" \
        --data @docs/sample-order.json "http://127.0.0.1:$api_port/orders") || {
        echo "fuzz-contract: $api did not create docs/sample-order.json's order; its log:" >&2
        tail -20 "$reports/$api.log" >&2
        exit 1
    }
    export FUZZ_ORDER_ID=${location#/orders/}

    echo "== schemathesis against $api (at most $max_time s)"
    start=$SECONDS
    # Every check on; the seller token mock-deps accepts (`sk_` and a seller id) on every request
    # (the `ignored_auth` check removes it itself). What the config accepts, and why, is in
    # scripts/fuzz-contract.toml.
    if "$schemathesis" --config-file scripts/fuzz-contract.toml run docs/openapi.json \
        --url "http://127.0.0.1:$api_port" --checks all --max-time "$max_time" \
        --header "Authorization: Bearer sk_fuzz" --seed 1 \
        --report junit --report-dir "$reports/$api"; then
        echo "-- $api: no finding ($((SECONDS - start)) s)"
    else
        echo "-- $api: FINDINGS ($((SECONDS - start)) s); its log: $reports/$api.log"
        failed+=("$api")
    fi
    cleanup
    pids=()
    clusters=()
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz-contract: findings against ${failed[*]}" >&2
    exit 1
fi
echo "fuzz-contract: no finding against ${apis[*]}"
