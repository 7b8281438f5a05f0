//! Money is never lost: every charge ends as exactly one order or one void — when the database
//! fails after the charge, when the gateway charges and then errs, when nobody retries. Run
//! against both APIs, with a short lease and a fast recovery loop so that recovery happens within
//! the test.

use mock_deps::MockConfig;
use sqlx::Connection;
use testkit::{
    Api, TOKEN, TestApp, assert_money_balances, contract_tests, eventually, fast_recovery,
    valid_order,
};

contract_tests!(
    database_refusing_after_the_charge_is_recovered_into_one_order,
    charged_then_500_is_found_by_recovery,
    a_retry_resumes_a_charging_key_without_risk_or_a_second_charge,
    an_uncharged_key_is_voided_at_the_gateway_and_released,
    an_order_that_cannot_be_made_has_its_charge_voided,
);

/// The key's state and stored status.
async fn key_state(app: &TestApp) -> (String, Option<i32>) {
    sqlx::query_as("SELECT state, response_status FROM idempotency_keys")
        .fetch_one(&app.pool)
        .await
        .expect("one key")
}

async fn settled(app: &TestApp) -> bool {
    key_state(app).await.0 == "COMPLETED"
}

async fn database_refusing_after_the_charge_is_recovered_into_one_order(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.payment.latency_ms = 800;
    let app = TestApp::spawn_with(api, mocks, fast_recovery).await;
    let body = valid_order("db-gone-1");
    let request = tokio::spawn({
        let (client, url) = (app.client.clone(), format!("{}/orders", app.address));
        let body = body.clone();
        async move {
            let r = client
                .post(url)
                .header("Authorization", TOKEN)
                .json(&body)
                .send()
                .await
                .unwrap();
            (r.status(), r.json::<serde_json::Value>().await.unwrap())
        }
    });
    eventually(10, "the payment call", || async {
        app.deps.stats().payment.in_flight == 1
    })
    .await;
    // While the gateway charges, the database starts refusing the API.
    switch_connections(&app, false).await;
    let (status, json) = request.await.unwrap();
    assert_eq!(
        (status.as_u16(), json["error"].as_str()),
        (503, Some("database_unavailable"))
    );
    assert_eq!(app.deps.ledger().charges, 1, "the gateway did charge");
    switch_connections(&app, true).await;

    // Nobody retries: recovery turns the charge into the order.
    eventually(20, "recovery to complete the key", || settled(&app)).await;
    assert_eq!(app.count("orders").await, 1);
    assert_money_balances(&app).await;
    let metrics = app.get("/metrics", None).await.text().await.unwrap();
    assert!(
        metrics.contains(r#"recovery_actions_total{action="completed"} 1"#),
        "{metrics}"
    );

    // The client's late retry gets the 201 recovery stored, and nothing is charged again.
    let retry = app.post_order(TOKEN, &body).await;
    assert_eq!(retry.status(), 201);
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    let order: serde_json::Value = retry.json().await.unwrap();
    let stored: String = sqlx::query_scalar("SELECT id FROM orders")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(order["id"], stored.as_str());
    assert_eq!(app.deps.ledger().charges, 1);
}

async fn charged_then_500_is_found_by_recovery(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.payment.charged_error_rate = 1.0;
    let app = TestApp::spawn_with(api, mocks, fast_recovery).await;
    let response = app.post_order(TOKEN, &valid_order("c500-1")).await;
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "1");
    let json: serde_json::Value = response.json().await.unwrap();
    assert_eq!(json["dependency"], "payment");
    assert_eq!(key_state(&app).await.0, "CHARGING");
    assert_eq!(app.deps.ledger().charges, 1);

    eventually(20, "recovery to complete the key", || settled(&app)).await;
    assert_eq!(key_state(&app).await, ("COMPLETED".to_owned(), Some(201)));
    assert_eq!(app.count("orders").await, 1);
    assert_money_balances(&app).await;
}

