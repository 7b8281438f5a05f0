//! The order contract, run against both APIs: creation, replay, concurrency, ownership.

use futures_util::future::join_all;
use mock_deps::MockConfig;
use order_core::domain::request_hash::RequestHashKey;
use order_core::plumbing::settings::CommonSettings;
use testkit::{Api, OTHER_TOKEN, TOKEN, TestApp, contract_tests, valid_order};

contract_tests!(
    creates_an_order_with_its_rows_and_one_charge,
    replays_the_first_outcome_byte_for_byte,
    refuses_a_reused_key_with_another_body,
    a_key_hashed_before_the_canonical_form_changed_still_replays,
    a_key_hashed_in_a_newer_form_is_left_to_the_newer_release,
    fifty_concurrent_requests_with_one_key_make_one_order,
    unknown_or_missing_token_is_401_without_touching_the_database,
    order_is_visible_to_its_seller_only,
    bearer_tokens_are_accepted,
    health_ready_and_metrics_answer,
);

async fn creates_an_order_with_its_rows_and_one_charge(api: Api) {
    let app = TestApp::spawn(api).await;
    let response = app.post_order(TOKEN, &valid_order("happy-1")).await;
    assert_eq!(response.status(), 201);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let body: serde_json::Value = response.json().await.unwrap();
    let id = body["id"].as_str().unwrap();
    assert_eq!(location, format!("/orders/{id}"));
    assert!(id.starts_with("ORDER_") && id[6..] == id[6..].to_uppercase() && id.len() == 42);
    assert_eq!(body["status"], "CONFIRMED");
    assert_eq!(body["seller_id"], "acme");
    assert_eq!(body["amount"], 15000);
    assert_eq!(body["installments"], 3);
    assert_eq!(body["payment"]["card_last4"], "1486");
    assert_eq!(body["payment"]["status"], "SUCCESS");
    assert_eq!(body["risk"]["recommendation"], "APPROVE");
    assert_eq!(body["items"].as_array().unwrap().len(), 2);
    assert_eq!(body["customer"]["tax_id"], "12345678901");
    assert!(body["created_at"].is_string());

    assert_eq!(app.count("orders").await, 1);
    assert_eq!(app.count("order_items").await, 2);
    assert_eq!(app.count("customers").await, 1);
    let (state, pending): (String, Option<String>) =
        sqlx::query_as("SELECT state, pending_order FROM idempotency_keys")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(state, "COMPLETED");
    assert_eq!(
        pending, None,
        "a completed key does not keep its pending order"
    );
    let ledger = app.deps.ledger();
    assert_eq!((ledger.charges, ledger.distinct_keys), (1, 1));
    assert_eq!(ledger.keys_charged_more_than_once, 0);
}

async fn replays_the_first_outcome_byte_for_byte(api: Api) {
    let app = TestApp::spawn(api).await;
    let first = app.post_order(TOKEN, &valid_order("replay-1")).await;
    assert_eq!(first.status(), 201);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first_body = first.bytes().await.unwrap();

    // Same request, other layout and an unknown field: still the same request.
    let mut again = valid_order("replay-1");
    again["ignored_extra"] = serde_json::json!({"a": 1});
    let second = app.post_order(TOKEN, &again).await;
    assert_eq!(second.status(), 201);
    assert_eq!(second.headers()["idempotent-replayed"], "true");
    assert!(second.headers().get("location").is_some());
    assert_eq!(second.bytes().await.unwrap(), first_body);

    assert_eq!(app.count("orders").await, 1);
    let ledger = app.deps.ledger();
    assert_eq!(ledger.pay_requests, 1, "a replay must not call the gateway");
}

async fn refuses_a_reused_key_with_another_body(api: Api) {
    let app = TestApp::spawn(api).await;
    assert_eq!(
        app.post_order(TOKEN, &valid_order("reuse-1"))
            .await
            .status(),
        201
    );
    let mut other = valid_order("reuse-1");
    other["customer"]["full_name"] = "Bia Souza".into();
    let response = app.post_order(TOKEN, &other).await;
    assert_eq!(response.status(), 422);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"], "idempotency_key_reused");
    // The same reference_id belongs to each seller separately.
    assert_eq!(app.post_order(OTHER_TOKEN, &other).await.status(), 201);
    assert_eq!(app.count("orders").await, 2);
}

