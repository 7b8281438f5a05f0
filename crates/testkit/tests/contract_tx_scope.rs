//! `DB_TX_SCOPE`: `short` holds no connection while a dependency is called; `request` holds one
//! for the whole request (the "connection held across a remote call" anti-pattern). Observed
//! through each API's own pool gauges during a slow payment call.

use std::time::{Duration, Instant};

use futures_util::future::join_all;
use mock_deps::MockConfig;
use order_core::plumbing::settings::TxScope;
use testkit::{Api, TOKEN, TestApp, contract_tests, valid_order};

contract_tests!(
    short_scope_holds_no_connection_during_a_remote_call,
    request_scope_holds_a_connection_across_the_remote_calls,
    request_scope_keeps_the_idempotency_guarantees,
    request_scope_rolls_back_and_releases_on_failure,
);

/// Sends an order with a slow gateway and reads `db_pool_connections_in_use` while the payment
/// call is in flight.
async fn connections_in_use_during_payment(api: Api, scope: TxScope) -> i64 {
    let mut mocks = MockConfig::instant();
    mocks.payment.latency_ms = 1500;
    let app = TestApp::spawn_with(api, mocks, |s| {
        s.db_tx_scope = scope;
        testkit::quiet_background(s);
    })
    .await;
    // The count below is the order's connections alone.
    app.after_the_start_up_pass().await;
    let request = tokio::spawn({
        let (client, url) = (app.client.clone(), format!("{}/orders", app.address));
        async move {
            let body = valid_order("scope-1");
            client
                .post(url)
                .header("Authorization", TOKEN)
                .json(&body)
                .send()
                .await
                .unwrap()
                .status()
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.deps.stats().payment.in_flight == 0 {
        assert!(Instant::now() < deadline, "the payment call never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let in_use = app
        .metric("db_pool_connections_in_use")
        .await
        .expect("db_pool_connections_in_use in /metrics") as i64;
    assert_eq!(
        app.deps.stats().payment.in_flight,
        1,
        "still inside the payment call"
    );
    assert_eq!(request.await.unwrap(), 201);
    assert_eq!(app.count("orders").await, 1);
    in_use
}

async fn short_scope_holds_no_connection_during_a_remote_call(api: Api) {
    assert_eq!(
        connections_in_use_during_payment(api, TxScope::Short).await,
        0
    );
}

async fn request_scope_holds_a_connection_across_the_remote_calls(api: Api) {
    assert_eq!(
        connections_in_use_during_payment(api, TxScope::Request).await,
        1
    );
}

async fn request_scope_keeps_the_idempotency_guarantees(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.payment.latency_ms = 200;
    let app = TestApp::spawn_with(api, mocks, |s| s.db_tx_scope = TxScope::Request).await;
    let body = valid_order("scope-race");
    let responses = join_all((0..10).map(|_| app.post_order(TOKEN, &body))).await;
    let statuses: Vec<u16> = responses.iter().map(|r| r.status().as_u16()).collect();
    let fresh = responses
        .iter()
        .filter(|r| r.status() == 201 && r.headers().get("idempotent-replayed").is_none())
        .count();
    assert_eq!(fresh, 1, "{statuses:?}");
    assert!(
        statuses.iter().all(|s| matches!(s, 201 | 409)),
        "{statuses:?}"
    );
    assert_eq!(app.count("orders").await, 1);
    assert_eq!(app.deps.ledger().charges, 1);
}

async fn request_scope_rolls_back_and_releases_on_failure(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.payment.error_rate = 1.0;
    let app = TestApp::spawn_with(api, mocks, |s| s.db_tx_scope = TxScope::Request).await;
    let body = valid_order("scope-fail");
    assert_eq!(app.post_order(TOKEN, &body).await.status(), 503);
    // The CHARGING mark was committed before the gateway call, whatever the scope; what came
    // after it was rolled back, and the lease ended so the retry may resume at once.
    let (state, expired): (String, bool) =
        sqlx::query_as("SELECT state, lease_expires_at <= now() FROM idempotency_keys")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((state.as_str(), expired), ("CHARGING", true));
    mocks.payment.error_rate = 0.0;
    app.deps.set_config(mocks);
    assert_eq!(app.post_order(TOKEN, &body).await.status(), 201);
    assert_eq!(app.deps.ledger().charges, 1);
}
