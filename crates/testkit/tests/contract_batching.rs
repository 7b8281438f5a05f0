//! Persist batching (`PERSIST_BATCH_MAX` > 1, experiment E), run against both APIs: concurrent
//! orders committed together each get their own outcome and their own rows; replays and races on
//! one key behave as without batching; and an order the database refuses fails alone, its batch's
//! other orders written one by one, its charge left to recovery (which voids it).

use futures_util::future::join_all;
use mock_deps::MockConfig;
use order_core::plumbing::settings::CommonSettings;
use testkit::{Api, TOKEN, TestApp, contract_tests, eventually, valid_order};

contract_tests!(
    concurrent_orders_are_committed_in_batches_each_with_its_own_rows,
    replays_and_races_on_one_key_are_unchanged_by_batching,
    one_refused_order_fails_alone_and_its_batch_is_written_one_by_one,
);

/// `PERSIST_BATCH_MAX` 10, `PERSIST_BATCH_WAIT_MS` `wait_ms`.
fn batching(wait_ms: u64) -> impl FnOnce(&mut CommonSettings) {
    move |s| {
        s.persist_batch_max = 10;
        s.persist_batch_wait_ms = wait_ms;
    }
}

/// An order of its own customer, so that a row linked to the wrong order shows.
fn order_of(reference_id: &str, full_name: &str) -> serde_json::Value {
    let mut body = valid_order(reference_id);
    body["customer"]["full_name"] = full_name.into();
    body
}

/// A metric's value in the API's `/metrics` (0 when absent).
async fn metric(app: &TestApp, name: &str) -> f64 {
    app.metric(name).await.unwrap_or(0.0)
}

