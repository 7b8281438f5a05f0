#!/usr/bin/env bash
# Writes .env, which docker-compose.yml reads, from .env.example with a random REQUEST_HASH_KEY
# (32 bytes from /dev/urandom, hex). An existing .env is left alone: its key keys the request
# hashes already stored, and a new one would make every retry look like another request.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -e .env ]; then
    echo "make-env: .env exists, left as it is"
    exit 0
fi
key=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
umask 077
sed "s/^REQUEST_HASH_KEY=.*/REQUEST_HASH_KEY=$key/" .env.example >.env
echo "make-env: wrote .env with a random REQUEST_HASH_KEY"
