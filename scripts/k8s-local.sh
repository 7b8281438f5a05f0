#!/usr/bin/env bash
# deploy/k8s/overlays/local run for real with `podman kube play`, as far as one machine
# allows: the Kubernetes manifests' Deployments, ConfigMaps, Secret and PVC started from the
# images the compose run builds, each API container's CPU quota and memory limit read back (they
# must be the manifests' Guaranteed 1 CPU / 1 GiB, the same for both), /ready checked, then one
# generator and two shards released together (`--start-at`) against one API, merged with
# `loadtest merge`, and the two printed side by side: counts must be equal, money balanced.
#
#   scripts/k8s-local.sh                      # reactive-api, ramp-300 × 0.25
#   K8S_LOCAL_TARGET=blocking-api K8S_LOCAL_PROFILE=ramp-150 K8S_LOCAL_SCALE=1 scripts/k8s-local.sh
#   K8S_LOCAL_READY_S=0 scripts/k8s-local.sh  # the diagnostics of a start that does not finish
#
# Needs podman, kubectl (for `kubectl kustomize`) and the images order-lab:local and postgres:15:
# run scripts/compose-e2e.sh once first (it installs podman and builds them). The generators are
# the image's own `loadtest`, on the host's network; results land in reports/k8s-local-<time>/.
# Everything is taken down at the end, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${K8S_LOCAL_TARGET:-reactive-api}
profile=${K8S_LOCAL_PROFILE:-ramp-300}
scale=${K8S_LOCAL_SCALE:-0.25}
case $target in
    blocking-api) port=8081 ;;
    reactive-api) port=8082 ;;
    *) echo "K8S_LOCAL_TARGET: blocking-api or reactive-api" >&2; exit 2 ;;
esac
say() { echo "k8s-local: $*"; }
t0=$SECONDS
for tool in podman kubectl python3 curl; do
    command -v $tool >/dev/null || { echo "k8s-local: $tool missing" >&2; exit 2; }
done
for image in order-lab:local postgres:15; do
    podman image exists $image || { echo "k8s-local: image $image missing (run scripts/compose-e2e.sh first)" >&2; exit 2; }
done

out=reports/k8s-local-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
chmod 777 "$out" # the generator containers write their results here
rendered=$out/local.yaml
kubectl kustomize deploy/k8s/overlays/local > "$rendered"

# podman 4.3 stores a played Secret in a form its own `secretKeyRef` cannot read back ("secret …
# is not valid JSON", podman issue #16269, fixed in 4.4): there, the Secret is made with
# `podman secret create` as the JSON of its data, and the rest is played.
played=$out/played.yaml
secret_name=order-api-secrets
podman_version=$(podman version --format '{{.Client.Version}}')
python3 - "$rendered" "$played" "$out/secret.json" "$podman_version" <<'EOF'
import json, re, sys
rendered, played, secret_json, version = sys.argv[1:]
# kustomize writes one object per document, separated by "---" lines (no YAML parser needed).
docs = [d for d in re.split(r"^---\n", open(rendered).read(), flags=re.M) if d.strip()]
major, minor = (int(x) for x in version.split(".")[:2])
if (major, minor) < (4, 4):
    secrets = [d for d in docs if re.search(r"^kind: Secret$", d, re.M)]
    assert len(secrets) == 1, "the local overlay has one Secret"
    data = re.search(r"^data:\n((?:  .*\n)+)", secrets[0], re.M).group(1)
    pairs = dict(line.strip().split(": ", 1) for line in data.splitlines())
    json.dump(pairs, open(secret_json, "w"))
    docs = [d for d in docs if d not in secrets]
open(played, "w").write("---\n".join(docs))
EOF

