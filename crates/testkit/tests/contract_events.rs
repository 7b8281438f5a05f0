//! The order event (`EVENTS_MODE`), against a real `nats-server -js` per test: each mode
//! puts exactly one `order.created` per order in the stream (the outbox at least once, made one
//! by JetStream's de-duplication); two-phase rolls the order back when the broker refuses the
//! event, and recovery resolves a prepared transaction left in doubt; after-commit loses the
//! event when the broker fails after the commit (as designed — the lab counts it); the outbox
//! delivers it once the broker is back. No event carries card data. Money rules still hold.

use std::collections::BTreeMap;

use order_core::plumbing::events::EventsMode;
use order_core::plumbing::settings::CommonSettings;
use testkit::{Api, TOKEN, TestApp, contract_tests, eventually, valid_order};

contract_tests!(
    two_phase_publishes_one_event_per_order,
    after_commit_publishes_one_event_per_order,
    outbox_publishes_one_event_per_order,
    two_phase_rolls_back_when_the_broker_refuses_the_event,
    two_phase_recovery_commits_or_rolls_back_what_was_left_prepared,
    after_commit_loses_the_event_when_the_broker_fails,
    outbox_delivers_the_event_once_the_broker_is_back,
);

/// A short lease and a fast recovery loop, and NATS calls bounded by 500 ms (so a prepared
/// transaction is in doubt after 2 × 0.5 + 1 = 2 s).
fn fast(s: &mut CommonSettings) {
    testkit::fast_recovery(s);
    s.events.nats_timeout_ms = 500;
    s.events.outbox_poll_ms = 20;
}

async fn census(app: &TestApp) -> BTreeMap<String, u64> {
    app.broker().census().await.unwrap_or_default()
}

async fn order_ids(app: &TestApp) -> Vec<String> {
    sqlx::query_scalar("SELECT id FROM orders ORDER BY id")
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

/// Posts `n` orders and one replay of the first; all answered 201.
async fn post_orders(app: &TestApp, n: usize) {
    for i in 0..n {
        let r = app
            .post_order(TOKEN, &valid_order(&format!("ev-{i}")))
            .await;
        assert_eq!(r.status(), 201, "{:?}", r.text().await);
    }
    let replay = app.post_order(TOKEN, &valid_order("ev-0")).await;
    assert_eq!(replay.status(), 201);
}

/// The stream holds exactly one event per order, and nothing else; each event is the order's,
/// without card data.
async fn assert_one_event_per_order(app: &TestApp) {
    let ids = order_ids(app).await;
    let expected: BTreeMap<String, u64> = ids
        .iter()
        .map(|id| (event_broker::subject_of(id), 1))
        .collect();
    eventually(10, "one event per order in the stream", || async {
        census(app).await == expected
    })
    .await;
    let s = app.broker();
    for id in &ids {
        assert!(s.contains(&event_broker::subject_of(id)).await.unwrap());
    }
    // The event's body, as stored in the stream.
    let (_, doc): (String, String) = sqlx::query_as(
        "SELECT o.id, k.response_body FROM orders o JOIN idempotency_keys k USING (seller_id, reference_id) LIMIT 1",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&doc).unwrap();
    let body = app.stored_event(doc["id"].as_str().unwrap()).await;
    let event: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(event["type"], "order.created");
    assert_eq!(event["order_id"], doc["id"]);
    assert_eq!(event["seller_id"], "acme");
    assert_eq!(event["amount"], 15000);
    assert_eq!(event["reference_id"], doc["reference_id"]);
    let keys: Vec<&String> = event.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "amount",
            "created_at",
            "event_id",
            "order_id",
            "reference_id",
            "seller_id",
            "type"
        ]
    );
    for secret in ["4539578763621486", "7319", "1486", "Ana Silva"] {
        assert!(!body.contains(secret), "the event carries {secret}: {body}");
    }
}

async fn one_event_per_order(api: Api, mode: EventsMode) {
    let app = TestApp::spawn_with_events(api, mode, fast).await;
    post_orders(&app, 5).await;
    assert_eq!(order_ids(&app).await.len(), 5);
    assert_one_event_per_order(&app).await;
}

async fn two_phase_publishes_one_event_per_order(api: Api) {
    one_event_per_order(api, EventsMode::TwoPhase).await;
}

async fn after_commit_publishes_one_event_per_order(api: Api) {
    one_event_per_order(api, EventsMode::AfterCommit).await;
}

async fn outbox_publishes_one_event_per_order(api: Api) {
    one_event_per_order(api, EventsMode::Outbox).await;
    // Relayed at least once and marked sent: nothing left behind.
}

