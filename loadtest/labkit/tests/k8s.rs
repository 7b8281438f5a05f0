//! deploy/k8s, offline: each overlay renders with `kubectl kustomize`, every rendered object parses
//! into the `k8s-openapi` type of its kind (Kubernetes 1.32, kubectl's) with no field left unread
//! (`serde_ignored`: a misspelt or misplaced field would otherwise vanish silently), and the lab's
//! rules hold: both APIs Guaranteed (requests = limits) with the same resources, probes on `/ready`
//! and `/health` with timings that fit them (timeouts of 1 s or more, liveness giving up later than
//! readiness, a startup window above `MIGRATION_LOCK_WAIT_MS`), a grace period that covers
//! `SHUTDOWN_DELAY_MS` + `SHUTDOWN_GRACE_MS` + a margin, the generator an Indexed Job with as
//! many shards as its settings say, and the `local` overlay within what `podman kube play` runs.
//! Needs kubectl (the machine's image has it); without it the test says so and passes, or fails
//! under CI (`labkit::skip`).

use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Secret, Service};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

mod k8s_rules;
use k8s_rules::{Object, violations};

fn k8s_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/k8s")
}

/// `kubectl kustomize` of an overlay; `None` when kubectl is not installed.
fn render(overlay: &str) -> Option<String> {
    let dir = k8s_dir().join("overlays").join(overlay);
    let out = match Command::new("kubectl").arg("kustomize").arg(&dir).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("running kubectl: {e}"),
    };
    assert!(
        out.status.success(),
        "kubectl kustomize {}:\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

fn documents(yaml: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|doc| Value::deserialize(doc).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

/// `value` as a `T`, or every field `T` does not know.
fn strict<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    let mut unknown = Vec::new();
    let parsed = serde_ignored::deserialize(value, |path| unknown.push(path.to_string()))
        .map_err(|e| e.to_string())?;
    if unknown.is_empty() {
        Ok(parsed)
    } else {
        Err(format!("unknown fields: {}", unknown.join(", ")))
    }
}

fn object(v: Value) -> Result<Object, String> {
    let kind = v["kind"].as_str().unwrap_or_default().to_owned();
    let name = v["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let o = match kind.as_str() {
        "ConfigMap" => strict::<ConfigMap>(v).map(Object::ConfigMap),
        "Secret" => strict::<Secret>(v).map(Object::Secret),
        "Service" => strict::<Service>(v).map(Object::Service),
        "Deployment" => strict::<Deployment>(v).map(Object::Deployment),
        "StatefulSet" => strict::<StatefulSet>(v).map(Object::StatefulSet),
        "Job" => strict::<Job>(v).map(Object::Job),
        "PersistentVolumeClaim" => strict::<PersistentVolumeClaim>(v).map(Object::Pvc),
        other => Err(format!("a kind the lab does not use: {other:?}")),
    };
    o.map_err(|e| format!("{kind} {name}: {e}"))
}

fn objects(yaml: &str) -> Result<Vec<Object>, String> {
    documents(yaml).into_iter().map(object).collect()
}

#[test]
fn every_overlay_renders_into_known_fields_and_keeps_the_labs_rules() {
    for overlay in ["ci", "cluster", "cluster-events", "cluster-pod", "local"] {
        let Some(yaml) = render(overlay) else {
            labkit::skip::unless_ci("kubectl is not installed, deploy/k8s was not rendered");
            return;
        };
        let objects = objects(&yaml).unwrap_or_else(|e| panic!("{overlay}: {e}"));
        let bad = violations(&objects, overlay == "local");
        assert!(bad.is_empty(), "{overlay}:\n{}", bad.join("\n"));
    }
}

/// The pod each overlay gives the APIs, as rendered: an overlay's patch that selects nothing
/// would leave the base's 1 CPU / 1 GiB without a word.
#[test]
fn each_overlay_gives_both_apis_its_pod() {
    for (overlay, cpu, memory) in [
        ("cluster", "1", "1Gi"),
        ("ci", "500m", "512Mi"),
        ("cluster-pod", "125m", "128Mi"),
    ] {
        let Some(yaml) = render(overlay) else {
            labkit::skip::unless_ci("kubectl is not installed, deploy/k8s was not rendered");
            return;
        };
        for api in ["blocking-api", "reactive-api"] {
            let d = documents(&yaml)
                .into_iter()
                .find(|v| v["kind"] == "Deployment" && v["metadata"]["name"] == api)
                .unwrap_or_else(|| panic!("{overlay}: no {api}"));
            let r = &d["spec"]["template"]["spec"]["containers"][0]["resources"];
            for side in ["requests", "limits"] {
                assert_eq!(
                    (r[side]["cpu"].as_str(), r[side]["memory"].as_str()),
                    (Some(cpu), Some(memory)),
                    "{overlay}: {api} {side}"
                );
            }
        }
    }
}

#[test]
fn a_misspelt_field_or_an_unequal_api_is_caught() {
    let Some(yaml) = render("ci") else {
        labkit::skip::unless_ci("kubectl is not installed, deploy/k8s was not rendered");
        return;
    };
    let docs = documents(&yaml);
    let is_api = |v: &Value| v["metadata"]["name"] == "reactive-api" && v["kind"] == "Deployment";
    let mut misspelt = docs.clone();
    let api = misspelt.iter_mut().find(|v| is_api(v)).unwrap();
    let container = &mut api["spec"]["template"]["spec"]["containers"][0];
    let resources = container["resources"].take();
    container["resource"] = resources;
    let err = misspelt
        .into_iter()
        .map(object)
        .collect::<Result<Vec<_>, _>>();
    assert!(
        err.is_err_and(|e| e.contains("resource")),
        "a misspelt field passed"
    );

    let mut unequal = docs;
    let api = unequal.iter_mut().find(|v| is_api(v)).unwrap();
    api["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "2".into();
    let objects: Vec<Object> = unequal.into_iter().map(|v| object(v).unwrap()).collect();
    let bad = violations(&objects, false);
    assert!(
        bad.iter().any(|b| b.contains("requests = limits")),
        "{bad:?}"
    );
    assert!(bad.iter().any(|b| b.contains("same resources")), "{bad:?}");
}

#[test]
fn probe_timings_that_would_restart_a_serving_or_starting_replica_are_caught() {
    let Some(yaml) = render("ci") else {
        labkit::skip::unless_ci("kubectl is not installed, deploy/k8s was not rendered");
        return;
    };
    let mut docs = documents(&yaml);
    let is_api = |v: &Value| v["metadata"]["name"] == "blocking-api" && v["kind"] == "Deployment";
    let api = docs.iter_mut().find(|v| is_api(v)).unwrap();
    let container = &mut api["spec"]["template"]["spec"]["containers"][0];
    // Liveness as quick to give up as readiness, a startup window of 10 s against a 30 s lock wait.
    container["livenessProbe"]["periodSeconds"] =
        container["readinessProbe"]["periodSeconds"].clone();
    container["livenessProbe"]["failureThreshold"] =
        container["readinessProbe"]["failureThreshold"].clone();
    container["startupProbe"]["failureThreshold"] = 5.into();
    let objects: Vec<Object> = docs.into_iter().map(|v| object(v).unwrap()).collect();
    let bad = violations(&objects, false);
    assert!(
        bad.iter()
            .any(|b| b.starts_with("blocking-api: liveness gives up")),
        "{bad:?}"
    );
    assert!(
        bad.iter()
            .any(|b| b.starts_with("blocking-api: a startup probe must wait")),
        "{bad:?}"
    );
    assert!(
        !bad.iter().any(|b| b.starts_with("reactive-api")),
        "{bad:?}"
    );
}

/// The settings both APIs read, in rendered documents.
fn api_env(docs: &mut [Value]) -> &mut Value {
    let env = docs
        .iter_mut()
        .find(|v| v["kind"] == "ConfigMap" && v["metadata"]["name"] == "order-api-env")
        .unwrap();
    &mut env["data"]
}

/// A grace period that the delay and the drain would outlast: the kubelet would kill a pod still
/// serving or draining.
#[test]
fn a_grace_period_shorter_than_delay_and_drain_is_caught() {
    let Some(yaml) = render("ci") else {
        labkit::skip::unless_ci("kubectl is not installed, deploy/k8s was not rendered");
        return;
    };
    let docs = documents(&yaml);
    let bad_after = |perturb: &dyn Fn(&mut [Value])| {
        let mut docs = docs.clone();
        perturb(&mut docs);
        let objects: Vec<Object> = docs.into_iter().map(|v| object(v).unwrap()).collect();
        violations(&objects, false)
    };
    assert!(bad_after(&|_| {}).is_empty());
    // A delay that, with the drain, fills the 30 s: no margin left, in both APIs.
    let bad = bad_after(&|d| api_env(d)["SHUTDOWN_DELAY_MS"] = "8001".into());
    for api in ["blocking-api", "reactive-api"] {
        let prefix = format!("{api}: terminationGracePeriodSeconds");
        assert!(bad.iter().any(|b| b.starts_with(&prefix)), "{bad:?}");
    }
    // The 25 s that covered the drain alone: the delay's 5 s do not fit.
    let bad = bad_after(&|d| {
        let api = d
            .iter_mut()
            .find(|v| v["kind"] == "Deployment" && v["metadata"]["name"] == "reactive-api")
            .unwrap();
        api["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 25.into();
    });
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].contains("SHUTDOWN_DELAY_MS Some(5000)"), "{bad:?}");
    // A delay no longer said: the rule cannot hold, and says so.
    let bad = bad_after(&|d| {
        api_env(d)
            .as_object_mut()
            .unwrap()
            .remove("SHUTDOWN_DELAY_MS");
    });
    assert!(
        bad.iter().any(|b| b.contains("SHUTDOWN_DELAY_MS None")),
        "{bad:?}"
    );
}