async fn fifty_concurrent_requests_with_one_key_make_one_order(api: Api) {
    // A slow gateway keeps the first attempt in progress while the others arrive.
    let mut mocks = MockConfig::instant();
    mocks.payment.latency_ms = 300;
    let app = TestApp::spawn_with(api, mocks, |_| {}).await;
    let body = valid_order("race-1");
    let responses = join_all((0..50).map(|_| app.post_order(TOKEN, &body))).await;
    let mut created = 0;
    for response in responses {
        let status = response.status().as_u16();
        let replayed = response.headers().get("idempotent-replayed").is_some();
        match (status, replayed) {
            (201, false) => created += 1,
            (201, true) => {}
            (409, _) => {
                assert_eq!(response.headers()["retry-after"], "1");
                let body: serde_json::Value = response.json().await.unwrap();
                assert_eq!(body["error"], "request_in_progress");
            }
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert_eq!(created, 1, "exactly one request creates the order");
    assert_eq!(app.count("orders").await, 1);
    let ledger = app.deps.ledger();
    assert_eq!(ledger.charges, 1);
    assert_eq!(ledger.keys_charged_more_than_once, 0);
}

async fn unknown_or_missing_token_is_401_without_touching_the_database(api: Api) {
    let app = TestApp::spawn(api).await;
    let body = serde_json::to_vec(&valid_order("auth-1")).unwrap();
    for token in [
        None,
        Some(""),
        Some("nope"),
        Some("sk_revoked-1"),
        Some("sk_UPPER"),
    ] {
        let response = app
            .post_raw(token, Some("application/json"), body.clone())
            .await;
        assert_eq!(response.status(), 401, "token {token:?}");
        let json: serde_json::Value = response.json().await.unwrap();
        assert_eq!(json["error"], "unauthorized");
    }
    assert_eq!(app.count("idempotency_keys").await, 0);
    assert_eq!(app.deps.ledger().pay_requests, 0);
}

async fn order_is_visible_to_its_seller_only(api: Api) {
    let app = TestApp::spawn(api).await;
    let created = app.post_order(TOKEN, &valid_order("get-1")).await;
    let created_body = created.bytes().await.unwrap();
    let id = serde_json::from_slice::<serde_json::Value>(&created_body).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let own = app.get(&format!("/orders/{id}"), Some(TOKEN)).await;
    assert_eq!(own.status(), 200);
    assert_eq!(
        own.bytes().await.unwrap(),
        created_body,
        "same body as at creation"
    );
    for (path, token) in [
        (format!("/orders/{id}"), OTHER_TOKEN),
        ("/orders/ORDER_NOPE".to_owned(), TOKEN),
    ] {
        let response = app.get(&path, Some(token)).await;
        assert_eq!(response.status(), 404);
        let json: serde_json::Value = response.json().await.unwrap();
        assert_eq!(json["error"], "not_found");
    }
    assert_eq!(app.get(&format!("/orders/{id}"), None).await.status(), 401);
}

async fn bearer_tokens_are_accepted(api: Api) {
    let app = TestApp::spawn(api).await;
    let response = app
        .post_order(&format!("Bearer {TOKEN}"), &valid_order("bearer-1"))
        .await;
    assert_eq!(response.status(), 201);
}

async fn health_ready_and_metrics_answer(api: Api) {
    let app = TestApp::spawn(api).await;
    assert_eq!(app.get("/health", None).await.status(), 200);
    assert_eq!(app.get("/ready", None).await.status(), 200);
    assert_eq!(
        app.post_order(TOKEN, &valid_order("m-1")).await.status(),
        201
    );
    let text = app.get("/metrics", None).await.text().await.unwrap();
    for name in [
        "http_requests_total{method=\"POST\",route=\"/orders\",status=\"201\"} 1",
        "http_request_duration_seconds_bucket",
        "http_requests_in_flight",
        "db_pool_max_connections 10",
        "db_pool_connections_in_use",
        "db_pool_connections_idle",
        "db_pool_waiting 0",
        "db_pool_acquire_timeouts_total 0",
        "db_pool_acquire_duration_seconds_count",
        "db_transaction_duration_seconds_count{kind=\"persist\"} 1",
        "dependency_request_duration_seconds_count{dependency=\"payment\",outcome=\"ok\"} 1",
        "cgroup_cpu_nr_throttled",
        "cgroup_cpu_throttled_seconds",
    ] {
        assert!(
            text.contains(name),
            "{api:?} /metrics lacks `{name}`:\n{text}"
        );
    }
    let blocking_gauges =
        text.contains("blocking_pool_busy") && text.contains("blocking_pool_queued");
    assert_eq!(blocking_gauges, api.is_blocking());
    let unknown = app.get("/nope", None).await;
    assert_eq!(unknown.status(), 404);
    let json: serde_json::Value = unknown.json().await.unwrap();
    assert_eq!(json["error"], "not_found");
}

/// A key reserved by an earlier version holds the hash of the request's JSON form: the same
/// request is still replayed (not refused as another body), another body still refused.
async fn a_key_hashed_before_the_canonical_form_changed_still_replays(api: Api) {
    let mut hash_settings = CommonSettings::new("", "");
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        hash_settings.request_hash_key = s.request_hash_key.clone();
        hash_settings.app_env = s.app_env;
    })
    .await;
    let first = app.post_order(TOKEN, &valid_order("legacy-1")).await;
    assert_eq!(first.status(), 201);
    let first_body = first.bytes().await.unwrap();
    // The hash the earlier version stored: HMAC of the JSON form, the CVV emptied.
    let mut request: order_core::domain::contract::CreateOrderRequest =
        serde_json::from_value(valid_order("legacy-1")).unwrap();
    request.payment.payment_method.card.cvv.clear();
    let key = RequestHashKey::from_settings(&hash_settings).unwrap();
    let legacy = key.json_hash(&request);
    let updated = sqlx::query(
        "UPDATE idempotency_keys SET request_hash = $1 \
         WHERE reference_id = 'legacy-1' AND request_hash <> $1",
    )
    .bind(&legacy)
    .execute(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        updated.rows_affected(),
        1,
        "the stored hash was of the new form"
    );

    let again = app.post_order(TOKEN, &valid_order("legacy-1")).await;
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.bytes().await.unwrap(), first_body);

    let mut other = valid_order("legacy-1");
    other["customer"]["full_name"] = "Bia Souza".into();
    let refused = app.post_order(TOKEN, &other).await;
    assert_eq!(refused.status(), 422);
    assert_eq!(app.deps.ledger().pay_requests, 1);
}

