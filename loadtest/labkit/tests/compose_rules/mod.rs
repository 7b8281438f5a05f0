//! The fairness invariants checked by `tests/compose.rs` (a module, not a test target).

use serde_yaml_ng::{Mapping, Value};

const APIS: [&str; 2] = ["blocking-api", "reactive-api"];
/// The settings both APIs must receive with identical values.
const SHARED: [&str; 7] = [
    "DATABASE_URL",
    "DEPS_URL",
    "DB_POOL_SIZE",
    "DB_POOL_TIMEOUT_MS",
    "DEPS_TIMEOUT_MS",
    "HTTP_WORKERS",
    "RUST_LOG",
];
/// Each API's pod, from the environment with the source experiment's container as default: both
/// APIs read the same variables.
pub const API_CPUS: &str = "${API_CPUS:-1.0}";
pub const API_MEMORY: &str = "${API_MEMORY:-1g}";
/// Connections PostgreSQL keeps beyond twice the pools: the lab's own, psql, superusers.
const CONNECTION_MARGIN: u64 = 50;
/// What the API's stop takes beyond `SHUTDOWN_DELAY_MS` + `SHUTDOWN_GRACE_MS`, ms: actix rounds
/// the grace up to a whole second, then the process exits (as `k8s_rules::STOP_MARGIN_MS`).
const STOP_MARGIN_MS: u64 = 2000;

fn service<'a>(compose: &'a Value, name: &str) -> &'a Value {
    &compose["services"][name]
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

fn env(compose: &Value, name: &str) -> Mapping {
    service(compose, name)["environment"]
        .as_mapping()
        .cloned()
        .unwrap_or_default()
}

fn env_var(compose: &Value, api: &str, key: &str) -> String {
    text(&service(compose, api)["environment"][key])
}

/// `REQUEST_HASH_KEY` as the file must give it: required from the environment or `.env`, with no
/// default (a key in a public file is no secret).
pub const REQUIRED_HASH_KEY: &str = "${REQUEST_HASH_KEY:?";

/// The broken rules, each said in a line; empty when the file keeps them all.
pub fn violations(compose: &Value, dockerfile: &str) -> Vec<String> {
    let mut c = Checks::default();
    api_services(compose, &mut c);
    identical_apis(compose, &mut c);
    postgres(compose, &mut c);
    mock_deps(compose, &mut c);
    lab_service(compose, &mut c);
    open_files(compose, dockerfile, &mut c);
    image(dockerfile, &mut c);
    c.broken
}

/// The rules broken so far.
#[derive(Default)]
struct Checks {
    broken: Vec<String>,
}

impl Checks {
    fn check(&mut self, ok: bool, what: String) {
        if !ok {
            self.broken.push(what);
        }
    }
}

/// Each API's pod, hash key, health check, dependencies, address, shared settings and stop.
fn api_services(compose: &Value, c: &mut Checks) {
    for (api, port) in APIS.iter().zip(["8081", "8082"]) {
        let s = service(compose, api);
        // The pod from the environment, today's by default, and no swap beyond its memory.
        c.check(
            text(&s["cpus"]) == API_CPUS,
            format!("{api}: cpus must be {API_CPUS}"),
        );
        c.check(
            text(&s["mem_limit"]) == API_MEMORY,
            format!("{api}: mem_limit must be {API_MEMORY}"),
        );
        c.check(
            text(&s["memswap_limit"]) == API_MEMORY,
            format!("{api}: memswap_limit must be {API_MEMORY} (no swap)"),
        );
        let key = env_var(compose, api, "REQUEST_HASH_KEY");
        c.check(
            key.starts_with(REQUIRED_HASH_KEY) && with_defaults(&key).is_empty(),
            format!(
                "{api}: REQUEST_HASH_KEY must be required ({REQUIRED_HASH_KEY}…}}), no default"
            ),
        );
        let health = s["healthcheck"]["test"]
            .as_sequence()
            .cloned()
            .unwrap_or_default();
        let health: Vec<String> = health.iter().map(text).collect();
        let probe = format!("http://127.0.0.1:{port}/ready");
        c.check(
            health.contains(&probe),
            format!("{api}: health check must GET {probe}"),
        );
        for dep in ["postgres", "mock-deps"] {
            let condition = text(&s["depends_on"][dep]["condition"]);
            c.check(
                condition == "service_healthy",
                format!("{api}: must wait for {dep} healthy"),
            );
        }
        let bind = env_var(compose, api, "BIND_ADDR");
        c.check(
            bind == format!("0.0.0.0:{port}"),
            format!("{api}: BIND_ADDR {bind}"),
        );
        for key in SHARED {
            c.check(
                !env_var(compose, api, key).is_empty(),
                format!("{api}: {key} missing"),
            );
        }
        let stop = stop_grace(compose, api);
        c.check(stop.is_none(), stop.unwrap_or_default());
    }
}

