#!/usr/bin/env bash
# docker-compose.yml run for real, end to end (CI runs it from .ci/run):
#   1. an engine: a Docker engine if one answers; else podman serving the Docker API (installed and
#      configured when missing: runc, cgroupfs, a health-check loop, since podman needs systemd to
#      run health checks by itself) with local stand-ins for the upstream images
#      (scripts/compose-standins/, built once and kept);
#   2. `docker compose up -d --build`, then every service healthy;
#   3. inside each API container, its cgroup must hold the pod docker-compose.yml gives the APIs:
#      API_CPUS and API_MEMORY (default 1 CPU and 1 GiB);
#   4. `docker compose --profile lab run --rm loadtest` with a short profile
#      (COMPOSE_E2E_PROFILE, default ramp-300; COMPOSE_E2E_SCALE, default 0.5);
#   5. the report and results are checked (scripts/compose-e2e-check.py): counts reconcile and
#      every charge has its order;
#   6. `docker compose down -v`, also on failure. Images (and the build cache) are kept.
# The report lands in reports/compose-e2e-<UTC time>/, with the phases' times in timings.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
# docker-compose.yml ships no REQUEST_HASH_KEY: .env holds one (random, written once).
scripts/make-env.sh

profile=${COMPOSE_E2E_PROFILE:-ramp-300}
scale=${COMPOSE_E2E_SCALE:-0.5}
out=compose-e2e-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "reports/$out"
timings="reports/$out/timings.txt"
t0=$SECONDS
phase_start=$SECONDS
phase() { # phase NAME: records the time since the previous phase ended
    echo "$1 $((SECONDS - phase_start)) s" | tee -a "$timings"
    phase_start=$SECONDS
}
say() { echo "compose-e2e: $*"; }