/// A key whose hash is of a form only a newer release computes (tagged `<form>:<hex>`) is not
/// decided by this one: 503 `idempotency_key_newer_release` with `Retry-After`, no charge, the key
/// as it was; once the hash is one this release computes again, the retry is replayed.
async fn a_key_hashed_in_a_newer_form_is_left_to_the_newer_release(api: Api) {
    let app = TestApp::spawn(api).await;
    let first = app.post_order(TOKEN, &valid_order("newer-form-1")).await;
    assert_eq!(first.status(), 201);
    let first_body = first.bytes().await.unwrap();
    let tag = |hash: &str| format!("3:{hash}");
    let (stored,): (String,) = sqlx::query_as(
        "SELECT request_hash FROM idempotency_keys WHERE reference_id = 'newer-form-1'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    sqlx::query(
        "UPDATE idempotency_keys SET request_hash = $1 WHERE reference_id = 'newer-form-1'",
    )
    .bind(tag(&stored))
    .execute(&app.pool)
    .await
    .unwrap();

    for body in [valid_order("newer-form-1"), {
        let mut other = valid_order("newer-form-1");
        other["customer"]["full_name"] = "Bia Souza".into();
        other
    }] {
        let answer = app.post_order(TOKEN, &body).await;
        assert_eq!(answer.status(), 503);
        assert_eq!(answer.headers()["retry-after"], "1");
        let json: serde_json::Value = answer.json().await.unwrap();
        assert_eq!(json["error"], "idempotency_key_newer_release");
    }
    assert_eq!(app.deps.ledger().pay_requests, 1, "nothing charged again");
    let (after,): (String,) = sqlx::query_as(
        "SELECT request_hash FROM idempotency_keys WHERE reference_id = 'newer-form-1'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(after, tag(&stored), "the key as the newer release left it");

    sqlx::query(
        "UPDATE idempotency_keys SET request_hash = $1 WHERE reference_id = 'newer-form-1'",
    )
    .bind(&stored)
    .execute(&app.pool)
    .await
    .unwrap();
    let again = app.post_order(TOKEN, &valid_order("newer-form-1")).await;
    assert_eq!(again.status(), 201);
    assert_eq!(again.bytes().await.unwrap(), first_body);
}