/// The two APIs' definitions the same but for what must differ.
fn identical_apis(compose: &Value, c: &mut Checks) {
    // Identical settings: every variable either API gets, except the per-API ones.
    let (eb, er) = (env(compose, APIS[0]), env(compose, APIS[1]));
    let keys: std::collections::BTreeSet<String> = eb.keys().chain(er.keys()).map(text).collect();
    for key in keys {
        let (b, r) = (
            eb.get(key.as_str()).map(text),
            er.get(key.as_str()).map(text),
        );
        let allowed = key == "BIND_ADDR" || (key == "BLOCKING_THREADS" && r.is_none());
        c.check(
            allowed || b == r,
            format!("{key} differs: blocking {b:?}, reactive {r:?}"),
        );
    }
    // Everything else in the two definitions identical too (limits, ulimits, health timing…).
    let strip = |s: &Value| {
        let mut m = s.as_mapping().cloned().unwrap_or_default();
        for k in ["command", "environment", "ports"] {
            m.remove(k);
        }
        if let Some(h) = m.get_mut("healthcheck").and_then(Value::as_mapping_mut) {
            h.remove("test");
        }
        m
    };
    let (blocking, reactive) = (service(compose, APIS[0]), service(compose, APIS[1]));
    c.check(
        strip(blocking) == strip(reactive),
        "the API services differ beyond command/env/ports".into(),
    );
}

/// PostgreSQL's health check, and connections for both pools twice over.
fn postgres(compose: &Value, c: &mut Checks) {
    let postgres = service(compose, "postgres");
    let pg_health = serde_yaml_ng::to_string(&postgres["healthcheck"]["test"]).unwrap();
    c.check(
        pg_health.contains("pg_isready"),
        "postgres: health check must use pg_isready".into(),
    );
    let pools: u64 = APIS
        .iter()
        .map(|a| {
            env_var(compose, a, "DB_POOL_SIZE")
                .parse()
                .unwrap_or(u64::MAX / 4)
        })
        .sum();
    let max_connections = max_connections(postgres).unwrap_or(100); // PostgreSQL's default
    c.check(
        max_connections >= 2 * pools + CONNECTION_MARGIN,
        format!(
            "postgres: max_connections {max_connections} < 2 × pools {pools} + {CONNECTION_MARGIN}"
        ),
    );
}

/// mock-deps not starved, checked for health, at the seed's latencies.
fn mock_deps(compose: &Value, c: &mut Checks) {
    let mock = service(compose, "mock-deps");
    c.check(
        mock["cpus"].as_f64().is_none_or(|c| c >= 2.0),
        "mock-deps must not be CPU-starved".into(),
    );
    c.check(
        mock["healthcheck"].is_mapping(),
        "mock-deps: no health check".into(),
    );
    for (key, ms) in [
        ("SELLER_LATENCY_MS", "200"),
        ("RISK_LATENCY_MS", "1000"),
        ("PAY_LATENCY_MS", "1000"),
    ] {
        c.check(
            text(&mock["environment"][key]) == ms,
            format!("mock-deps: {key} must be {ms}"),
        );
    }
}

/// The lab's own service: behind its profile, the seed's run, its reports mounted.
fn lab_service(compose: &Value, c: &mut Checks) {
    let lab = service(compose, "loadtest");
    let profiles: Vec<String> = lab["profiles"]
        .as_sequence()
        .map(|s| s.iter().map(text).collect())
        .unwrap_or_default();
    c.check(
        profiles == ["lab"],
        format!("loadtest must be behind the `lab` profile, has {profiles:?}"),
    );
    // As run with no LAB_* variables set: the seed's profile, whole length, into ./reports.
    let command: Vec<String> = lab["command"]
        .as_sequence()
        .map(|s| s.iter().map(|v| with_defaults(&text(v))).collect())
        .unwrap_or_default();
    let database_url = env_var(compose, APIS[0], "DATABASE_URL");
    let expected = [
        "loadtest",
        "lab",
        "--targets",
        "blocking=http://blocking-api:8081,reactive=http://reactive-api:8082",
        "--deps-url",
        "http://mock-deps:9090",
        "--database-url",
        &database_url,
        "--profile",
        "ramp-300",
        "--duration-scale",
        "1",
        "--out",
        "/reports",
    ];
    c.check(command == expected, format!("loadtest command {command:?}"));
    let volumes = serde_yaml_ng::to_string(&lab["volumes"]).unwrap();
    c.check(
        volumes.contains("./reports:/reports"),
        "loadtest: ./reports must be mounted at /reports".into(),
    );
}

