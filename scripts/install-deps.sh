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
#   fuzz       scripts/fuzz-contract.sh: PostgreSQL's server binaries, and schemathesis, pinned,
#              in a virtualenv of its own (needs python3 with venv; Debian: python3-venv)
#
#   scripts/install-deps.sh --schemathesis-path    prints where the `fuzz` group puts schemathesis
#
# On Debian as root it installs what is missing (one `apt-get update`, only if something is);
# elsewhere it names what to install and exits 1. What no Debian package provides (kubectl) is
# named too, and is a failure only under CI (`CI=true`), like the tests that need it. Nothing that
# is already there is touched.
set -euo pipefail
# Lower-cased without bash 4 syntax: macOS ships bash 3.2, where this script must still say what
# is missing.
ci=$(printf '%s' "${CI:-}" | tr '[:upper:]' '[:lower:]')

# schemathesis from PyPI, pinned (a new version is a commit that says what it finds), in a venv
# whose name carries the version: a bump installs beside the old one, a rerun installs nothing.
# Not a system package (Debian has none) and not the user's own Python environment.
SCHEMATHESIS_VERSION=4.32.5
schemathesis_venv=${SCHEMATHESIS_VENV:-${XDG_DATA_HOME:-$HOME/.local/share}/order-lab/schemathesis-$SCHEMATHESIS_VERSION}
if [ "${1:-}" = --schemathesis-path ]; then
    echo "$schemathesis_venv/bin/schemathesis"
    exit 0
fi

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
have_curl() { command -v curl >/dev/null 2>&1; }
have_python_venv() { command -v python3 >/dev/null 2>&1 && python3 -c 'import venv, ensurepip' 2>/dev/null; }
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
    fuzz)
        add_if_missing have_postgres "PostgreSQL server binaries|postgresql|brew install postgresql@15"
        add_if_missing have_python_venv "python3 with venv|python3-venv|python.org's python3"
        add_if_missing have_curl "curl|curl|the system's curl"
        ;;
    *)
        echo "install-deps: unknown group '$group' (tests, cost-gate, compose, fuzz)" >&2
        exit 2
        ;;
    esac
done

# After the system packages (python3-venv among them): the fuzzer into its own venv.
install_schemathesis() {
    case " ${groups[*]} " in *" fuzz "*) ;; *) return 0 ;; esac
    local bin=$schemathesis_venv/bin/schemathesis
    if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q " $SCHEMATHESIS_VERSION\$"; then
        return 0
    fi
    echo "install-deps: installing schemathesis $SCHEMATHESIS_VERSION in $schemathesis_venv"
    python3 -m venv "$schemathesis_venv"
    "$schemathesis_venv/bin/pip" install -q --disable-pip-version-check \
        "schemathesis==$SCHEMATHESIS_VERSION"
}
if [ ${#missing[@]} -eq 0 ]; then
    install_schemathesis
    exit 0
fi

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
install_schemathesis
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
