#!/usr/bin/env bash
# The test command: starts a throw-away PostgreSQL (unless TEST_DATABASE_URL points at one),
# then runs the whole workspace's tests with cargo-nextest. Extra arguments go to nextest.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${TEST_DATABASE_URL:-}" ]; then
    dir=$(mktemp -d /tmp/order-lab-pg.XXXXXX)
    chmod 755 "$dir"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    trap 'scripts/pg-ephemeral.sh stop "$dir"' EXIT
    TEST_DATABASE_URL=$(scripts/pg-ephemeral.sh start "$dir" "$port")
    export TEST_DATABASE_URL
    echo "test PostgreSQL: $TEST_DATABASE_URL"
fi

# The lab smoke test starts the service binaries as separate processes; cargo only builds a
# package's own binaries for its tests, so build all three (same profile as the tests) first.
cargo build -p blocking-api -p reactive-api -p mock-deps --bins

if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --no-fail-fast "$@"
else
    cargo test --workspace --no-fail-fast "$@"
fi
