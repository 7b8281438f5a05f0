//! Data that does not grow for ever (`order_core::domain::retention`): a completed order's key drops its
//! stored answer after `KEY_RETENTION_DAYS` and a replay is then answered from the order's rows —
//! the same bytes, never a second charge; a sent outbox event is deleted after
//! `OUTBOX_RETENTION_HOURS`; the outbox's backlog gauge reads a bounded number of rows whatever
//! the backlog. Run against both APIs (the last on the statement both run).

use mock_deps::MockConfig;
use order_core::domain::sql;
use sqlx::{Connection, PgConnection};
use testkit::{
    Api, TOKEN, TestApp, TestDatabase, contract_tests, eventually, fast_recovery, valid_order,
};

contract_tests!(
    a_replay_past_key_retention_is_answered_from_the_order_and_never_charges,
    sent_outbox_events_are_deleted_after_their_retention,
);

async fn stored_body(app: &TestApp, reference_id: &str) -> Option<String> {
    sqlx::query_scalar("SELECT response_body FROM idempotency_keys WHERE reference_id = $1")
        .bind(reference_id)
        .fetch_one(&app.pool)
        .await
        .expect("the key")
}

/// Makes key `reference_id` look completed `days` days ago.
async fn completed_days_ago(app: &TestApp, reference_id: &str, days: i32) {
    sqlx::query(
        "UPDATE idempotency_keys SET updated_at = now() - make_interval(days => $2) \
         WHERE reference_id = $1",
    )
    .bind(reference_id)
    .bind(days)
    .execute(&app.pool)
    .await
    .expect("ageing a key");
}

async fn a_replay_past_key_retention_is_answered_from_the_order_and_never_charges(api: Api) {
    let app = TestApp::spawn_with(api, MockConfig::instant(), fast_recovery).await;
    let mut body = valid_order("kept-1");
    // Characters the rebuilt document must escape exactly as the stored one was.
    body["customer"]["full_name"] = "Ana \"Nina\" Silva \\ São".into();
    body["customer"]["address"]["complement"] = serde_json::Value::Null;
    let first = app.post_order(TOKEN, &body).await;
    assert_eq!(first.status(), 201);
    let location = first.headers()["location"].to_str().unwrap().to_owned();
    let created = first.text().await.unwrap();
    let read = app.get(&location, Some(TOKEN)).await.text().await.unwrap();
    let other = app.post_order(TOKEN, &valid_order("recent-1")).await;
    assert_eq!(other.status(), 201);
    // KEY_RETENTION_DAYS is 30: the key of 31 days ago loses its stored answer, that of 29 not.
    completed_days_ago(&app, "kept-1", 31).await;
    completed_days_ago(&app, "recent-1", 29).await;
    eventually(20, "the sweep to drop the stored answer", || async {
        stored_body(&app, "kept-1").await.is_none()
    })
    .await;
    assert!(
        stored_body(&app, "recent-1").await.is_some(),
        "a recent key lost its answer"
    );
    assert_eq!(
        app.metric(r#"retention_swept_total{kind="key_responses"}"#)
            .await,
        Some(1.0)
    );

    let replay = app.post_order(TOKEN, &body).await;
    assert_eq!(replay.status(), 201);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.headers()["location"].to_str().unwrap(), location);
    assert_eq!(replay.text().await.unwrap(), created, "the replay's bytes");
    let reread = app.get(&location, Some(TOKEN)).await;
    assert_eq!(reread.status(), 200);
    assert_eq!(reread.text().await.unwrap(), read, "GET after the sweep");
    // The key row stays: the same request with another body is still refused, and nothing was
    // charged a second time.
    let mut changed = body.clone();
    changed["customer"]["tax_id"] = "10987654321".into();
    assert_eq!(app.post_order(TOKEN, &changed).await.status(), 422);
    assert_eq!(app.deps.ledger().charges, 2);
    assert_eq!(app.count("orders").await, 2);
}

