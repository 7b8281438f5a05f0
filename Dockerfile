# syntax=docker/dockerfile:1
# One image holding the lab's four binaries; docker-compose.yml picks one per service with `command`.

# ---- builder: the whole workspace, release profile, exactly the locked dependencies ----
FROM rust:1.95-bookworm AS builder
# libpq-dev + pkg-config: diesel's PostgreSQL backend (pq-sys) links libpq. cmake: aws-lc-sys.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libpq-dev pkg-config cmake \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Cache mounts keep the registry and target/ between builds; the binaries are copied out of the
# cached target/ because it is not part of the image layer. One cargo invocation for the four
# binaries (every dependency compiled once); the release profile without its line tables, which
# only backtraces use: same optimisation, less to compile and link on a cold cache.
ENV CARGO_PROFILE_RELEASE_DEBUG=none
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p blocking-api -p reactive-api -p mock-deps -p loadtest \
    && mkdir -p /out \
    && cp target/release/blocking-api target/release/reactive-api target/release/mock-deps \
          target/release/loadtest /out/

# ---- runtime: small Debian with libpq and curl (for the health checks) ----
FROM debian:bookworm-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends libpq5 ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --no-create-home --shell /usr/sbin/nologin lab \
    && printf '%s\n' '#!/bin/sh' \
        '# Open files: the soft limit up to the hard one the engine grants.' \
        'ulimit -n "$(ulimit -Hn)" 2>/dev/null || true' 'exec "$@"' > /usr/local/bin/raise-nofile \
    && chmod 755 /usr/local/bin/raise-nofile \
    && mkdir /app && chown lab:lab /app
COPY --from=builder /out/blocking-api /out/reactive-api /out/mock-deps /out/loadtest /usr/local/bin/
# Made above, not by WORKDIR: podman 4.3's `kube play` refuses a working directory that is not in
# the image's layers (it makes none), and WORKDIR alone leaves /app out of them under buildah.
WORKDIR /app
# Migrations are embedded in the API binaries (sqlx::migrate!), nothing else to copy.
USER lab
# Thousands of connections at once need more than the usual soft limit of 1024 open files; a fixed
# `ulimits` in the compose file would be refused where the host's hard limit is lower.
ENTRYPOINT ["raise-nofile"]
# Overridden per service in docker-compose.yml.
CMD ["blocking-api"]
