//! What a client can learn or grow: no card digit in any 400, a request hash that cannot be
//! brute-forced without the key, replays answered before the card's expiry is judged, and
//! metric labels a client cannot invent.

use order_core::domain::contract::CreateOrderRequest;
use order_core::domain::request_hash::RequestHashKey;
use sha2::{Digest, Sha256};
use testkit::{Api, TOKEN, TestApp, contract_tests, valid_order};

contract_tests!(
    no_400_echoes_card_digits,
    a_400_never_names_a_key_holding_card_digits,
    stored_request_hash_is_keyed,
    a_replay_is_answered_even_after_the_card_expired,
    invented_methods_do_not_grow_the_metrics,
);

const NUMBER: &str = "4539578763621486";

async fn no_400_echoes_card_digits(api: Api) {
    let app = TestApp::spawn(api).await;
    let card = |field: &str, value: serde_json::Value| {
        let mut body = valid_order("pci-400");
        body["payment"]["payment_method"]["card"][field] = value;
        body
    };
    let amount_as_card = {
        let mut body = valid_order("pci-400");
        body["payment"]["amount"] = NUMBER.into();
        body
    };
    let bodies = [
        card("number", serde_json::json!(4539578763621486_u64)),
        card("number", serde_json::json!([NUMBER])),
        card("number", serde_json::json!("4539578763621487")), // Luhn fails
        card("cvv", serde_json::json!(7319)),
        card("cvv", serde_json::json!("73190")),
        amount_as_card,
    ];
    for body in bodies {
        let response = app.post_order(TOKEN, &body).await;
        assert_eq!(response.status(), 400);
        let text = response.text().await.unwrap();
        assert!(text.contains("invalid_request"), "{text}");
        for digits in ["453957876362148", "7319"] {
            assert!(!text.contains(digits), "card digits echoed: {text}");
        }
    }
    assert_eq!(app.count("idempotency_keys").await, 0);
}

/// A card number sent as a JSON key, with a value under it that does not parse: the 400 names
/// where the error is without repeating the key.
async fn a_400_never_names_a_key_holding_card_digits(api: Api) {
    let app = TestApp::spawn(api).await;
    let order = valid_order("pci-key").to_string();
    let open = &order[..order.len() - 1];
    for key in [NUMBER, "4539 5787 6362 1486"] {
        let body = format!(r#"{open},"{key}":[1,}}"#);
        let response = app
            .post_raw(Some(TOKEN), Some("application/json"), body.into_bytes())
            .await;
        assert_eq!(response.status(), 400);
        let json: serde_json::Value = response.json().await.unwrap();
        assert_eq!(json["error"], "invalid_request", "{json}");
        assert_eq!(json["field"], "…", "{json}");
        for digits in ["4539", "5787", "6362", "1486"] {
            assert!(
                !json.to_string().contains(digits),
                "card digits echoed: {json}"
            );
        }
    }
    assert_eq!(app.count("idempotency_keys").await, 0);
}

async fn stored_request_hash_is_keyed(api: Api) {
    let app = TestApp::spawn(api).await;
    let body = valid_order("hash-1");
    assert_eq!(app.post_order(TOKEN, &body).await.status(), 201);
    let stored: String = sqlx::query_scalar("SELECT request_hash FROM idempotency_keys")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let bytes = serde_json::to_vec(&body).unwrap();
    let parsed = CreateOrderRequest::parse(&bytes).unwrap();
    let plain = hex::encode(Sha256::digest(serde_json::to_vec(&parsed).unwrap()));
    assert_ne!(stored, plain, "an unkeyed SHA-256 of the body");
    let keyed = parsed.validate(&RequestHashKey::development()).unwrap();
    assert_eq!(
        stored, keyed.request_hash,
        "HMAC under the (development) key"
    );
}

async fn a_replay_is_answered_even_after_the_card_expired(api: Api) {
    let app = TestApp::spawn(api).await;
    // An order created while its card was valid, stored as the API stores it; the card has
    // expired since (01-2020).
    let mut body = valid_order("expired-1");
    body["payment"]["payment_method"]["card"]["expiration_date"] = "01-2020".into();
    let bytes = serde_json::to_vec(&body).unwrap();
    let order = CreateOrderRequest::parse(&bytes)
        .unwrap()
        .validate(&RequestHashKey::development())
        .unwrap();
    let stored = r#"{"id":"ORDER_X","status":"CONFIRMED"}"#;
    sqlx::query(
        "INSERT INTO idempotency_keys (seller_id, reference_id, request_hash, state, attempt, \
         lease_expires_at, response_status, response_body, order_id) \
         VALUES ('acme', 'expired-1', $1, 'COMPLETED', 1, now(), 201, $2, 'ORDER_X')",
    )
    .bind(&order.request_hash)
    .bind(stored)
    .execute(&app.pool)
    .await
    .unwrap();
    let replay = app.post_order(TOKEN, &body).await;
    assert_eq!(replay.status(), 201);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.text().await.unwrap(), stored);

    // A new request with an expired card is still refused, and reserves nothing.
    body["reference_id"] = "expired-2".into();
    let refused = app.post_order(TOKEN, &body).await;
    assert_eq!(refused.status(), 400);
    let json: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(json["field"], "payment.payment_method.card.expiration_date");
    assert_eq!(app.count("idempotency_keys").await, 1);
    assert_eq!(app.deps.ledger().pay_requests, 0);
}

async fn invented_methods_do_not_grow_the_metrics(api: Api) {
    let app = TestApp::spawn(api).await;
    for method in ["FOOBAR", "X-SCAN-1", "X-SCAN-2"] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let response = app
            .client
            .request(method, format!("{}/orders", app.address))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405);
    }
    let metrics = app.get("/metrics", None).await.text().await.unwrap();
    assert!(
        !metrics.contains("FOOBAR") && !metrics.contains("X-SCAN"),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"method="OTHER",route="/orders",status="405"} 3"#),
        "{metrics}"
    );
}
