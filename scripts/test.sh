#!/usr/bin/env bash
# The test command: starts a throw-away PostgreSQL (unless TEST_DATABASE_URL points at one),
# then runs the whole workspace's tests with cargo-nextest. Extra arguments go to nextest.
set -euo pipefail
cd "$(dirname "$0")/.."

# PostgreSQL, libpq, nats-server, kubectl: installed where missing (Debian, as root), else named.
scripts/install-deps.sh tests

# The lab smoke test starts the service binaries as separate processes; cargo only builds a
# package's own binaries for its tests, so build all three (same profile as the tests) first, and
# testbed's pg-ephemeral: the throw-away PostgreSQL the lab runs too, same settings, for the tests.
cargo build -p blocking-api -p reactive-api -p mock-deps -p testbed --bins

if [ -z "${TEST_DATABASE_URL:-}" ]; then
    pg=${CARGO_TARGET_DIR:-target}/debug/pg-ephemeral
    started=$("$pg" start) # its directory, then its URL
    pg_dir=${started%%$'\n'*}
    trap '"$pg" stop "$pg_dir"' EXIT
    TEST_DATABASE_URL=${started#*$'\n'}
    export TEST_DATABASE_URL
    echo "test PostgreSQL: $TEST_DATABASE_URL"
fi

if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --no-fail-fast "$@"
else
    cargo test --workspace --no-fail-fast "$@"
fi
