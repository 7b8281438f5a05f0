//! A frozen path to the database is bounded by the API itself: every answer arrives within the
//! client deadline (`DB_STATEMENT_TIMEOUT_MS` + `DB_CLIENT_MARGIN_MS`, after at most
//! `DB_POOL_TIMEOUT_MS` of waiting for a connection) as 503 `database_unavailable`, and once the
//! path thaws every charge made before the freeze ends as exactly one order. The path is frozen
//! by a proxy that stops forwarding with its sockets open (`testkit::freezable_database`), as the
//! lab freezes its proxy: the server's `statement_timeout` never sees the statement, and the kernel
//! acknowledges what the API sends, so keepalives never fire. Run against both APIs.
//!
//! `FROZEN_FOR_SECS` (default 4) sets how long the path stays frozen; the test prints the longest
//! answer seen during the freeze.

use std::time::{Duration, Instant};

use mock_deps::MockConfig;
use order_core::plumbing::settings::CommonSettings;
use testkit::{
    Api, TOKEN, TestApp, assert_money_balances, contract_tests, eventually, fast_recovery,
    freezable_database, valid_order,
};

contract_tests!(a_frozen_database_answers_503_within_the_client_deadline_and_every_charge_settles);

const STATEMENT_TIMEOUT_MS: u64 = 1000;
const CLIENT_MARGIN_MS: u64 = 500;
/// How long the gateway takes to charge the order whose persist meets the freeze.
const CHARGE_MS: u64 = 1500;
/// Scheduling on a shared test machine.
const SLACK: Duration = Duration::from_secs(1);

/// Recovery within the test, a gateway slow enough to freeze the path while it charges, and the
/// client deadline under test.
fn settings(s: &mut CommonSettings) {
    fast_recovery(s);
    s.deps_timeout_ms = 3000;
    // The floor: 2 × DEPS_TIMEOUT_MS + DB_POOL_TIMEOUT_MS.
    s.lease_ms = 2 * s.deps_timeout_ms + s.db_pool_timeout_ms;
    s.db_statement_timeout_ms = STATEMENT_TIMEOUT_MS;
    s.db_client_margin_ms = CLIENT_MARGIN_MS;
}

/// The longest a request may wait for the database: a connection, then one call.
fn database_bound() -> Duration {
    let mut s = CommonSettings::new("", "");
    settings(&mut s);
    s.db_pool_timeout() + s.db_client_deadline().expect("a statement timeout is set")
}

/// Posts an order; its status, error code and how long the answer took. A request left without
/// an answer fails the test (after `bound` and a few seconds more) rather than hanging it.
async fn timed_order(app: &TestApp, reference: &str, bound: Duration) -> (u16, String, Duration) {
    let started = Instant::now();
    let answer = tokio::time::timeout(
        bound + Duration::from_secs(5),
        app.post_order(TOKEN, &valid_order(reference)),
    )
    .await;
    let Ok(response) = answer else {
        panic!("{reference}: no answer within {:?}", started.elapsed());
    };
    let status = response.status().as_u16();
    let took = started.elapsed();
    let json: serde_json::Value = response.json().await.unwrap_or_default();
    let code = json["error"].as_str().unwrap_or_default().to_owned();
    (status, code, took)
}

async fn key_state(app: &TestApp, reference_id: &str) -> Option<String> {
    sqlx::query_scalar("SELECT state FROM idempotency_keys WHERE reference_id = $1")
        .bind(reference_id)
        .fetch_optional(&app.pool)
        .await
        .unwrap()
}

fn frozen_for() -> Duration {
    let secs = std::env::var("FROZEN_FOR_SECS").map_or(4, |v| v.parse().expect("whole seconds"));
    Duration::from_secs(secs)
}

async fn a_frozen_database_answers_503_within_the_client_deadline_and_every_charge_settles(
    api: Api,
) {
    let mut proxy = None;
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        settings(s);
        proxy = Some(freezable_database(s));
    })
    .await;
    let proxy = proxy.unwrap();
    let bound = database_bound() + SLACK;
    let (status, _, _) = timed_order(&app, "before-freeze", bound).await;
    assert_eq!(status, 201);

    // One order meets the freeze at its persist, after the gateway charged it: the path freezes
    // while the charge is in flight (its key is CHARGING, as the test's own pool sees).
    let mut mocks = MockConfig::instant();
    mocks.payment.latency_ms = CHARGE_MS;
    app.deps.set_config(mocks);
    let charged = {
        let app_client = app.client.clone();
        let url = format!("{}/orders", app.address);
        tokio::spawn(async move {
            let started = Instant::now();
            let response = app_client
                .post(url)
                .header("Authorization", TOKEN)
                .json(&valid_order("charged-then-frozen"))
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let json: serde_json::Value = response.json().await.unwrap_or_default();
            (
                status,
                json["error"].as_str().unwrap_or_default().to_owned(),
                started.elapsed(),
            )
        })
    };
    eventually(10, "the order's key CHARGING", || async {
        key_state(&app, "charged-then-frozen").await.as_deref() == Some("CHARGING")
    })
    .await;
    proxy.set_frozen(true);
    let frozen_at = Instant::now();
    app.deps.set_config(MockConfig::instant());

    // Orders sent while frozen: a burst, then one after another until the freeze ends.
    let mut longest = Duration::ZERO;
    let burst = (0..4).map(|i| {
        let app = &app;
        async move { timed_order(app, &format!("frozen-burst-{i}"), bound).await }
    });
    let mut answers = futures_util::future::join_all(burst).await;
    let mut i = 0;
    while frozen_at.elapsed() < frozen_for() {
        answers.push(timed_order(&app, &format!("frozen-{i}"), bound).await);
        i += 1;
    }
    for (status, code, took) in &answers {
        assert_eq!((*status, code.as_str()), (503, "database_unavailable"));
        assert!(*took <= bound, "answered after {took:?}, bound {bound:?}");
        longest = longest.max(*took);
    }
    let (status, code, took) = charged.await.unwrap();
    assert_eq!((status, code.as_str()), (503, "database_unavailable"));
    let charged_bound = Duration::from_millis(CHARGE_MS) + bound;
    assert!(
        took <= charged_bound,
        "the charged order answered after {took:?}"
    );
    println!(
        "{api:?}: longest answer during a {:?} freeze: {} ms over {} orders (bound {} ms); \
         the order frozen at its persist: {} ms, its charge taking {CHARGE_MS} ms",
        frozen_for(),
        longest.as_millis(),
        answers.len(),
        bound.as_millis(),
        took.as_millis(),
    );

    proxy.set_frozen(false);
    // The API serves orders again, and recovery settles the charge the freeze interrupted: one
    // order for it (its persist may even have reached the database after the thaw), never a void.
    eventually(20, "an order placed after the thaw", || async {
        let (status, _, _) = timed_order(&app, "after-thaw", bound).await;
        status == 201
    })
    .await;
    eventually(30, "the interrupted charge settled", || async {
        key_state(&app, "charged-then-frozen").await.as_deref() == Some("COMPLETED")
    })
    .await;
    assert_money_balances(&app).await;
    let orders = app.count("orders").await;
    assert_eq!(
        orders, 3,
        "before-freeze, charged-then-frozen and after-thaw"
    );
}
