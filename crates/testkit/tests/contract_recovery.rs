//! Recovery turns a good charge into a void only when the order is known to be unmakeable, never
//! races a live attempt into a void, never spins, and a restored database never re-issues a
//! gateway key. Run against both APIs. Keys recovery must settle come either from a real request
//! (the gateway charges, then answers 500) or are written straight into the database, with a
//! stub gateway (`testkit::StubGateway`) where mock-deps' honest ledger cannot play the fault.

use std::time::Duration;

use mock_deps::MockConfig;
use order_core::domain::contract::CreateOrderRequest;
use order_core::domain::order::PendingOrder;
use order_core::domain::request_hash::RequestHashKey;
use order_core::plumbing::settings::CommonSettings;
use testkit::{
    Api, StubGateway, TOKEN, TestApp, assert_money_balances, contract_tests, eventually,
    fast_recovery, valid_order,
};

contract_tests!(
    transient_database_errors_during_recovery_never_void_a_charge,
    an_order_already_made_for_a_charge_is_never_voided,
    a_stale_claim_cannot_void_a_live_charge,
    a_void_that_did_not_take_effect_leaves_the_key_charging,
    recovery_backs_off_when_the_gateway_is_down,
    a_restored_database_never_replays_an_old_charge,
    an_expired_card_retry_of_a_charging_key_is_in_progress_not_refused,
);

async fn key_state(app: &TestApp, reference_id: &str) -> (String, Option<i32>) {
    sqlx::query_as("SELECT state, response_status FROM idempotency_keys WHERE reference_id = $1")
        .bind(reference_id)
        .fetch_one(&app.pool)
        .await
        .expect("the key")
}