/// Open files: no fixed limit, the soft one raised to the hard one by the image.
fn open_files(compose: &Value, dockerfile: &str, c: &mut Checks) {
    // Open files: no fixed limit that a host with a lower hard limit refuses (podman here: 20,000
    // against 65,536); the image raises the soft limit to whatever hard limit the engine grants.
    for (name, s) in compose["services"].as_mapping().into_iter().flatten() {
        c.check(
            s["ulimits"]["nofile"].is_null(),
            format!(
                "{}: fixed ulimits nofile (a host may refuse it)",
                text(name)
            ),
        );
    }
    c.check(
        dockerfile.contains(r#"ulimit -n "$(ulimit -Hn)""#)
            && dockerfile.contains(r#"ENTRYPOINT ["raise-nofile"]"#),
        "Dockerfile: the entrypoint must raise the open-file soft limit to the hard one".into(),
    );
}

/// The image: a release, locked build of every binary on the pinned bases.
fn image(dockerfile: &str, c: &mut Checks) {
    let build = dockerfile
        .lines()
        .find(|l| l.contains("cargo build"))
        .unwrap_or_default();
    c.check(
        build.contains("--release") && build.contains("--locked"),
        "Dockerfile: release, locked build".into(),
    );
    for bin in ["blocking-api", "reactive-api", "mock-deps", "loadtest"] {
        c.check(
            build.contains(&format!("-p {bin}")),
            format!("Dockerfile does not build {bin}"),
        );
        c.check(
            dockerfile.contains(&format!("/out/{bin}")),
            format!("Dockerfile does not ship {bin}"),
        );
    }
    for needle in [
        "FROM rust:1.95-bookworm AS builder",
        "FROM debian:bookworm-slim",
        "libpq5",
        "curl",
    ] {
        c.check(
            dockerfile.contains(needle),
            format!("Dockerfile lacks {needle}"),
        );
    }
}

/// `docker stop`'s grace against the API's stop: after SIGTERM the API serves new connections for
/// `SHUTDOWN_DELAY_MS`, then lets the orders in flight finish within `SHUTDOWN_GRACE_MS`; the
/// engine's SIGKILL must come after both, with [`STOP_MARGIN_MS`] to spare.
fn stop_grace(compose: &Value, api: &str) -> Option<String> {
    let ms = |key: &str| env_var(compose, api, key).parse::<u64>().ok();
    let period = text(&service(compose, api)["stop_grace_period"]);
    let (delay, grace, period_ms) = (
        ms("SHUTDOWN_DELAY_MS"),
        ms("SHUTDOWN_GRACE_MS"),
        duration_ms(&period),
    );
    match (delay, grace, period_ms) {
        (Some(d), Some(g), Some(p)) if p >= d + g + STOP_MARGIN_MS => None,
        _ => Some(format!(
            "{api}: stop_grace_period {period:?} must cover SHUTDOWN_DELAY_MS {delay:?} + \
             SHUTDOWN_GRACE_MS {grace:?} + {STOP_MARGIN_MS} ms"
        )),
    }
}

/// A compose duration (`30s`, `1m30s`, `500ms`) in ms; `None` if it is not one.
pub fn duration_ms(text: &str) -> Option<u64> {
    let (mut total, mut rest) = (0u64, text.trim());
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        let n: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        total += n * match &rest[..unit] {
            "h" => 3_600_000,
            "m" => 60_000,
            "s" => 1000,
            "ms" => 1,
            _ => return None,
        };
        rest = &rest[unit..];
    }
    (total > 0).then_some(total)
}

/// Compose's interpolation with nothing set: `${NAME:-default}` → `default`, `${NAME}` → ``.
pub fn with_defaults(value: &str) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let Some(end) = rest[at..].find('}') else {
            break;
        };
        let inner = &rest[at + 2..at + end];
        out.push_str(inner.split_once(":-").map_or("", |(_, default)| default));
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    out
}

fn max_connections(postgres: &Value) -> Option<u64> {
    let command = serde_yaml_ng::to_string(&postgres["command"]).ok()?;
    let at = command.find("max_connections=")? + "max_connections=".len();
    command[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}