# What a start that did not finish leaves to read: each container's state and restarts, each
# service answered from inside its own container (the process) against through the host's port
# (the engine's port mapping), the NAT rules of the published ports, and every log.
containers=(postgres-pod-0-postgres mock-deps-pod-0-mock-deps blocking-api-pod-0-api reactive-api-pod-0-api)
diagnose() {
    # What fails here is what is being looked for (a curl refused, a tool missing): every reading
    # is printed, none ends the diagnosis. The script exits 1 right after it.
    set +e
    podman ps -a --format '{{.Names}} {{.Status}}'
    for c in "${containers[@]}"; do
        echo "--- $c: $(podman inspect "$c" --format 'started {{.State.StartedAt}}, restarts {{.RestartCount}}, exit code {{.State.ExitCode}}, IP {{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' 2>&1)"
    done
    for probe in "mock-deps-pod-0-mock-deps 9090 /health" "blocking-api-pod-0-api 8081 /ready" \
        "reactive-api-pod-0-api 8082 /ready"; do
        read -r c service_port path <<<"$probe"
        inside=$(podman exec "$c" curl -sS -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$service_port$path" 2>&1)
        outside=$(curl -sS -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$service_port$path" 2>&1)
        echo "--- $c $path: from inside the container: $inside; through the host's port $service_port: $outside"
    done
    echo "--- the APIs' way to PostgreSQL: $(podman exec blocking-api-pod-0-api sh -c 'grep host.containers.internal /etc/hosts; timeout 2 bash -c "exec 3<>/dev/tcp/host.containers.internal/5432" && echo "port 5432 open"' 2>&1 | tr '\n' ' ')"
    echo "--- networks and bridges"
    podman network ls 2>&1
    podman network inspect podman-default-kube-network --format '{{range .Subnets}}{{.Subnet}} {{end}}on {{.NetworkInterface}}' 2>&1
    ip -br addr show type bridge 2>&1
    echo "--- NAT rules of the published ports"
    iptables -t nat -S 2>/dev/null | grep -E -- '--dport (5432|8081|8082|9090)' || echo "(none, or no iptables)"
    for c in "${containers[@]}"; do
        echo "--- log of $c"; podman logs --timestamps "$c" 2>&1 | head -60
    done
}

down() {
    podman kube down "$played" >/dev/null 2>&1 || true
    podman secret rm $secret_name >/dev/null 2>&1 || true
    podman volume rm -f postgres-data >/dev/null 2>&1 || true
}
down
trap down EXIT

# The manifests publish these on the host. Another user of one of them (the compose run's
# containers still going down, a PostgreSQL of the host) would take the pods' traffic or refuse
# it: wait up to 30 s for them to be free, then name what holds them.
# The compose run's containers and network (scripts/compose-e2e.sh takes them down as it ends)
# are gone first as well: its network and the pods' take the same free subnet and bridge in turn.
host_ports=(5432 8081 8082 9090)
compose_left() {
    podman ps -aq --filter label=com.docker.compose.project=order-lab-e2e 2>/dev/null
    podman network ls --format '{{.Name}}' 2>/dev/null | grep '^order-lab-e2e' || true
}
# ss's filter: a listening socket on any of them (port 0 closes the list and matches none).
port_filter="( $(printf 'sport = :%s or ' "${host_ports[@]}") sport = :0 )"
held() { ss -Htln "$port_filter" 2>/dev/null; }
for i in $(seq 30); do
    [ -z "$(held)" ] && [ -z "$(compose_left)" ] && break
    if [ "$i" = 30 ]; then
        echo "k8s-local: after 30 s, host ports or the compose run still in the way:" >&2
        ss -Htlnp "$port_filter" >&2 || true
        podman ps -a --format '{{.Names}} {{.Status}} {{.Ports}}' >&2 || true
        podman network ls >&2 || true
        exit 1
    fi
    sleep 1
done

if [ -s "$out/secret.json" ]; then
    podman secret create $secret_name "$out/secret.json" >/dev/null
fi
say "podman kube play ($podman_version) of deploy/k8s/overlays/local"
podman kube play "$played" >/dev/null

# Each service's readiness through its published port, said once when it first answers, so a
# start that does not finish names the part that did not answer.
checks=("postgres tcp 5432" "mock-deps http://127.0.0.1:9090/health"
    "blocking-api http://127.0.0.1:8081/ready" "reactive-api http://127.0.0.1:8082/ready")
answers() { # a URL, or "tcp PORT"
    case $1 in
        tcp) timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$2" 2>/dev/null ;;
        *) curl -fsS -m 2 -o /dev/null "$1" 2>/dev/null ;;
    esac
}
declare -A up=()
ready_s=${K8S_LOCAL_READY_S:-180}
deadline=$((SECONDS + ready_s))
while [ ${#up[@]} -lt ${#checks[@]} ]; do
    for c in "${checks[@]}"; do
        read -r name what tcp_port <<<"$c"
        [ -n "${up[$name]:-}" ] && continue
        if answers "$what" "$tcp_port"; then
            up[$name]=1
            say "$name answers on the host after $((SECONDS - t0)) s"
        fi
    done
    [ ${#up[@]} -lt ${#checks[@]} ] || break
    if [ $SECONDS -gt $deadline ]; then
        diagnose
        echo "k8s-local: not ready within $ready_s s: $(for c in "${checks[@]}"; do
            read -r name _ <<<"$c"; [ -n "${up[$name]:-}" ] || printf '%s ' "$name"; done)" >&2
        exit 1
    fi
    sleep 2
done
say "ready after $((SECONDS - t0)) s"

# The limits as the engine applied them, against the manifests' requests = limits.
limits=()
for api in blocking-api reactive-api; do
    l=$(podman inspect "$api-pod-0-api" --format '{{.HostConfig.CpuQuota}} {{.HostConfig.CpuPeriod}} {{.HostConfig.Memory}}')
    read -r quota period memory <<<"$l"
    say "$api: CPU quota ${quota} µs per ${period} µs, memory limit ${memory} bytes"
    if [ "$quota" != "$period" ] || [ "$memory" != $((1024 * 1024 * 1024)) ]; then
        echo "k8s-local: $api does not have the manifests' 1 CPU / 1 GiB" >&2
        exit 1
    fi
    limits+=("$l")
done
[ "${limits[0]}" = "${limits[1]}" ] || { echo "k8s-local: the APIs' limits differ" >&2; exit 1; }

db=postgres://lab:lab@127.0.0.1:5432/orders
deps=http://127.0.0.1:9090
loadtest() {
    podman run --rm --network host --user 0 -v "$PWD/$out:/out" --entrypoint loadtest \
        order-lab:local "$@"
}
common=(--target "http://127.0.0.1:$port" --profile "$profile" --duration-scale "$scale"
    --seed 22 --no-progress)
checked=(--database-url "$db" --deps-url "$deps")
fresh() { # empty tables (the lab's own statement) and ledger between the two runs
    podman exec -i postgres-pod-0-postgres psql -q -v ON_ERROR_STOP=1 -U lab -d orders \
        <loadtest/cli/src/truncate.sql
    curl -fsS -m 5 -X POST "$deps/admin/reset" >/dev/null
}

say "one generator: $target, $profile × $scale"
fresh
loadtest run "${common[@]}" "${checked[@]}" --run-id one --out /out/one.json >"$out/one.log" 2>&1 \
    || { tail -20 "$out/one.log"; exit 1; }

say "two shards released together"
fresh
start_at=$(( $(date +%s%3N) + 8000 ))
pids=()
for i in 0 1; do
    loadtest run "${common[@]}" --run-id two --shard "$i/2" --start-at "$start_at" \
        --out "/out/shard-$i.json" >"$out/shard-$i.log" 2>&1 &
    pids+=($!)
done
for i in 0 1; do
    wait "${pids[$i]}" || { tail -20 "$out/shard-$i.log"; exit 1; }
done
loadtest merge /out/shard-0.json /out/shard-1.json "${checked[@]}" --out /out/merged \
    >"$out/merge.log" 2>&1 || { tail -20 "$out/merge.log"; exit 1; }

python3 - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
one = json.load(open(f"{out}/one.json"))
two = json.load(open(f"{out}/merged/results.json"))
def row(r):
    s, p = r["summary"], r["plateau"]
    ok = p.get("ok_latency_ms") or {}
    m = r.get("money") or {}
    return {
        "offered": s["offered"], "sent": s["sent"], "2xx": s["ok"], "errors": s["errors"],
        "plateau offered": p["offered"], "plateau 2xx": p["ok"],
        "plateau orders/s": round(p["ok_throughput_rps"], 1),
        "plateau p50 ms": round(ok.get("p50", float("nan")), 1),
        "plateau p99 ms": round(ok.get("p99", float("nan")), 1),
        "charges": m.get("charges"), "voids": m.get("voids"), "orders": m.get("orders"),
    }
a, b = row(one), row(two)
lines = ["| | one generator | two shards, merged |", "|---|---:|---:|"]
lines += [f"| {k} | {a[k]} | {b[k]} |" for k in a]
table = "\n".join(lines)
open(f"{out}/comparison.md", "w").write(table + "\n")
print(table)
problems = []
for k in ("offered", "plateau offered"):
    if a[k] != b[k]:
        problems.append(f"{k}: {a[k]} vs {b[k]}")
for name, r in (("one generator", one), ("two shards", two)):
    m = r.get("money")
    if m is None:
        problems.append(f"{name}: money not counted")
    elif m["charges_without_order"] or m["orders_without_charge"] or m["double_charges"]:
        problems.append(f"{name}: money does not balance: {m}")
    for c in r.get("invariants", []):
        if c.get("ok") is False:
            problems.append(f"{name}: {c['name']} — {c['detail']}")
if problems:
    sys.exit("k8s-local: " + "; ".join(problems))
EOF
say "passed in $((SECONDS - t0)) s; results in $out"