async fn action_count(app: &TestApp, action: &str) -> f64 {
    let name = format!(r#"recovery_actions_total{{action="{action}"}}"#);
    app.metric(&name).await.unwrap_or(0.0)
}

/// Writes a key left in `CHARGING` (lease expired) with the pending order of `valid_order`.
async fn insert_charging_key(app: &TestApp, reference_id: &str, gateway_key: &str) {
    let body = serde_json::to_vec(&valid_order(reference_id)).unwrap();
    let order = CreateOrderRequest::parse(&body)
        .unwrap()
        .validate(&RequestHashKey::new(b"any key for a stored row"))
        .unwrap();
    let pending = PendingOrder::new("acme", &order);
    sqlx::query(
        "INSERT INTO idempotency_keys (seller_id, reference_id, request_hash, state, attempt, \
         lease_expires_at, gateway_key, amount, pending_order) \
         VALUES ('acme', $1, 'h', 'CHARGING', 1, now() - interval '1 second', $2, $3, $4)",
    )
    .bind(reference_id)
    .bind(gateway_key)
    .bind(pending.amount)
    .bind(pending.to_json())
    .execute(&app.pool)
    .await
    .unwrap();
}

/// The gateway's answer about a charge of `amount` that is live (`SUCCESS`).
fn live_charge(amount: i64) -> serde_json::Value {
    serde_json::json!({"status": "SUCCESS", "amount": amount, "code": "c-1", "charged": true})
}

async fn transient_database_errors_during_recovery_never_void_a_charge(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.payment.charged_error_rate = 1.0;
    let app = TestApp::spawn_with(api, mocks, fast_recovery).await;
    // Every order insert fails as a deadlock would: a failure that passes, whatever the
    // server's message language. SQLSTATE, not text, must say so.
    for sql in [
        "CREATE FUNCTION deadlock() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '40P01'; END $$",
        "CREATE TRIGGER deadlock BEFORE INSERT ON orders FOR EACH ROW EXECUTE FUNCTION deadlock()",
    ] {
        sqlx::query(sql).execute(&app.pool).await.unwrap();
    }
    let body = valid_order("transient-1");
    assert_eq!(app.post_order(TOKEN, &body).await.status(), 503);
    assert_eq!(app.deps.ledger().charges, 1);
    // Waits for either outcome, so that the assertion below says which one it was.
    eventually(20, "recovery to defer or void the key", || async {
        action_count(&app, "deferred").await >= 1.0 || app.deps.ledger().voids > 0
    })
    .await;
    assert_eq!(
        app.deps.ledger().voids,
        0,
        "a transient failure voided a charge"
    );
    assert_eq!(key_state(&app, "transient-1").await.0, "CHARGING");

    // The database recovers: the key's next pass (after its back-off) makes the order.
    sqlx::query("DROP TRIGGER deadlock ON orders")
        .execute(&app.pool)
        .await
        .unwrap();
    eventually(20, "recovery to make the order", || async {
        key_state(&app, "transient-1").await == ("COMPLETED".to_owned(), Some(201))
    })
    .await;
    assert_eq!(app.deps.ledger().voids, 0);
    assert_money_balances(&app).await;
}

async fn an_order_already_made_for_a_charge_is_never_voided(api: Api) {
    let app = TestApp::spawn_with(api, MockConfig::instant(), fast_recovery).await;
    assert_eq!(
        app.post_order(TOKEN, &valid_order("made-1")).await.status(),
        201
    );
    // The key is back in CHARGING with an amount the gateway did not charge (a restore, a hand
    // edit): the gateway's answer alone would void the charge — but its order exists.
    sqlx::query(
        "UPDATE idempotency_keys SET state = 'CHARGING', amount = amount + 1, \
         pending_order = '{}', lease_expires_at = now() - interval '1 second'",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    eventually(20, "recovery to skip or void the key", || async {
        action_count(&app, "superseded").await >= 1.0 || app.deps.ledger().voids > 0
    })
    .await;
    let ledger = app.deps.ledger();
    assert_eq!(
        (ledger.charges, ledger.voids),
        (1, 0),
        "the order's charge was voided"
    );
    assert_eq!(app.count("orders").await, 1);
    assert_money_balances(&app).await;
}

async fn a_stale_claim_cannot_void_a_live_charge(api: Api) {
    // Recovery's lookup takes 1.5 s; meanwhile another attempt takes the key over.
    let stub = StubGateway::start(200, live_charge(1), Duration::from_millis(1500)).await;
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        fast_recovery(s);
        s.deps_timeout_ms = 2000;
        s.lease_ms = 5000;
        s.deps_url = stub.url().to_owned();
    })
    .await;
    insert_charging_key(&app, "stale-1", "acme:stale-1:k:1").await;
    eventually(10, "recovery's lookup", || async { stub.lookups() >= 1 }).await;
    sqlx::query("UPDATE idempotency_keys SET attempt = attempt + 1")
        .execute(&app.pool)
        .await
        .unwrap();
    eventually(
        10,
        "recovery to give up its stale claim or void",
        || async { action_count(&app, "superseded").await >= 1.0 || stub.voids() > 0 },
    )
    .await;
    assert_eq!(stub.voids(), 0, "a stale claim voided the charge");
    assert_eq!(key_state(&app, "stale-1").await.0, "CHARGING");
}

async fn a_void_that_did_not_take_effect_leaves_the_key_charging(api: Api) {
    // The gateway reports a charge of another amount (so recovery voids it) and answers the void
    // with the charge still live.
    let stub = StubGateway::start(200, live_charge(1), Duration::ZERO).await;
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        fast_recovery(s);
        s.deps_url = stub.url().to_owned();
    })
    .await;
    insert_charging_key(&app, "void-noop-1", "acme:void-noop-1:k:1").await;
    eventually(10, "recovery's void", || async { stub.voids() >= 1 }).await;
    eventually(10, "recovery to defer or complete the key", || async {
        action_count(&app, "deferred").await >= 1.0
            || key_state(&app, "void-noop-1").await.0 == "COMPLETED"
    })
    .await;
    assert_eq!(
        key_state(&app, "void-noop-1").await,
        ("CHARGING".to_owned(), None),
        "order_voided stored over a live charge"
    );
}

