//! The lab's rules for its Kubernetes manifests, over parsed objects (see `k8s.rs`).

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, PersistentVolumeClaim, PodSpec, Probe, ResourceRequirements, Secret,
    Service,
};

/// One rendered object, typed.
#[allow(dead_code)] // the payloads of kinds no rule reads yet are parsed (that is the check)
pub enum Object {
    ConfigMap(ConfigMap),
    Secret(Secret),
    Service(Service),
    Deployment(Deployment),
    StatefulSet(StatefulSet),
    Job(Job),
    Pvc(PersistentVolumeClaim),
}

const APIS: [&str; 2] = ["blocking-api", "reactive-api"];

fn name(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

fn config<'a>(objects: &'a [Object], wanted: &str) -> Option<&'a ConfigMap> {
    objects.iter().find_map(|o| match o {
        Object::ConfigMap(c) if name(&c.metadata) == wanted => Some(c),
        _ => None,
    })
}

fn setting(c: Option<&ConfigMap>, key: &str) -> Option<String> {
    c?.data.as_ref()?.get(key).cloned()
}

fn pod(d: &Deployment) -> Option<&PodSpec> {
    d.spec.as_ref()?.template.spec.as_ref()
}

fn probe_path(p: Option<&Probe>) -> Option<&str> {
    p?.http_get.as_ref()?.path.as_deref()
}

/// How long a probe lets a container fail before acting: period × failure threshold, seconds
/// (Kubernetes' defaults: 10 s, 3).
fn failing_window_s(p: &Probe) -> i32 {
    p.period_seconds.unwrap_or(10) * p.failure_threshold.unwrap_or(3)
}

/// The probes' timings against the rules they serve (docs/contract.md, "Probes and readiness"):
/// `/ready` and `/health` answer within 100 ms, so a timeout of 1 s or more is never the probe's
/// own doing; liveness gives up later than readiness, so a replica leaves its Service before it
/// is restarted; a start may wait `MIGRATION_LOCK_WAIT_MS` for the migration lock with its port
/// not yet bound, so the startup probe's window must be longer than that.
fn probe_timings(api: &str, c: &Container, lock_wait_ms: Option<i64>, bad: &mut Vec<String>) {
    let (Some(ready), Some(live)) = (c.readiness_probe.as_ref(), c.liveness_probe.as_ref()) else {
        return; // no probe: said by the path rules
    };
    for (what, p) in [("readiness", ready), ("liveness", live)] {
        if p.timeout_seconds.unwrap_or(1) < 1 {
            bad.push(format!("{api}: {what} probe's timeout below 1 s"));
        }
    }
    if failing_window_s(live) <= failing_window_s(ready) {
        bad.push(format!(
            "{api}: liveness gives up after {} s, not later than readiness ({} s)",
            failing_window_s(live),
            failing_window_s(ready)
        ));
    }
    match (c.startup_probe.as_ref(), lock_wait_ms) {
        (Some(start), Some(ms)) if i64::from(failing_window_s(start)) * 1000 > ms => {
            if probe_path(Some(start)) != Some("/health") {
                bad.push(format!("{api}: startup probe is not GET /health"));
            }
        }
        (start, ms) => bad.push(format!(
            "{api}: a startup probe must wait longer than MIGRATION_LOCK_WAIT_MS {ms:?} ms: {:?} s",
            start.map(failing_window_s)
        )),
    }
}

/// What the API's stop takes beyond `SHUTDOWN_DELAY_MS` + `SHUTDOWN_GRACE_MS`, ms: actix rounds
/// the grace up to a whole second, then the process exits.
pub const STOP_MARGIN_MS: i64 = 2000;

