//! The lab end to end at a tiny scale: both APIs started by the lab (in cgroups where the host
//! allows), 1 ms mocks, `ramp-20` squeezed to ~5 s. Checks that every file is written and that
//! the counts reconcile: sent = completed, orders in the database = 201s, no key charged twice,
//! and that the money line balances (every charge is one order).
//!
//! Needs the `blocking-api`, `reactive-api` and `mock-deps` binaries: `scripts/test.sh` builds
//! them before the tests (`cargo test` alone builds only this package's binary). PostgreSQL: a fresh database on `TEST_DATABASE_URL`'s server
//! when it is set (so other tests' tables are never truncated), else the lab's ephemeral cluster.

use std::path::Path;
use std::process::Command;

use lab_results::{RunResults, Shedding};
use loadgen::gave_up::OrderKey;
use loadtest::gave_up::orders_after_give_up;
use sqlx::Connection;

mod common;
use common::{binaries_present, own_database};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lab_runs_both_apis_and_the_counts_reconcile() {
    if let Err(e) = binaries_present() {
        panic!(
            "lab smoke test needs the service binaries ({e}); scripts/test.sh builds them, or run \
             `cargo build -p blocking-api -p reactive-api -p mock-deps`"
        );
    }
    let out = std::env::temp_dir().join(format!("loadtest-smoke-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let db = match std::env::var("TEST_DATABASE_URL") {
        Ok(server) => Some(own_database(&server, "loadtest_smoke").await),
        Err(_) => None,
    };
    let stdout = run_lab(&out, db.as_ref().map(|(url, _, _)| url.as_str()));
    assert!(stdout.contains("report:"), "{stdout}");
    for file in [
        "report.html",
        "summary.md",
        "results-blocking-0.json",
        "results-reactive-0.json",
    ] {
        assert!(out.join(file).is_file(), "{file} missing");
    }
    for label in ["blocking", "reactive"] {
        let r = RunResults::load(out.join(format!("results-{label}-0.json"))).unwrap();
        run_reconciles(&out, label, &r);
    }
    report_shows_both_and_the_money(&out);
    if let Some((url, server, name)) = db {
        last_orders_count_by_key(&url).await;
        common::drop_database(&server, &name).await;
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// `loadtest lab` at the tiny scale into `out` (on `database_url` when given); its stdout.
fn run_lab(out: &Path, database_url: Option<&str>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_loadtest"));
    // The test runner already built the services: the lab must not run cargo itself.
    cmd.env_remove("CARGO");
    cmd.args([
        "lab",
        "--profile",
        "ramp-20",
        "--duration-scale",
        "0.05",
        "--warmup-s",
        "20",
    ])
    .args([
        "--latency",
        "seller=1,risk=1,pay=1",
        "--db-pool-size",
        "5",
        // Unoptimised services beside other tests on a shared machine: a descheduled API would
        // look CPU-saturated and refuse some of the 60 orders (the refusal has its own tests).
        "--max-loop-lag-ms",
        "0",
        "--no-progress",
    ])
    .arg("--out")
    .arg(out);
    if let Some(url) = database_url {
        cmd.args(["--database-url", url]);
    }
    let output = cmd.output().expect("running loadtest lab");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "lab failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    stdout.into_owned()
}

/// One API's run: its goose reports written, every arrival sent and answered with a 201, every
/// check held, the money balanced, the API's own admission settings recorded.
fn run_reconciles(out: &Path, label: &str, r: &RunResults) {
    for g in &r.goose_reports {
        assert!(
            Path::new(&out).join(g).is_file(),
            "goose report {g} missing"
        );
    }
    let s = &r.summary;
    assert_eq!(
        s.offered, 60,
        "{label}: ramp-20 × 0.05 schedules 15 + 30 + 15 arrivals"
    );
    assert_eq!(s.offered, s.sent + s.not_sent);
    assert_eq!(s.sent, s.completed);
    assert_eq!(
        s.ok, s.completed,
        "{label}: every valid order is a 201: {:?}",
        s.errors_by_kind
    );
    assert_eq!(r.invariants.len(), 10, "{:?}", r.invariants);
    for c in &r.invariants {
        assert_eq!(c.ok, Some(true), "{label}: {} — {}", c.name, c.detail);
    }
    // Money: every 201's charge, counted against the ledger once nothing is CHARGING.
    let m = r.money.as_ref().expect("money counted");
    assert_eq!(
        (
            m.charges,
            m.voids,
            m.orders,
            m.charges_without_order,
            m.orders_without_charge
        ),
        (s.ok, 0, s.ok, 0, 0),
        "{label}: {m:?}"
    );
    assert!(m.balanced() && m.charging_left == 0, "{label}: {m:?}");
    assert!(!r.seconds.is_empty());
    assert!(r.plateau.is_some());
    assert_eq!(r.littles_law.is_some(), label == "blocking");
    // Shedding on by default; the admission limit in force is the API's own, read back.
    assert_eq!(r.config.shedding, Some(Shedding::On));
    let max = if label == "blocking" { "200" } else { "4096" };
    assert_eq!(r.config.api_settings["MAX_IN_FLIGHT"], max);
    assert_eq!(r.config.api_settings["QUEUE_TIMEOUT_MS"], "100");
    let g = r.after_give_up.as_ref().expect("counted by the lab");
    assert_eq!((g.gave_up, g.orders), (0, Some(0)), "{}", g.detail);
}

/// The report names both APIs and their money.
fn report_shows_both_and_the_money(out: &Path) {
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("blocking-api") && html.contains("reactive-api"));
    assert!(html.contains("<section id=\"money\">"));
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for api in ["blocking-api", "reactive-api"] {
        let line = format!(
            "**Money** — {api}: 60 charges, 0 voids, 60 orders, 0 charges without order, 0 orders without charge"
        );
        assert!(md.contains(&line), "{md}");
    }
}

/// The last run's orders are still there: counting by key finds one of them, not a stranger.
async fn last_orders_count_by_key(url: &str) {
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let (seller_id, reference_id): (String, String) =
        sqlx::query_as("SELECT seller_id, reference_id FROM orders LIMIT 1")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    conn.close().await.ok();
    let stranger = OrderKey {
        seller_id: seller_id.clone(),
        reference_id: "never-sent".into(),
    };
    let keys = [
        OrderKey {
            seller_id,
            reference_id,
        },
        stranger,
    ];
    let g = orders_after_give_up(Some(url), &keys).await;
    assert_eq!((g.gave_up, g.orders), (2, Some(1)), "{}", g.detail);
}