async fn sent_outbox_events_are_deleted_after_their_retention(api: Api) {
    let app = TestApp::spawn_with(api, MockConfig::instant(), fast_recovery).await;
    let made = app.post_order(TOKEN, &valid_order("outbox-1")).await;
    assert_eq!(made.status(), 201);
    // Events as the relay leaves them (the API runs with EVENTS_MODE=off, so no relay touches
    // them): sent 25 h ago, sent just now, never sent (25 h old).
    for (event_id, created, sent) in [
        (
            "sent-old",
            "now() - interval '25 hours'",
            "now() - interval '25 hours'",
        ),
        ("sent-new", "now()", "now()"),
        ("unsent-old", "now() - interval '25 hours'", "NULL"),
    ] {
        let sql = format!(
            "INSERT INTO order_outbox (event_id, order_id, subject, payload, created_at, sent_at) \
             SELECT '{event_id}', id, 'orders.created', '{{}}', {created}, {sent} FROM orders"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&app.pool)
            .await
            .unwrap();
    }
    eventually(20, "the sweep to delete the old sent event", || async {
        app.metric(r#"retention_swept_total{kind="outbox_events"}"#)
            .await
            == Some(1.0)
    })
    .await;
    let left: Vec<String> =
        sqlx::query_scalar("SELECT event_id FROM order_outbox ORDER BY event_id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(left, ["sent-new", "unsent-old"]);
}

/// The plan nodes of an `EXPLAIN (ANALYZE, FORMAT JSON)`, flattened.
fn nodes(plan: &serde_json::Value, out: &mut Vec<serde_json::Value>) {
    out.push(plan.clone());
    for child in plan["Plans"].as_array().into_iter().flatten() {
        nodes(child, out);
    }
}

/// The relay runs `sql::OUTBOX_BACKLOG` at most once a second: with 12,000 unsent and 60,000 sent
/// events, no step of its plan reads more rows than the cap, and it reports the cap and the
/// oldest unsent event's age.
#[tokio::test]
async fn the_outbox_backlog_reads_a_bounded_number_of_rows() {
    let db = TestDatabase::new().await;
    let mut conn = PgConnection::connect(&db.url).await.unwrap();
    for statement in [
        "INSERT INTO idempotency_keys (seller_id, reference_id, request_hash, state, \
         lease_expires_at, response_status, response_body, order_id) \
         VALUES ('acme', 'r', 'h', 'COMPLETED', now(), 201, '{}', 'ORDER_1')",
        "INSERT INTO customers (id, full_name, tax_id, street, number, state, city, locality, \
         zip_code) VALUES (1, 'A', '12345678901', 's', '1', 'S', 'c', 'l', 'z')",
        "INSERT INTO orders (id, seller_id, reference_id, customer_id, status, amount, \
         installments, payment_method, card_last4, payment_code, payment_status, \
         risk_recommendation, created_at) VALUES ('ORDER_1', 'acme', 'r', 1, 'CONFIRMED', 1, 1, \
         'DEBIT_CARD', '1111', 'c', 'SUCCESS', 'APPROVE', now())",
        "INSERT INTO order_outbox (event_id, order_id, subject, payload, created_at, sent_at) \
         SELECT 'sent-' || n, 'ORDER_1', 's', '{}', now() - interval '2 hours', now() \
           FROM generate_series(1, 60000) n",
        "INSERT INTO order_outbox (event_id, order_id, subject, payload, created_at) \
         SELECT 'unsent-' || n, 'ORDER_1', 's', '{}', now() - interval '1 hour' + n * interval '1 ms' \
           FROM generate_series(1, 12000) n",
        "ANALYZE order_outbox",
    ] {
        sqlx::query(statement).execute(&mut conn).await.unwrap();
    }
    let (backlog, oldest_age_s): (i64, f64) = sqlx::query_as(sql::OUTBOX_BACKLOG)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(backlog, sql::OUTBOX_BACKLOG_CAP);
    assert!((3590.0..3700.0).contains(&oldest_age_s), "{oldest_age_s}");
    let explain = format!("EXPLAIN (ANALYZE, FORMAT JSON) {}", sql::OUTBOX_BACKLOG);
    let plan: serde_json::Value = sqlx::query_scalar(sqlx::AssertSqlSafe(explain))
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let mut all = Vec::new();
    nodes(&plan[0]["Plan"], &mut all);
    for node in &all {
        let rows = node["Actual Rows"].as_f64().unwrap_or(0.0);
        let removed = node["Rows Removed by Filter"].as_f64().unwrap_or(0.0);
        assert!(
            rows + removed <= sql::OUTBOX_BACKLOG_CAP as f64,
            "a step read {rows} rows (+{removed} filtered): {node}"
        );
    }
}
