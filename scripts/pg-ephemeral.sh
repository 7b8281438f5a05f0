#!/usr/bin/env bash
# Starts a throw-away PostgreSQL cluster from the system's binaries and prints its URL.
# Usage: scripts/pg-ephemeral.sh start DIR PORT   |   scripts/pg-ephemeral.sh stop DIR
# As root the cluster runs as the `postgres` user (initdb refuses to run as root).
set -euo pipefail

find_bin() {
    local name=$1 dir
    if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return; fi
    for dir in /usr/lib/postgresql/*/bin /usr/local/opt/postgresql*/bin /opt/homebrew/opt/postgresql*/bin /usr/local/pgsql/bin; do
        if [ -x "$dir/$name" ]; then echo "$dir/$name"; return; fi
    done
    echo "error: '$name' not found; install PostgreSQL (Debian: apt-get install postgresql) or set TEST_DATABASE_URL" >&2
    exit 1
}

as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cmd=${1:?start|stop}
dir=${2:?data directory}
case "$cmd" in
start)
    port=${3:?port}
    initdb=$(find_bin initdb)
    pg_ctl=$(find_bin pg_ctl)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; fi
    as_owner "$initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; exit 1; }
    as_owner "$pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_preload_libraries=pg_stat_statements -c max_prepared_transactions=64" \
        start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
    echo "postgres://postgres@127.0.0.1:$port/postgres"
    ;;
stop)
    pg_ctl=$(find_bin pg_ctl)
    if [ -d "$dir/data" ]; then as_owner "$pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true; fi
    rm -rf "$dir"
    ;;
*) echo "usage: $0 start DIR PORT | stop DIR" >&2; exit 2 ;;
esac
