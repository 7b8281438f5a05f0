//! Fairness invariants of `docker-compose.yml` and `Dockerfile` (the lab in containers).
//!
//! The comparison is only meaningful if the two APIs differ in their execution model alone: same
//! limits, same settings, same health checks and dependencies. `violations` lists every broken
//! invariant; one test requires the real files to have none, another perturbs them in memory and
//! requires each perturbation to be caught (so the checks cannot silently pass).

use std::path::Path;

use serde_yaml_ng::Value;

mod compose_rules;
use compose_rules::{duration_ms, violations, with_defaults};

fn files() -> (Value, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let compose = std::fs::read_to_string(root.join("docker-compose.yml")).unwrap();
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).unwrap();
    (parse(&compose), dockerfile)
}

/// Parses and resolves anchors and merge keys; merged mappings may hold merge keys themselves.
fn parse(text: &str) -> Value {
    let mut value: Value = serde_yaml_ng::from_str(text).unwrap();
    for _ in 0..5 {
        value.apply_merge().unwrap();
    }
    value
}

#[test]
fn compose_file_keeps_the_comparison_fair() {
    let (compose, dockerfile) = files();
    let bad = violations(&compose, &dockerfile);
    assert!(
        bad.is_empty(),
        "fairness invariants broken:\n{}",
        bad.join("\n")
    );
}

/// The key the compose file requires comes from a `.env` that git ignores; the committed example
/// holds no key.
#[test]
fn the_hash_key_comes_from_an_uncommitted_env_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ignored = std::fs::read_to_string(root.join(".gitignore")).unwrap();
    assert!(ignored.lines().any(|l| l == "/.env"), ".env is not ignored");
    let example = std::fs::read_to_string(root.join(".env.example")).unwrap();
    let keys: Vec<&str> = example
        .lines()
        .filter_map(|l| l.strip_prefix("REQUEST_HASH_KEY="))
        .collect();
    assert_eq!(keys, [""], "the example names the key and gives none");
}

#[test]
fn interpolation_defaults() {
    assert_eq!(with_defaults("${LAB_OUT:-/reports}"), "/reports");
    assert_eq!(with_defaults("a${X:-b}c${Y}d"), "abcd");
    assert_eq!(with_defaults("ramp-300"), "ramp-300");
}

#[test]
fn compose_durations() {
    assert_eq!(duration_ms("30s"), Some(30_000));
    assert_eq!(duration_ms("1m30s"), Some(90_000));
    assert_eq!(duration_ms("1500ms"), Some(1500));
    assert_eq!(duration_ms("30"), None);
    assert_eq!(duration_ms("soon"), None);
}

#[test]
fn every_perturbation_is_caught() {
    type Perturb = fn(&mut Value, &mut String);
    let cases: [(&str, Perturb); 20] = [
        ("mem_limit", |c, _| {
            c["services"]["reactive-api"]["mem_limit"] = "2g".into()
        }),
        ("cpus", |c, _| {
            c["services"]["blocking-api"]["cpus"] = 2.0.into()
        }),
        ("cpus, its own variable", |c, _| {
            c["services"]["reactive-api"]["cpus"] = "${REACTIVE_CPUS:-1.0}".into()
        }),
        ("cpus, another default", |c, _| {
            c["services"]["blocking-api"]["cpus"] = "${API_CPUS:-2.0}".into()
        }),
        ("mem_limit fixed", |c, _| {
            c["services"]["blocking-api"]["mem_limit"] = "1g".into()
        }),
        ("swap beyond the memory", |c, _| {
            c["services"]["reactive-api"]["memswap_limit"] = "2g".into()
        }),
        ("DB_POOL_SIZE", |c, _| {
            c["services"]["reactive-api"]["environment"]["DB_POOL_SIZE"] = "50".into()
        }),
        ("health check", |c, _| {
            c["services"]["blocking-api"]
                .as_mapping_mut()
                .unwrap()
                .remove("healthcheck");
        }),
        ("mock-deps healthy", |c, _| {
            c["services"]["reactive-api"]["depends_on"]["mock-deps"]["condition"] =
                "service_started".into()
        }),
        ("max_connections", |c, _| {
            c["services"]["postgres"]["command"][2] = "max_connections=300".into()
        }),
        ("`lab` profile", |c, _| {
            c["services"]["loadtest"]
                .as_mapping_mut()
                .unwrap()
                .remove("profiles");
        }),
        ("builds loadtest", |_, d| *d = d.replace("-p loadtest", "")),
        ("RUST_LOG differs", |c, _| {
            c["services"]["blocking-api"]["environment"]["RUST_LOG"] = "info".into()
        }),
        ("fixed nofile", |c, _| {
            c["services"]["mock-deps"]["ulimits"] =
                serde_yaml_ng::from_str("nofile: 65536").unwrap()
        }),
        ("open files not raised", |_, d| {
            *d = d.replace(r#"ENTRYPOINT ["raise-nofile"]"#, "")
        }),
        ("a default hash key", |c, _| {
            c["services"]["reactive-api"]["environment"]["REQUEST_HASH_KEY"] =
                "${REQUEST_HASH_KEY:-order-lab-compose-request-hash-key}".into()
        }),
        ("a fixed hash key", |c, _| {
            c["services"]["blocking-api"]["environment"]["REQUEST_HASH_KEY"] =
                "order-lab-compose-request-hash-key".into()
        }),
        ("a grace period the delay outlasts", |c, _| {
            for api in ["blocking-api", "reactive-api"] {
                c["services"][api]["stop_grace_period"] = "25s".into()
            }
        }),
        ("a delay the grace period does not cover", |c, _| {
            for api in ["blocking-api", "reactive-api"] {
                c["services"][api]["environment"]["SHUTDOWN_DELAY_MS"] = "8001".into()
            }
        }),
        ("default profile", |c, _| {
            c["services"]["loadtest"]["command"][9] = "${LAB_PROFILE:-ramp-150}".into()
        }),
    ];
    let (compose, dockerfile) = files();
    for (what, perturb) in cases {
        let (mut c, mut d) = (compose.clone(), dockerfile.clone());
        perturb(&mut c, &mut d);
        assert!(
            !violations(&c, &d).is_empty(),
            "perturbing {what} went unnoticed"
        );
    }
}
