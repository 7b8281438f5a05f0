//! `loadtest bench` end to end at a tiny scale: reactive-api, then blocking-api against the first
//! run as `--baseline`, mocks at 0 ms, 4 clients, a 1 s warm-up and a 2 s window each, on the
//! bench's own PostgreSQL (pg_stat_statements preloaded). Checks that the files are written, that
//! the counters add up (orders, SQL statements and HTTP calls per order near the 3 + 3 an order
//! costs, CPU and memory read) and that the baseline section names both cells.
//!
//! Needs the `blocking-api`, `reactive-api` and `mock-deps` binaries (`scripts/test.sh` builds
//! them) and PostgreSQL's server binaries.

use std::path::Path;
use std::process::Command;

use lab_results::bench::BenchResults;

fn bench(out: &Path, api: &str, baseline: Option<&Path>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_loadtest"));
    // The test runner already built the services: the bench must not run cargo itself.
    cmd.env_remove("CARGO");
    cmd.args(["bench", "--apis", api, "--mocks", "0ms"])
        .args(["--seconds", "2", "--warmup", "1", "--clients", "4"])
        .args(["--db-pool-size", "5", "--db-durability", "off"])
        .arg("--out")
        .arg(out);
    if let Some(b) = baseline {
        cmd.arg("--baseline").arg(b);
    }
    let output = cmd.output().expect("running loadtest bench");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "bench failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    stdout
}

#[test]
fn bench_measures_each_api_and_compares_with_a_baseline() {
    for name in ["blocking-api", "reactive-api", "mock-deps"] {
        if let Err(e) = labkit::process::find_binary(name) {
            panic!(
                "bench smoke test needs the service binaries ({e:#}); scripts/test.sh builds them, \
                 or run `cargo build -p blocking-api -p reactive-api -p mock-deps`"
            );
        }
    }
    let root = std::env::temp_dir().join(format!("loadtest-bench-smoke-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (first, second) = (root.join("first"), root.join("second"));

    let stdout = bench(&first, "reactive-api", None);
    assert!(stdout.contains("## Per order"), "{stdout}");
    let r = BenchResults::load(first.join("bench.json")).unwrap();
    assert_eq!(r.cells.len(), 1);
    let c = &r.cells[0];
    assert_eq!(
        (c.api.as_str(), c.mocks.as_str(), c.clients),
        ("reactive-api", "0ms", 4)
    );
    let w = &c.window;
    assert!(w.seconds >= 1.9, "{w:?}");
    assert!(w.orders > 0, "no order in the window: {w:?}");
    let p = c.per_order.as_ref().expect("per-order figures");
    assert!(p.api_cpu_us > 0.0 && p.api_user_us > 0.0, "{p:?}");
    assert!(p.context_switches > 0.0, "{p:?}");
    // Orders still in flight at either end of a short window shift these a little.
    let calls = p.http_calls.expect("mock-deps counts requests");
    assert!((1.5..=4.5).contains(&calls), "HTTP calls per order {calls}");
    let sql = p.sql_statements.expect("pg_stat_statements is preloaded");
    assert!(
        (1.5..=6.0).contains(&sql),
        "SQL statements per order {sql}: {:?}",
        c.statements
    );
    assert!(
        !c.statements
            .iter()
            .any(|s| s.query.contains("loadtest bench")),
        "the bench's own queries are left out: {:?}",
        c.statements
    );
    assert!(p.postgres_cpu_us.is_some() && p.mock_deps_cpu_us.is_some());
    assert!(p.generator_cpu_us.is_some_and(|g| g > 0.0));
    assert!(c.memory.idle_rss_bytes > 0 && c.memory.peak_rss_bytes >= c.memory.idle_rss_bytes);
    assert!(c.memory.samples >= 2, "{:?}", c.memory);
    let created = c.outcomes.get("201").copied().unwrap_or(0);
    assert!(
        created >= w.orders,
        "{created} 201s, {} orders in the window",
        w.orders
    );
    assert!(
        r.targets
            .iter()
            .any(|t| t.name.starts_with("reactive-api CPU per order"))
    );
    assert!(first.join("bench.md").is_file());

    let stdout = bench(&second, "blocking-api", Some(&first.join("bench.json")));
    assert!(
        stdout.contains("## Change against the baseline"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| reactive-api | 0ms | orders/s |") && stdout.contains("not measured now"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| blocking-api | 0ms | orders/s |"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(second.join("bench.md")).unwrap();
    assert!(md.contains("## Change against the baseline"));
    let b = BenchResults::load(second.join("bench.json")).unwrap();
    assert_eq!(
        b.cells[0].memory.busy_kind,
        lab_results::bench::BUSY_THREADS
    );
    let _ = std::fs::remove_dir_all(&root);
}