async fn prepared_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn key_state(app: &TestApp) -> String {
    sqlx::query_scalar("SELECT state FROM idempotency_keys")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn two_phase_rolls_back_when_the_broker_refuses_the_event(api: Api) {
    let app = TestApp::spawn_with_events(api, EventsMode::TwoPhase, fast).await;
    app.broker().delete_stream().await.unwrap();
    let body = valid_order("2pc-refused");
    let r = app.post_order(TOKEN, &body).await;
    assert_eq!(r.status(), 503);
    let error: serde_json::Value = r.json().await.unwrap();
    assert_eq!(error["error"], "dependency_unavailable");
    assert_eq!(error["dependency"], "broker");
    // While the stream is gone nothing commits (recovery's own attempts at the key are refused
    // too): no order, and the key keeps its charge for a retry.
    assert_eq!(app.count("orders").await, 0);
    assert_eq!(app.count("customers").await, 0);
    assert_eq!(key_state(&app).await, "CHARGING");
    // The broker is back. The refused order was rolled back: by the API at once, or — when the
    // refusal itself took longer than NATS_TIMEOUT_MS (a loaded machine) and the transaction was
    // left in doubt — by recovery, which finds no event in the stream. Either way nothing stays
    // prepared. From here recovery may settle the kept charge itself (every
    // RECONCILE_INTERVAL_MS), holding the key meanwhile, so the retry is repeated until answered:
    // one order, its one event and no second charge.
    app.broker().ensure_stream().await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while prepared_count(&app).await > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(prepared_count(&app).await, 0);
    eventually(15, "the retry answered 201", || async {
        app.post_order(TOKEN, &body).await.status() == 201
    })
    .await;
    assert_eq!(app.count("orders").await, 1);
    assert_one_event_per_order(&app).await;
    assert_eq!(app.deps.ledger_with_detail().keys_charged_more_than_once, 0);
}

/// Two transactions prepared as if by a process that died after `PREPARE TRANSACTION`: one whose
/// event reached the stream, one whose event did not. Recovery commits the first, rolls back the
/// second, once they are older than a live publication could be.
async fn two_phase_recovery_commits_or_rolls_back_what_was_left_prepared(api: Api) {
    let app = TestApp::spawn_with_events(api, EventsMode::TwoPhase, fast).await;
    let published = order_core::domain::order::new_order_id();
    let lost = order_core::domain::order::new_order_id();
    for (order_id, name) in [(&published, "Published"), (&lost, "Lost")] {
        let mut tx = <sqlx::PgConnection as sqlx::Connection>::connect(&app.db.url)
            .await
            .unwrap();
        let gid = order_core::plumbing::events::prepared_gid(order_id).unwrap();
        for statement in [
            "BEGIN".to_owned(),
            format!(
                "INSERT INTO customers (full_name, tax_id, street, number, state, city, locality, \
                 zip_code) VALUES ('{name}', '1', 's', '1', 'S', 'c', 'l', 'z')"
            ),
            order_core::plumbing::events::prepare_sql(&gid),
        ] {
            sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
                .execute(&mut tx)
                .await
                .unwrap();
        }
        sqlx::Connection::close(tx).await.unwrap();
    }
    let event = event_broker::Publication {
        subject: event_broker::subject_of(&published),
        msg_id: order_core::plumbing::events::event_id(&published),
        payload: "{}".into(),
    };
    app.broker().publish(&event).await.unwrap();
    assert_eq!(prepared_count(&app).await, 2);
    eventually(15, "recovery resolving both", || async {
        prepared_count(&app).await == 0
    })
    .await;
    let names: Vec<String> = sqlx::query_scalar("SELECT full_name FROM customers")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(names, ["Published"]);
    let metrics = app.get("/metrics", None).await.text().await.unwrap();
    assert!(
        metrics.contains("events_in_doubt_resolved_total{action=\"commit\"} 1")
            && metrics.contains("events_in_doubt_resolved_total{action=\"rollback\"} 1"),
        "{metrics}"
    );
}

async fn after_commit_loses_the_event_when_the_broker_fails(api: Api) {
    let app = TestApp::spawn_with_events(api, EventsMode::AfterCommit, fast).await;
    app.broker().delete_stream().await.unwrap();
    let r = app
        .post_order(TOKEN, &valid_order("after-commit-lost"))
        .await;
    assert_eq!(r.status(), 201, "the order stands");
    app.broker().ensure_stream().await.unwrap();
    assert_eq!(app.count("orders").await, 1);
    assert!(census(&app).await.is_empty(), "the event is lost");
    let metrics = app.get("/metrics", None).await.text().await.unwrap();
    assert!(
        metrics.contains("events_publish_failures_total{mode=\"after-commit\",why=\"refused\"} 1"),
        "{metrics}"
    );
}

async fn outbox_delivers_the_event_once_the_broker_is_back(api: Api) {
    let app = TestApp::spawn_with_events(api, EventsMode::Outbox, fast).await;
    app.broker().delete_stream().await.unwrap();
    let r = app.post_order(TOKEN, &valid_order("outbox-later")).await;
    assert_eq!(r.status(), 201);
    let unsent = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM order_outbox WHERE sent_at IS NULL")
            .fetch_one(&app.pool)
            .await
            .unwrap()
    };
    assert_eq!(unsent().await, 1, "kept until the broker acknowledges it");
    app.broker().ensure_stream().await.unwrap();
    eventually(10, "the relay sending it", || async { unsent().await == 0 }).await;
    assert_one_event_per_order(&app).await;
}