async fn recovery_backs_off_when_the_gateway_is_down(api: Api) {
    let down = serde_json::json!({"error": "unavailable"});
    let stub = StubGateway::start(503, down, Duration::ZERO).await;
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        fast_recovery(s);
        s.deps_url = stub.url().to_owned();
    })
    .await;
    // More keys than one claim takes (100), none of which can be settled.
    for i in 0..150 {
        insert_charging_key(&app, &format!("down-{i}"), &format!("acme:down-{i}:k:1")).await;
    }
    eventually(20, "every key tried once", || async {
        stub.lookups() >= 150
    })
    .await;
    let start = stub.lookups();
    // The window the lookups are counted over.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let in_three_seconds = stub.lookups() - start;
    // Back-off 1 s, then 2 s: each key is tried at most twice more in 3 s. Without it, a pass
    // re-claims its own deferred keys and never ends: thousands of lookups a second.
    assert!(
        in_three_seconds <= 2 * 150,
        "{in_three_seconds} lookups in 3 s for 150 keys"
    );
    eventually(10, "the deferred keys gauge", || async {
        app.metric("recovery_deferred_keys").await == Some(150.0)
    })
    .await;
    // The loop goes on passing (every RECONCILE_INTERVAL_MS) while every key waits: two more
    // passes come, within a bound that a loaded machine's scheduling cannot reach.
    let passes_before = app.metric("recovery_passes_total").await.unwrap();
    eventually(5, "two more recovery passes", || async {
        app.metric("recovery_passes_total").await.unwrap() - passes_before >= 2.0
    })
    .await;
}

async fn a_restored_database_never_replays_an_old_charge(api: Api) {
    let app = TestApp::spawn_with(api, MockConfig::instant(), fast_recovery).await;
    let first = app.post_order(TOKEN, &valid_order("restored-1")).await;
    assert_eq!(first.status(), 201);
    // The database is restored from a backup taken before that order: its rows are gone, the
    // gateway still has its charge.
    for table in ["order_items", "orders", "customers", "idempotency_keys"] {
        sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM {table}")))
            .execute(&app.pool)
            .await
            .unwrap();
    }
    let mut other = valid_order("restored-1");
    other["items"][0]["value"] = serde_json::json!(20000);
    other["payment"]["amount"] = serde_json::json!(25000);
    let second = app.post_order(TOKEN, &other).await;
    assert_eq!(second.status(), 201);
    let order: serde_json::Value = second.json().await.unwrap();
    assert_eq!(order["amount"], 25000);
    let ledger = app.deps.ledger();
    assert_eq!(
        (ledger.charges, ledger.distinct_keys),
        (2, 2),
        "the new order was charged under the old order's gateway key"
    );
}

async fn an_expired_card_retry_of_a_charging_key_is_in_progress_not_refused(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.payment.charged_error_rate = 1.0;
    let mut hash_settings = CommonSettings::new("", "");
    let app = TestApp::spawn_with(api, mocks, |s| {
        fast_recovery(s);
        s.reconcile_interval_ms = 600_000;
        hash_settings.request_hash_key = s.request_hash_key.clone();
        hash_settings.app_env = s.app_env;
    })
    .await;
    let mut body = valid_order("expired-1");
    assert_eq!(app.post_order(TOKEN, &body).await.status(), 503);
    assert_eq!(key_state(&app, "expired-1").await.0, "CHARGING");
    // The card expires while the charge is unfinished: the stored request is this request as it
    // was sent then — the same body, but we can only send today's, so the row takes its hash.
    body["payment"]["payment_method"]["card"]["expiration_date"] = "01-2020".into();
    let key = RequestHashKey::from_settings(&hash_settings).unwrap();
    let expired = CreateOrderRequest::parse(&serde_json::to_vec(&body).unwrap())
        .unwrap()
        .validate(&key)
        .unwrap();
    sqlx::query(
        "UPDATE idempotency_keys SET request_hash = $1, \
         lease_expires_at = now() - interval '1 second'",
    )
    .bind(&expired.request_hash)
    .execute(&app.pool)
    .await
    .unwrap();
    let retry = app.post_order(TOKEN, &body).await;
    let status = retry.status();
    let json: serde_json::Value = retry.json().await.unwrap();
    assert_eq!(
        (status.as_u16(), json["error"].as_str()),
        (409, Some("request_in_progress")),
        "a terminal refusal while the charge is unfinished"
    );
}
