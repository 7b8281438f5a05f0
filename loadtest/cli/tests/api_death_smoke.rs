//! An API that dies mid-run is named, and its money settled: `loadtest lab` runs reactive-api at a
//! constant 20 orders/s for 8 s with payments slow enough (1.5 s) that orders are always
//! between their charge and their persist, and this test `kill -9`s the API from outside — not
//! through the fault plan, so the lab is not told — once it has answered. The lab must see the
//! death, record how and when (`api_exit`), start the API again for its recovery before the money
//! is counted, balance the money, and say in the verdict and the trust strip of `summary.md` that the API died.
//!
//! Needs the service binaries like `lab_smoke.rs` (`scripts/test.sh` builds them).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sqlx::Connection;

mod common;
#[path = "common/smoke_run.rs"]
mod smoke_run;
use smoke_run::SmokeRun;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_killed_mid_run_is_named_and_its_money_settled() {
    let run = SmokeRun::new("death").await;
    // The kill waits for orders in flight, read in the run's own database.
    let Some(url) = run.database_url() else {
        return labkit::skip::unless_ci("TEST_DATABASE_URL is not set (scripts/test.sh sets it)");
    };
    let mut cmd = run.lab(&["--profile", "constant-20-8", "--warmup-s", "1"]);
    cmd.args(["--latency", "seller=1,risk=1,pay=1500"])
        .args(["--deps-timeout-ms", "3000", "--db-pool-timeout-ms", "1000"])
        .args(["--lease-ms", "8000", "--reconcile-interval-ms", "500"])
        .args(["--request-timeout-s", "10"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let lab = cmd.spawn().expect("starting loadtest lab");
    // The API is the lab's child named reactive-api; kill it once the measured part has begun and
    // orders are between their charge and their persist: 30 keys in the database (at 20/s, a
    // second or more into the measured part whether or not the warm-up's are still there), some
    // of them CHARGING.
    let api = wait_for_child(lab.id(), "reactive-api", Duration::from_secs(120));
    wait_for_charging(url, 30, Duration::from_secs(120)).await;
    Command::new("kill")
        .args(["-9", &api.to_string()])
        .status()
        .expect("kill -9");
    let output = lab.wait_with_output().expect("the lab ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "lab failed: {stderr}");
    let r = run.results();
    let exit = r
        .api_exit
        .as_ref()
        .unwrap_or_else(|| panic!("no api_exit; {stderr}"));
    assert_eq!(exit.signal, Some(9), "{exit:?}");
    assert!(
        !exit.oom_killed,
        "killed by the test, not the kernel: {exit:?}"
    );
    assert!(exit.restarted_for_recovery);
    assert!(
        (0.5..8.0).contains(&exit.t_s),
        "died inside the run: {exit:?}"
    );
    let money = r.money.as_ref().expect("money counted");
    assert!(money.balanced(), "{money:?}");
    assert_eq!(
        money.charging_left, 0,
        "recovery settled every key: {money:?}"
    );
    assert!(
        r.timeline
            .iter()
            .any(|e| e.label.contains("killed by signal 9")),
        "{:?}",
        r.timeline
    );
    let summary = std::fs::read_to_string(run.out.join("summary.md")).expect("summary.md");
    assert!(
        summary.contains("reactive-api died mid-run") && summary.contains("an API DIED mid-run"),
        "{summary}"
    );
    assert!(
        summary.contains("started again for its recovery"),
        "{summary}"
    );
    run.clean_up().await;
}

/// Returns once the database at `url` holds at least `keys` idempotency keys, one of them
/// `CHARGING`; panics past `within`.
async fn wait_for_charging(url: &str, keys: i64, within: Duration) {
    let start = Instant::now();
    // The database exists before the lab starts; its tables appear with the APIs' migrations.
    let mut conn = sqlx::PgConnection::connect(url)
        .await
        .expect("connecting to the run's database");
    loop {
        let counts: Option<(i64, i64)> = sqlx::query_as(
            "SELECT count(*), count(*) FILTER (WHERE state = 'CHARGING') FROM idempotency_keys",
        )
        .fetch_one(&mut conn)
        .await
        .ok();
        if counts.is_some_and(|(all, charging)| all >= keys && charging > 0) {
            return;
        }
        assert!(
            start.elapsed() < within,
            "no {keys} keys with one CHARGING within {within:?}: {counts:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The pid of `parent`'s descendant whose command name is `name`, once it exists.
fn wait_for_child(parent: u32, name: &str, within: Duration) -> u32 {
    let start = Instant::now();
    loop {
        let found = labkit::procstat::tree_pids(parent)
            .unwrap_or_default()
            .into_iter()
            .find(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == name)
            });
        if let Some(pid) = found {
            return pid;
        }
        assert!(
            start.elapsed() < within,
            "no {name} under the lab within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