# ---- 1. the engine ----
engine=docker
bg_pids=()
if ! docker info >/dev/null 2>&1; then
    engine=podman
    need=()
    command -v podman >/dev/null || need+=(podman catatonit conmon netavark aardvark-dns runc iptables)
    command -v debootstrap >/dev/null || need+=(debootstrap)
    command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 || need+=(docker-compose)
    if [ ${#need[@]} -gt 0 ]; then
        say "installing ${need[*]}"
        apt-get update -q >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
    fi
    # crun fails on this cgroup layout (v1, no systemd): runc, cgroupfs, events in a file. Root
    # here lacks CAP_SYS_RESOURCE, so a container cannot get more than the engine's own limits:
    # podman's default open files (1048576) and processes are refused unless capped to them.
    mkdir -p /etc/containers/containers.conf.d
    nofile=$(ulimit -Hn) nproc=$(ulimit -Hu)
    if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi # podman runs with 32768
    cat >/etc/containers/containers.conf.d/50-order-lab.conf <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
    sock=/run/order-lab-podman/podman.sock
    mkdir -p "$(dirname "$sock")"
    podman system service --time=0 "unix://$sock" >/tmp/order-lab-podman-service.log 2>&1 &
    bg_pids+=($!)
    export DOCKER_HOST=unix://$sock
    for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.2; done
    scripts/compose-standins/build.sh
fi
if docker compose version >/dev/null 2>&1; then
    compose=(docker compose)
else
    compose=(docker-compose)
fi
compose+=(-f docker-compose.yml -p order-lab-e2e)
# docker-compose v1 gives up on an engine that says nothing for 60 s (a long compile step).
export COMPOSE_HTTP_TIMEOUT=${COMPOSE_HTTP_TIMEOUT:-1800}
# Reports are written as the invoking user; the profile and output folder of this run.
export LAB_UID=$(id -u) LAB_GID=$(id -g)
export LAB_PROFILE=$profile LAB_DURATION_SCALE=$scale LAB_OUT=/reports/$out
say "engine $engine, ${compose[*]} ($("${compose[@]}" version --short 2>/dev/null || echo '?'))"
phase engine

cleanup() {
    local rc=$?
    set +e
    if [ $rc -ne 0 ]; then
        say "FAILED (exit $rc); service logs in reports/$out/logs/compose.log"
        mkdir -p "reports/$out/logs"
        "${compose[@]}" --profile lab logs --no-color >"reports/$out/logs/compose.log" 2>&1
        tail -40 "reports/$out/logs/compose.log"
        # What each API's calls to the dependencies did: outcomes by dependency, and the lookups
        # of mock-deps's name (order_core::plumbing::dns), e.g. failed lookups in a stall.
        for port in 8081 8082; do
            curl -fsS -m 5 "http://127.0.0.1:$port/metrics" 2>/dev/null |
                grep -E '^(deps_dns_lookups_total|dependency_request_duration_seconds_count)' \
                    >"reports/$out/logs/deps-metrics-$port.txt"
            say "API on :$port, dependency calls and name lookups:"
            cat "reports/$out/logs/deps-metrics-$port.txt"
        done
    fi
    "${compose[@]}" --profile lab down -v --remove-orphans >/dev/null 2>&1
    for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    echo "total $((SECONDS - t0)) s" | tee -a "$timings"
    exit $rc
}
trap cleanup EXIT

# Without systemd podman runs no health check by itself: run them, for every container, every 2 s.
health_loop() {
    while :; do
        for c in $(podman ps -q --filter label=com.docker.compose.project=order-lab-e2e); do
            podman healthcheck run "$c" >/dev/null 2>&1 || true
        done
        sleep 2
    done
}
if [ $engine = podman ]; then
    health_loop &
    bg_pids+=($!)
fi

# ---- 2. build and start ----
"${compose[@]}" build
if [ $engine = podman ]; then
    # Each build whose sources changed leaves its builder stage behind as an untagged image
    # (≈ 1.5 GB); the build cache that matters is the cache mounts, which stay.
    podman image prune -f >/dev/null
fi
phase "image build"
"${compose[@]}" up -d
container() { "${compose[@]}" ps -q "$1"; }
health() { $engine inspect --format '{{.State.Health.Status}}' "$(container "$1")"; }
for s in postgres mock-deps blocking-api reactive-api; do
    for i in $(seq 90); do
        [ "$(health "$s")" = healthy ] && break
        [ "$i" = 90 ] && { say "$s not healthy after 180 s: $(health "$s")"; exit 1; }
        sleep 2
    done
done
say "all services healthy"
phase "up and healthy"

# ---- 3. the limits, read from inside each API container ----
# The pod docker-compose.yml gives both APIs: API_CPUS (cores) and API_MEMORY (compose's units).
api_cpus=${API_CPUS:-1.0}
api_memory=${API_MEMORY:-1g}
bytes() { # compose's memory units: 512m, 1g, 1024k, plain bytes (an optional b after the unit)
    local v=${1,,}
    v=${v%b}
    case $v in
        *g) echo $((${v%g} << 30)) ;;
        *m) echo $((${v%m} << 20)) ;;
        *k) echo $((${v%k} << 10)) ;;
        *) echo "$v" ;;
    esac
}
api_memory_bytes=$(bytes "$api_memory")
for api in blocking-api reactive-api; do
    # cgroup v2 (cpu.max) or v1 (CFS quota and period); the API process's own open-file limit.
    read -r quota period mem nofile < <("${compose[@]}" exec -T "$api" sh -c '
        if [ -f /sys/fs/cgroup/cpu.max ]; then
            read -r q p < /sys/fs/cgroup/cpu.max; m=$(cat /sys/fs/cgroup/memory.max)
        else
            q=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us); p=$(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)
            m=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)
        fi
        n="?"
        for d in /proc/[0-9]*; do
            [ "$(cat "$d/comm" 2>/dev/null)" = "$1" ] \
                && n=$(sed -n "s/^Max open files *\([0-9]*\).*/\1/p" "$d/limits")
        done
        echo "$q $p $m $n"' sh "$api")
    line="$api: cpu quota $quota / period $period, memory.max $mem, open files $nofile"
    echo "$line" | tee -a "reports/$out/limits.txt"
    # quota = cpus × period (µs, as the engine rounds it); memory in bytes.
    if ! awk -v c="$api_cpus" -v q="$quota" -v p="$period" \
        'BEGIN { d = q - c * p; exit !(d < 1 && d > -1) }' || [ "$mem" != "$api_memory_bytes" ]; then
        say "$api is not limited to API_CPUS=$api_cpus / API_MEMORY=$api_memory ($api_memory_bytes bytes)"
        exit 1
    fi
done
phase "limits checked"

# ---- 4. the load ----
if [ $engine = podman ]; then
    # Every service is healthy; stop the loop so its podman processes do not share the CPU with
    # the measurement (Docker's own checks are cheaper: no CLI process per check).
    kill "${bg_pids[-1]}" && unset 'bg_pids[-1]'
fi
"${compose[@]}" --profile lab run --rm -T loadtest
phase "loadtest ($profile, scale $scale)"

# ---- 5. the report ----
# One run: a failed check fails the step (cleanup keeps the services' logs and each API's
# dependency and name-lookup counters beside the report).
python3 scripts/compose-e2e-check.py "reports/$out"
phase "checks"
say "passed: reports/$out"
