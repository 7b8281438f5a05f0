#!/usr/bin/env bash
# What the tests and CI need from the machine, in one place: `scripts/test.sh` and `.ci/run` both
# call this, so the README's test command and CI cannot need different things.
#
#   scripts/install-deps.sh [GROUP...]    (default: tests)
#
#   tests      PostgreSQL's server binaries (every database test starts its own cluster), libpq's
#              headers and library (diesel links it), nats-server (the order-event tests start
#              one each), kubectl (the deploy/k8s test renders the overlays)
#   cost-gate  valgrind (`loadtest bench --instructions`, CI's cost-per-order gate)
#   compose    docker-compose (CI's compose file check)
#
# On Debian as root it installs what is missing (one `apt-get update`, only if something is);
# elsewhere it names what to install and exits 1. What no Debian package provides (kubectl) is
# named too, and is a failure only under CI (`CI=true`), like the tests that need it. Nothing that
# is already there is touched.
set -euo pipefail
# Lower-cased without bash 4 syntax: macOS ships bash 3.2, where this script must still say what
# is missing.
ci=$(printf '%s' "${CI:-}" | tr '[:upper:]' '[:lower:]')

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(tests)

# Each requirement: a name, the Debian package, and a check that it is present.
have_postgres() {
    command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1 \
        || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
        || ls /opt/homebrew/opt/postgresql*/bin/initdb /usr/local/opt/postgresql*/bin/initdb \
            /usr/local/pgsql/bin/initdb >/dev/null 2>&1
}
have_libpq() {
    pkg-config --exists libpq 2>/dev/null || [ -f /usr/include/postgresql/libpq-fe.h ]
}
# Debian installs nats-server in /usr/sbin, off a normal user's PATH (testbed looks there too).
have_nats() { command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ]; }
have_kubectl() { command -v kubectl >/dev/null 2>&1; }
have_valgrind() { command -v valgrind >/dev/null 2>&1 && command -v vgdb >/dev/null 2>&1; }
have_compose() {
    command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1
}

missing=()     # "name|Debian package|how to get it elsewhere"
notes=()
add_if_missing() { "$1" || missing+=("$2"); }
for group in "${groups[@]}"; do
    case $group in
    tests)
        add_if_missing have_postgres "PostgreSQL server binaries|postgresql|brew install postgresql@15"
        add_if_missing have_libpq "libpq (headers and library)|libpq-dev|brew install libpq"
        add_if_missing have_nats "nats-server|nats-server|brew install nats-server"
        # Debian 12's kubectl (kubernetes-client 1.20) is older than the manifests' Kubernetes
        # 1.32 and its kustomize: no package is offered.
        add_if_missing have_kubectl "kubectl (1.32 or later)||https://kubernetes.io/docs/tasks/tools/"
        ;;
    cost-gate) add_if_missing have_valgrind "valgrind|valgrind|the system's valgrind package" ;;
    compose) add_if_missing have_compose "docker-compose|docker-compose|brew install docker-compose" ;;
    *)
        echo "install-deps: unknown group '$group' (tests, cost-gate, compose)" >&2
        exit 2
        ;;
    esac
done
[ ${#missing[@]} -gt 0 ] || exit 0

packages=()    # what apt-get can install
by_hand=()     # what it cannot
for m in "${missing[@]}"; do
    IFS='|' read -r name package elsewhere <<<"$m"
    if [ -n "$package" ]; then
        packages+=("$package")
        notes+=("  - $name (Debian: apt-get install $package; elsewhere: $elsewhere)")
    else
        by_hand+=("  - $name: $elsewhere")
    fi
done

if [ ${#packages[@]} -gt 0 ]; then
    if [ -f /etc/debian_version ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "install-deps: installing ${packages[*]}"
        apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]}" >/dev/null
    else
        echo "install-deps: missing, and this is not Debian as root, so install them yourself:" >&2
        printf '%s\n' "${notes[@]}" ${by_hand[@]+"${by_hand[@]}"} >&2
        exit 1
    fi
fi
# What no package provides: a failure under CI, as in the tests (testbed::skip), where the tests
# that need it would fail; elsewhere those tests are skipped, and the rest can run.
if [ ${#by_hand[@]} -gt 0 ]; then
    case $ci in
    "" | false | 0)
        echo "install-deps: not installed (the tests that need it will be skipped):" >&2
        printf '%s\n' "${by_hand[@]}" >&2
        ;;
    *)
        echo "install-deps: not installed, and under CI the tests that need it fail:" >&2
        printf '%s\n' "${by_hand[@]}" >&2
        exit 1
        ;;
    esac
fi
