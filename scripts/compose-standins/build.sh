#!/usr/bin/env bash
# Builds local stand-ins for the three upstream images the Dockerfile and docker-compose.yml name,
# for a podman engine that reaches Debian's packages but no image registry (the project's machines):
#   debian:bookworm-slim   a Debian bookworm root file system (debootstrap --variant=minbase), imported
#   postgres:15            Debian's PostgreSQL 15 with an entrypoint like upstream's (postgres.Containerfile)
#   nats:2.10-alpine       Debian's nats-server (nats.Containerfile; the `events` profile only)
#   rust:1.95-bookworm     the machine's own Rust toolchain (and extra CA certificates, for an
#                          HTTPS proxy on the way to crates.io) on that base (rust.Containerfile)
# Each is built only when missing (images are kept between runs). They never ship: with Docker, the
# real images are pulled. Usage: build.sh [--force]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
force=${1:-}

has() { [ "$force" != --force ] && podman image exists "docker.io/library/$1"; }

# The Debian mirror apt uses here (deb822 or one-line sources), else the default one.
mirror() {
    local m
    m=$(grep -hoE 'https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list \
        2>/dev/null | head -1 | tr -d ' ')
    echo "${DEBIAN_MIRROR:-${m:-http://deb.debian.org/debian}}"
}

if ! has debian:bookworm-slim; then
    command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap
    root=$(mktemp -d /var/tmp/order-lab-rootfs.XXXXXX)
    trap 'rm -rf "$root"' EXIT
    echo "stand-in debian:bookworm-slim: debootstrap --variant=minbase bookworm from $(mirror)"
    debootstrap --variant=minbase bookworm "$root" "$(mirror)" >"$root.log" 2>&1 \
        || { tail -20 "$root.log"; exit 1; }
    rm -f "$root.log"
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" -c . | podman import -q --change 'CMD ["bash"]' - docker.io/library/debian:bookworm-slim >/dev/null
    rm -rf "$root"
    trap - EXIT
fi

if ! has nats:2.10-alpine; then
    echo "stand-in nats:2.10-alpine: Debian's nats-server"
    podman build -q -f "$here/nats.Containerfile" -t docker.io/library/nats:2.10-alpine "$here" >/dev/null
fi

# Rebuilt when its Containerfile or entrypoint changed since (a label holds their hash): a kept
# image would otherwise run an old entrypoint. Only the COPY layer is rebuilt then.
pg_hash=$(cat "$here/postgres.Containerfile" "$here/postgres-entrypoint.sh" | sha256sum | cut -c1-16)
pg_label=$(podman image inspect docker.io/library/postgres:15 \
    --format '{{index .Labels "order-lab.standin"}}' 2>/dev/null || true)
if ! has postgres:15 || [ "$pg_label" != "$pg_hash" ]; then
    echo "stand-in postgres:15: Debian's postgresql-15"
    podman build -q --label "order-lab.standin=$pg_hash" -f "$here/postgres.Containerfile" \
        -t docker.io/library/postgres:15 "$here" >/dev/null
fi

if ! has rust:1.95-bookworm; then
    sysroot=$(rustc --print sysroot)
    echo "stand-in rust:1.95-bookworm: $(rustc --version) from $sysroot"
    ctx=$(mktemp -d /var/tmp/order-lab-rust.XXXXXX)
    trap 'rm -rf "$ctx"' EXIT
    mkdir -p "$ctx/toolchain/bin" "$ctx/toolchain/lib"
    cp "$sysroot"/bin/{cargo,rustc,rustdoc} "$ctx/toolchain/bin/"
    # The compiler's libraries and the host's std and linker (rust-lld); no sources, no docs.
    (cd "$sysroot/lib" && tar -c --exclude=rustlib/src --exclude='rustlib/*/analysis' .) \
        | tar -C "$ctx/toolchain/lib" -x
    [ -d "$sysroot/libexec" ] && cp -r "$sysroot/libexec" "$ctx/toolchain/"
    mkdir -p "$ctx/ca"
    find /usr/local/share/ca-certificates -name '*.crt' -exec cp {} "$ctx/ca/" \; 2>/dev/null || true
    cp "$here/rust.Containerfile" "$ctx/Containerfile"
    podman build -q -t docker.io/library/rust:1.95-bookworm "$ctx" >/dev/null
    rm -rf "$ctx"
    trap - EXIT
fi