async fn a_retry_resumes_a_charging_key_without_risk_or_a_second_charge(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.payment.charged_error_rate = 1.0;
    // No recovery pass during the test: the client's retry does the work.
    let app = TestApp::spawn_with(api, mocks, |s| {
        fast_recovery(s);
        s.reconcile_interval_ms = 600_000;
    })
    .await;
    let body = valid_order("resume-1");
    assert_eq!(app.post_order(TOKEN, &body).await.status(), 503);
    let risk_calls = app.deps.stats().risk.requests;
    assert_eq!(risk_calls, 1);

    mocks.payment.charged_error_rate = 0.0;
    app.deps.set_config(mocks);
    let retry = app.post_order(TOKEN, &body).await;
    assert_eq!(retry.status(), 201);
    assert!(retry.headers().get("idempotent-replayed").is_none());
    assert_eq!(
        app.deps.stats().risk.requests,
        1,
        "risk is never asked twice"
    );
    let ledger = app.deps.ledger();
    assert_eq!((ledger.charges, ledger.distinct_keys), (1, 1));
    assert_eq!(
        ledger.replayed_requests, 1,
        "the retry asked under the same key"
    );
    assert_eq!(app.count("orders").await, 1);
    assert_money_balances(&app).await;
}

async fn an_uncharged_key_is_voided_at_the_gateway_and_released(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.payment.error_rate = 1.0;
    let app = TestApp::spawn_with(api, mocks, fast_recovery).await;
    let body = valid_order("uncharged-1");
    assert_eq!(app.post_order(TOKEN, &body).await.status(), 503);
    // Recovery asks the gateway (never saw the key), voids the key there so that a late request
    // under it could never charge, and releases it.
    eventually(20, "recovery to release the key", || async {
        key_state(&app).await.0 == "IN_PROGRESS"
    })
    .await;
    let ledger = app.deps.ledger();
    assert_eq!((ledger.charges, ledger.tombstones), (0, 1));

    mocks.payment.error_rate = 0.0;
    app.deps.set_config(mocks);
    assert_eq!(app.post_order(TOKEN, &body).await.status(), 201);
    let keys: Vec<String> = app
        .deps
        .ledger_with_detail()
        .charges_by_key
        .unwrap()
        .into_keys()
        .collect();
    assert_eq!(
        keys.len(),
        2,
        "a voided key and the new charge's key: {keys:?}"
    );
    assert_money_balances(&app).await;
}

async fn an_order_that_cannot_be_made_has_its_charge_voided(api: Api) {
    let app = TestApp::spawn_with(api, MockConfig::instant(), fast_recovery).await;
    // The database refuses this order for good (as a bad migration or a bug would): the charge
    // is made, the order never can be.
    sqlx::query("ALTER TABLE orders ADD CONSTRAINT refuse_void_1 CHECK (reference_id <> 'void-1')")
        .execute(&app.pool)
        .await
        .unwrap();
    let body = valid_order("void-1");
    let first = app.post_order(TOKEN, &body).await;
    assert_eq!(
        first.status(),
        500,
        "a row the database refuses is a bug, not bad input"
    );
    assert_eq!(app.deps.ledger().charges, 1);

    eventually(20, "recovery to void the charge", || settled(&app)).await;
    assert_eq!(key_state(&app).await, ("COMPLETED".to_owned(), Some(422)));
    let ledger = app.deps.ledger();
    assert_eq!((ledger.charges, ledger.voids), (1, 1));
    assert_eq!(app.count("orders").await, 0);
    assert_money_balances(&app).await;
    let replay = app.post_order(TOKEN, &body).await;
    assert_eq!(replay.status(), 422);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let json: serde_json::Value = replay.json().await.unwrap();
    assert_eq!(json["error"], "order_voided");
}

/// Makes the test database refuse (and drop) every connection, or accept them again.
async fn switch_connections(app: &TestApp, allow: bool) {
    let name = app.db.name();
    let mut admin = sqlx::PgConnection::connect(&testkit::admin_url())
        .await
        .unwrap();
    let sql = format!(r#"ALTER DATABASE "{name}" ALLOW_CONNECTIONS {allow}"#);
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(&mut admin)
        .await
        .unwrap();
    if !allow {
        let kill = format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = '{name}' AND pid <> pg_backend_pid()"
        );
        sqlx::query(sqlx::AssertSqlSafe(kill))
            .execute(&mut admin)
            .await
            .unwrap();
    }
}
