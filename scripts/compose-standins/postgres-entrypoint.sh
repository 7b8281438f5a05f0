#!/bin/sh
# The part of the upstream postgres image's entrypoint that docker-compose.yml uses: on first start,
# a cluster in $PGDATA whose superuser is $POSTGRES_USER (password $POSTGRES_PASSWORD, SCRAM over
# TCP from anywhere, trust on the local socket) and a database $POSTGRES_DB; then the server, with
# any `-c name=value` arguments given after `postgres`, or alone (as Kubernetes' `args` give them,
# with the upstream entrypoint's rule: a first argument that starts with '-' means postgres).
set -eu
case "${1:-}" in -*) set -- postgres "$@" ;; esac
if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
    user=${POSTGRES_USER:-postgres}
    db=${POSTGRES_DB:-$user}
    pwfile=$(mktemp)
    printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}" > "$pwfile"
    initdb --pgdata="$PGDATA" --username="$user" --pwfile="$pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$pwfile"
    echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    if [ "$db" != postgres ]; then
        # Single-user mode: no server (so nothing that looks ready) until the real one starts.
        echo "CREATE DATABASE \"$db\" OWNER \"$user\";" | postgres --single -D "$PGDATA" postgres >/dev/null
    fi
    echo "docker-entrypoint.sh: cluster initialised (user $user, database $db)"
fi
exec "$@"
