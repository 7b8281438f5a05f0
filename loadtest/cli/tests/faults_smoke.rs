//! The fault plan's outages end to end at a tiny scale: reactive-api started by the lab at a
//! constant 10 orders/s for 8 s, 1 ms mocks, and from 2 s on, for 3 s each, PostgreSQL frozen
//! (through the lab's proxy), 20 slow uploads and the payment gateway unreachable. Checks that
//! each outage begins and ends as an event, that the freeze was felt (an answer waited for the
//! thaw), and that the money balances once recovery has settled what the gateway left
//! `CHARGING`. A second run slows the broker instead (`broker-ack`, the API publishing through
//! its outbox to a lab-started nats-server behind a proxy) and checks that the relay fell behind
//! during the slowdown and that every order's event reached the stream once it drained.
//!
//! Needs the service binaries like `lab_smoke.rs` (`scripts/test.sh` builds them).

use lab_results::RunResults;
use lab_results::faults::{
    BROKER_ACK_LABEL, DB_FREEZE_LABEL, GATEWAY_DOWN_LABEL, SLOW_UPLOADS_LABEL,
};

mod common;
#[path = "common/smoke_run.rs"]
mod smoke_run;
use smoke_run::SmokeRun;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outages_begin_and_end_on_time_and_the_money_balances() {
    let (run, r) = lab(
        "faults",
        &[
            "--request-timeout-s",
            "30",
            "--faults",
            "db-freeze@2+3,slow-uploads=20@2+3,gateway-down@2+3",
            "--max-loop-lag-ms",
            "0",
        ],
    )
    .await;
    let labels: Vec<&str> = r.timeline.iter().map(|e| e.label.as_str()).collect();
    for (begins, ends) in [
        (DB_FREEZE_LABEL, "PostgreSQL thawed"),
        (SLOW_UPLOADS_LABEL, "slow-upload connections closed"),
        (GATEWAY_DOWN_LABEL, "payment gateway reachable again"),
    ] {
        let at = |prefix: &str| {
            r.timeline
                .iter()
                .find(|e| e.label.starts_with(prefix))
                .unwrap_or_else(|| panic!("no {prefix:?} event in {labels:?}"))
                .t
        };
        let (from, to) = (at(begins), at(ends));
        assert!(
            (1.9..2.6).contains(&from) && (to - from - 3.0).abs() < 0.6,
            "{begins}: {from} → {to}"
        );
    }
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("slow uploads: 20 of 20 connections")),
        "{labels:?}"
    );
    // Orders arriving in the freeze waited for the thaw, longer than the 1 s a hung payment costs
    // (a bound on the API's side shorter than 2 s would end them sooner).
    assert!(
        r.summary.latency_ms.max >= 2000.0,
        "{:?}",
        r.summary.latency_ms
    );
    let m = r.money.as_ref().expect("money counted");
    assert!(m.balanced() && m.charging_left == 0, "{m:?}");
    run.clean_up().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowed_broker_leaves_a_backlog_that_drains_into_the_stream() {
    if let Err(e) = labkit::nats::find_nats_server() {
        labkit::skip::unless_ci(format!(
            "the broker-ack smoke test needs nats-server ({e:#})"
        ));
        return;
    }
    let (run, r) = lab("broker", &["--faults", "broker-ack=2000@2+3"]).await;
    assert_eq!(r.config.settings().events_mode.as_deref(), Some("outbox"));
    let at = |prefix: &str| r.timeline.iter().find(|e| e.label.starts_with(prefix));
    let (from, to) = (
        at(BROKER_ACK_LABEL).expect("the slowdown's event").t,
        at("broker acknowledgements prompt again")
            .expect("the slowdown's end")
            .t,
    );
    assert!((1.9..2.6).contains(&from) && (to - from - 3.0).abs() < 0.6);
    let b = r.broker.expect("events counted");
    // 10 orders/s against 2 s acknowledgements: the rows of the pass under way at the least.
    assert!(
        b.backlog_at_outage_end.is_some_and(|n| n > 0),
        "the relay never fell behind: {b:?}"
    );
    assert!(b.every_event_delivered() && b.events_orphaned == 0, "{b:?}");
    let m = r.money.as_ref().expect("money counted");
    assert!(m.balanced() && m.charging_left == 0, "{m:?}");
    assert_eq!((b.orders, b.nats_timeout_ms), (m.orders, 10_000), "{b:?}");
    assert!(b.orders >= 60, "{b:?}");
    run.clean_up().await;
}

/// One smoke run: reactive-api at a constant 10 orders/s for 8 s, 1 ms mocks, short timeouts and
/// recovery; `extra` adds the faults and what they need.
async fn lab(name: &str, extra: &[&str]) -> (SmokeRun, RunResults) {
    let run = SmokeRun::new(name).await;
    let output = run
        .lab(&["--profile", "constant-10-8", "--warmup-s", "1"])
        .args(["--latency", "seller=1,risk=1,pay=1"])
        .args(["--deps-timeout-ms", "1000", "--db-pool-timeout-ms", "1000"])
        .args(["--lease-ms", "4000", "--reconcile-interval-ms", "500"])
        .args(extra)
        .output()
        .expect("running loadtest lab");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "lab failed: {stderr}");
    let r = run.results();
    (run, r)
}
