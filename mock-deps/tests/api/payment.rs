use std::collections::HashSet;
use std::sync::Arc;

use mock_deps::{EndpointConfig, MockConfig};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestMock, expect_json, pay_body};

#[tokio::test]
async fn same_key_returns_the_same_answer_and_charges_once() {
    let app = TestMock::instant().await;
    let body = pay_body(15_000, "123");
    let first = expect_json(app.pay(Some("order-1"), &body).await, StatusCode::OK).await;
    let second = expect_json(app.pay(Some("order-1"), &body).await, StatusCode::OK).await;
    assert_eq!(first["message"], "SUCCESS");
    assert_eq!(first, second);
    let code = first["code"].as_str().unwrap();
    assert_eq!(uuid::Uuid::parse_str(code).unwrap().get_version_num(), 4);

    let ledger = app.ledger().await;
    assert_eq!((ledger.charges, ledger.distinct_keys), (1, 1));
    assert_eq!((ledger.pay_requests, ledger.replayed_requests), (2, 1));
    assert_eq!(ledger.keys_charged_more_than_once, 0);
}

#[tokio::test]
async fn same_key_with_another_amount_is_a_conflict() {
    let app = TestMock::instant().await;
    app.pay(Some("order-2"), &pay_body(100, "123")).await;
    let conflict = app.pay(Some("order-2"), &pay_body(101, "123")).await;
    let body = expect_json(conflict, StatusCode::CONFLICT).await;
    assert_eq!(body, json!({"error": "idempotency_conflict"}));
    let ledger = app.ledger().await;
    assert_eq!((ledger.charges, ledger.conflicts), (1, 1));
    assert_eq!(app.stats().await.payment.conflicts, 1);
}

#[tokio::test]
async fn cvv_000_is_declined_and_not_charged() {
    let app = TestMock::instant().await;
    let first = expect_json(
        app.pay(Some("d-1"), &pay_body(100, "000")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(first["message"], "DECLINED");
    // The stored answer is replayed, not re-decided.
    let replay = expect_json(
        app.pay(Some("d-1"), &pay_body(100, "000")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(first, replay);
    let ledger = app.ledger().await;
    assert_eq!(
        (ledger.charges, ledger.declined, ledger.replayed_requests),
        (0, 1, 1)
    );
    assert_eq!(app.stats().await.payment.declined, 2);
}

#[tokio::test]
async fn missing_key_and_bad_bodies_are_rejected() {
    let app = TestMock::instant().await;
    let no_key = expect_json(
        app.pay(None, &pay_body(1, "123")).await,
        StatusCode::BAD_REQUEST,
    )
    .await;
    assert_eq!(no_key, json!({"error": "missing_idempotency_key"}));
    let empty_key = app.pay(Some(""), &pay_body(1, "123")).await;
    assert_eq!(empty_key.status(), StatusCode::BAD_REQUEST);

    let mut pix = pay_body(1, "123");
    pix["payment_method"]["type"] = json!("PIX");
    let mut no_card = pay_body(1, "123");
    no_card["payment_method"]
        .as_object_mut()
        .unwrap()
        .remove("card");
    for body in [pix, no_card, json!({"amount": 1})] {
        let resp = app.pay(Some("k"), &body).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{body}");
    }
    assert_eq!(app.ledger().await.pay_requests, 0);
}

#[tokio::test]
async fn ledger_detail_lists_keys_without_card_data() {
    let app = TestMock::instant().await;
    app.pay(Some("k-1"), &pay_body(700, "123")).await;
    let summary = app.get("/admin/ledger").await.text().await.unwrap();
    assert!(!summary.contains("charges_by_key"), "{summary}");

    let detail = app
        .get("/admin/ledger?detail=true")
        .await
        .text()
        .await
        .unwrap();
    for secret in ["4111111111111111", "123", "Ada"] {
        assert!(!detail.contains(secret), "ledger leaks {secret}: {detail}");
    }
    let detail: Value = serde_json::from_str(&detail).unwrap();
    assert_eq!(
        detail["charges_by_key"]["k-1"],
        json!({"charges": 1, "amount": 700, "message": "SUCCESS", "voided": false})
    );
}

#[tokio::test]
async fn concurrent_requests_with_one_key_charge_once() {
    // A little latency so that all 200 requests are in flight together before any of them
    // reaches the ledger.
    let config = MockConfig {
        payment: EndpointConfig::with_latency(100),
        ..MockConfig::instant()
    };
    let app = Arc::new(TestMock::start(config).await);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..200 {
        let app = Arc::clone(&app);
        tasks.spawn(async move {
            let resp = app.pay(Some("hot-key"), &pay_body(999, "123")).await;
            expect_json(resp, StatusCode::OK).await["code"]
                .as_str()
                .unwrap()
                .to_owned()
        });
    }
    let codes: HashSet<String> = tasks.join_all().await.into_iter().collect();
    assert_eq!(codes.len(), 1, "every request must see the same answer");

    let ledger = app.ledger().await;
    assert_eq!((ledger.charges, ledger.distinct_keys), (1, 1));
    assert_eq!((ledger.pay_requests, ledger.replayed_requests), (200, 199));
    assert_eq!(ledger.keys_charged_more_than_once, 0);
    assert_eq!(app.mock.ledger(), ledger);
}
