#!/usr/bin/env bash
# Validates docker-compose.yml (with the `lab` profile, so the loadtest service is included) using
# Docker Compose v2 (`docker compose`) or the Debian package `docker-compose`, whichever exists.
# Needs no Docker engine. Without either tool it says so and exits 0: the fairness invariants are
# still checked by `cargo test -p labkit --test compose`.
set -euo pipefail
cd "$(dirname "$0")/.."

if docker compose version >/dev/null 2>&1; then
    tool=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
    tool=(docker-compose)
else
    echo "check-compose: SKIPPED: neither 'docker compose' (Docker CLI plugin) nor 'docker-compose'" \
        "(Debian: apt-get install docker-compose) is installed"
    exit 0
fi

# The file requires REQUEST_HASH_KEY (from .env or the environment); validating it needs no real one.
REQUEST_HASH_KEY=${REQUEST_HASH_KEY:-validation-only-not-a-key} \
    "${tool[@]}" -f docker-compose.yml --profile lab config -q
echo "check-compose: docker-compose.yml is valid (${tool[*]} $("${tool[@]}" version --short 2>/dev/null || true))"