/// The pod's grace period against the API's stop: after SIGTERM it serves new connections for
/// `SHUTDOWN_DELAY_MS` (the endpoint's removal propagates meanwhile), then lets the orders in
/// flight finish within `SHUTDOWN_GRACE_MS`; the kubelet's SIGKILL must come after both, with
/// [`STOP_MARGIN_MS`] to spare.
fn grace_period(
    api: &str,
    spec: &PodSpec,
    delay_ms: Option<i64>,
    grace_ms: Option<i64>,
) -> Option<String> {
    match (spec.termination_grace_period_seconds, delay_ms, grace_ms) {
        (Some(s), Some(delay), Some(grace)) if s * 1000 >= delay + grace + STOP_MARGIN_MS => None,
        (s, delay, grace) => Some(format!(
            "{api}: terminationGracePeriodSeconds {s:?} must cover SHUTDOWN_DELAY_MS {delay:?} + \
             SHUTDOWN_GRACE_MS {grace:?} + {STOP_MARGIN_MS} ms"
        )),
    }
}

/// Every rule broken, as sentences; empty when the manifests keep them. `local`: the overlay for
/// `podman kube play`, which runs only some kinds.
pub fn violations(objects: &[Object], local: bool) -> Vec<String> {
    let mut bad = Vec::new();
    let api_setting = |key: &str| -> Option<i64> {
        setting(config(objects, "order-api-env"), key).and_then(|v| v.parse().ok())
    };
    let (delay_ms, grace_ms) = (
        api_setting("SHUTDOWN_DELAY_MS"),
        api_setting("SHUTDOWN_GRACE_MS"),
    );
    let lock_wait_ms = api_setting("MIGRATION_LOCK_WAIT_MS");
    let mut resources: Vec<(&str, Option<&ResourceRequirements>)> = Vec::new();
    for api in APIS {
        let Some(d) = objects.iter().find_map(|o| match o {
            Object::Deployment(d) if name(&d.metadata) == api => Some(d),
            _ => None,
        }) else {
            bad.push(format!("no Deployment {api}"));
            continue;
        };
        let Some(spec) = pod(d) else {
            bad.push(format!("{api}: no pod spec"));
            continue;
        };
        let Some(c): Option<&Container> = spec.containers.first() else {
            bad.push(format!("{api}: no container"));
            continue;
        };
        let r = c.resources.as_ref();
        let (req, lim) = (
            r.and_then(|r| r.requests.as_ref()),
            r.and_then(|r| r.limits.as_ref()),
        );
        let complete = lim.is_some_and(|l| l.contains_key("cpu") && l.contains_key("memory"));
        if req != lim || !complete {
            bad.push(format!(
                "{api}: not Guaranteed — requests = limits with cpu and memory needed, got {req:?} / {lim:?}"
            ));
        }
        resources.push((api, r));
        if probe_path(c.readiness_probe.as_ref()) != Some("/ready") {
            bad.push(format!("{api}: readiness probe is not GET /ready"));
        }
        if probe_path(c.liveness_probe.as_ref()) != Some("/health") {
            bad.push(format!("{api}: liveness probe is not GET /health"));
        }
        probe_timings(api, c, lock_wait_ms, &mut bad);
        bad.extend(grace_period(api, spec, delay_ms, grace_ms));
    }
    if let [(a, ra), (b, rb)] = resources[..]
        && ra != rb
    {
        bad.push(format!(
            "{a} and {b} do not get the same resources: {ra:?} vs {rb:?}"
        ));
    }
    for o in objects {
        if let Object::Job(j) = o
            && name(&j.metadata) == "loadgen"
        {
            let spec = j.spec.as_ref();
            let shards: Option<i32> =
                setting(config(objects, "loadgen-settings"), "SHARDS").and_then(|v| v.parse().ok());
            let (completions, parallelism) = (
                spec.and_then(|s| s.completions),
                spec.and_then(|s| s.parallelism),
            );
            if spec.and_then(|s| s.completion_mode.as_deref()) != Some("Indexed") {
                bad.push("Job loadgen is not Indexed (its index is the shard)".to_owned());
            }
            if completions != shards || parallelism != shards {
                bad.push(format!(
                    "Job loadgen: completions {completions:?} and parallelism {parallelism:?} \
                     must equal SHARDS {shards:?}"
                ));
            }
        }
        let podman_runs = matches!(
            o,
            Object::ConfigMap(_) | Object::Secret(_) | Object::Deployment(_) | Object::Pvc(_)
        );
        if local && !podman_runs {
            bad.push("the local overlay holds a kind podman kube play does not run".to_owned());
        }
    }
    bad
}