async fn concurrent_orders_are_committed_in_batches_each_with_its_own_rows(api: Api) {
    // A window wide enough that concurrent orders share batches on a loaded CI machine too.
    let app = TestApp::spawn_with(api, MockConfig::instant(), batching(100)).await;
    const N: usize = 30;
    let bodies: Vec<serde_json::Value> = (0..N)
        .map(|i| order_of(&format!("batch-{i}"), &format!("Buyer {i}")))
        .collect();
    let responses = join_all(bodies.iter().map(|b| app.post_order(TOKEN, b))).await;
    let mut ids = std::collections::HashSet::new();
    for (i, response) in responses.into_iter().enumerate() {
        assert_eq!(response.status(), 201, "order {i}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["reference_id"], format!("batch-{i}"));
        assert_eq!(body["customer"]["full_name"], format!("Buyer {i}"));
        ids.insert(body["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(ids.len(), N);
    assert_eq!(app.count("orders").await, N as i64);
    assert_eq!(app.count("customers").await, N as i64);
    assert_eq!(app.count("order_items").await, 2 * N as i64);
    // Each order has its own customer, its own items, and the key's stored answer is its own.
    let linked: Vec<(String, String, i64, String)> = sqlx::query_as(
        "SELECT o.reference_id, c.full_name,
                (SELECT count(*) FROM order_items i WHERE i.order_id = o.id),
                k.order_id
           FROM orders o
           JOIN customers c ON c.id = o.customer_id
           JOIN idempotency_keys k USING (seller_id, reference_id)
          WHERE k.state = 'COMPLETED' AND k.response_body LIKE '%' || o.id || '%'",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(linked.len(), N);
    for (reference_id, full_name, items, _) in &linked {
        let i = reference_id.trim_start_matches("batch-");
        assert_eq!(full_name, &format!("Buyer {i}"));
        assert_eq!(*items, 2);
    }
    let ledger = app.deps.ledger();
    assert_eq!(
        (ledger.charges, ledger.keys_charged_more_than_once),
        (N as u64, 0)
    );
    // Written in batches: fewer batches than orders, every order in one of them.
    let batches = metric(&app, "persist_batch_orders_count").await;
    assert_eq!(metric(&app, "persist_batch_orders_sum").await, N as f64);
    assert!(
        batches < N as f64,
        "{batches} batches for {N} concurrent orders: none was batched"
    );
    assert_eq!(metric(&app, "persist_batch_max").await, 10.0);
}

async fn replays_and_races_on_one_key_are_unchanged_by_batching(api: Api) {
    let app = TestApp::spawn_with(api, MockConfig::instant(), batching(5)).await;
    // Ten orders, each sent twice at once: one creates it, the other replays it or is told the
    // first is still in progress.
    let bodies: Vec<serde_json::Value> = (0..10)
        .map(|i| order_of(&format!("twice-{i}"), &format!("Buyer {i}")))
        .collect();
    let sends = bodies
        .iter()
        .chain(&bodies)
        .map(|b| app.post_order(TOKEN, b));
    let mut created = 0;
    for response in join_all(sends).await {
        let replayed = response.headers().get("idempotent-replayed").is_some();
        match (response.status().as_u16(), replayed) {
            (201, false) => created += 1,
            (201, true) | (409, _) => {}
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert_eq!(created, 10, "exactly one creation per key");
    assert_eq!(app.count("orders").await, 10);
    // Afterwards each replays its first answer byte for byte, without a charge.
    let pay_requests = app.deps.ledger().pay_requests;
    for body in &bodies {
        let first = app.post_order(TOKEN, body).await;
        assert_eq!(first.status(), 201);
        assert_eq!(first.headers()["idempotent-replayed"], "true");
        let first = first.bytes().await.unwrap();
        let again = app.post_order(TOKEN, body).await.bytes().await.unwrap();
        assert_eq!(first, again);
        let doc: serde_json::Value = serde_json::from_slice(&first).unwrap();
        let stored = app
            .get(
                &format!("/orders/{}", doc["id"].as_str().unwrap()),
                Some(TOKEN),
            )
            .await;
        assert_eq!(stored.bytes().await.unwrap(), first);
    }
    let ledger = app.deps.ledger();
    assert_eq!(ledger.pay_requests, pay_requests, "a replay never charges");
    assert_eq!(
        (ledger.charges, ledger.keys_charged_more_than_once),
        (10, 0)
    );
}

async fn one_refused_order_fails_alone_and_its_batch_is_written_one_by_one(api: Api) {
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        // A window long enough for all ten to share one batch, and a quick recovery.
        batching(300)(s);
        s.deps_timeout_ms = 1000;
        s.db_pool_timeout_ms = 1000;
        s.lease_ms = 3000;
        s.reconcile_interval_ms = 200;
    })
    .await;
    // A row the database refuses, which the API cannot know in advance.
    sqlx::query(
        "ALTER TABLE customers ADD CONSTRAINT test_refused_buyer CHECK (full_name <> 'Refused')",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let bodies: Vec<serde_json::Value> = (0..10)
        .map(|i| {
            let name = if i == 4 {
                "Refused".to_owned()
            } else {
                format!("Buyer {i}")
            };
            order_of(&format!("bad-{i}"), &name)
        })
        .collect();
    let responses = join_all(bodies.iter().map(|b| app.post_order(TOKEN, b))).await;
    for (i, response) in responses.into_iter().enumerate() {
        let expected = if i == 4 { 500 } else { 201 };
        assert_eq!(response.status(), expected, "order {i}");
    }
    assert_eq!(app.count("orders").await, 9);
    assert!(
        metric(&app, "persist_batch_fallbacks_total").await >= 1.0,
        "the refused batch was written one by one"
    );
    // The refused order was charged: its key stays with its charge until recovery, which cannot
    // make the order either, voids the charge and stores the refusal.
    eventually(30, "recovery voids the refused order's charge", || async {
        let state: String =
            sqlx::query_scalar("SELECT state FROM idempotency_keys WHERE reference_id = 'bad-4'")
                .fetch_one(&app.pool)
                .await
                .unwrap();
        state == "COMPLETED" && app.deps.ledger().voids == 1
    })
    .await;
    let replay = app.post_order(TOKEN, &bodies[4]).await;
    let body: serde_json::Value = replay.json().await.unwrap();
    assert_eq!(body["error"], "order_voided");
    let ledger = app.deps.ledger();
    assert_eq!((ledger.charges, ledger.voids), (10, 1));
    assert_eq!(app.count("orders").await, 9);
}
