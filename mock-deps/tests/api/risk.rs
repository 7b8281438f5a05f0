use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestMock, expect_json, risk_body};

#[tokio::test]
async fn risk_rules() {
    let app = TestMock::instant().await;
    let cases = [
        (risk_body(10_000, "12345678901"), "APPROVE"),
        (risk_body(5_000_000, "12345678901"), "APPROVE"),
        (risk_body(5_000_001, "12345678901"), "DISAPPROVE"),
        (risk_body(100, "00000000000"), "DISAPPROVE"),
        (risk_body(100, "000.000.000-00"), "DISAPPROVE"),
    ];
    for (body, expected) in &cases {
        let answer = expect_json(app.risk(body).await, StatusCode::OK).await;
        assert_eq!(answer, json!({"recommendation": expected}), "{body}");
    }
    let stats = app.stats().await.risk;
    assert_eq!((stats.ok, stats.disapproved), (5, 3));
}

#[tokio::test]
async fn unknown_fields_are_ignored() {
    let app = TestMock::instant().await;
    let mut body = risk_body(1, "1");
    body["customer"] = json!({"full_name": "x"});
    let answer = expect_json(app.risk(&body).await, StatusCode::OK).await;
    assert_eq!(answer["recommendation"], "APPROVE");
}

#[tokio::test]
async fn malformed_bodies_are_rejected() {
    let app = TestMock::instant().await;
    let bad = [
        json!({"seller_id": "s", "reference_id": "r", "amount": 1}),
        json!({"seller_id": "s", "reference_id": "r", "amount": "1", "tax_id": "1"}),
        json!({"seller_id": "s", "reference_id": "r", "amount": 1.5, "tax_id": "1"}),
        json!([]),
    ];
    for body in &bad {
        assert_eq!(
            app.risk(body).await.status(),
            StatusCode::BAD_REQUEST,
            "{body}"
        );
    }
    let not_json = app
        .client
        .post(format!("{}/risk-analysis/validate", app.url))
        .body("amount=1")
        .send()
        .await
        .unwrap();
    assert_eq!(not_json.status(), StatusCode::BAD_REQUEST);
    assert_eq!(app.stats().await.risk.bad_requests, 5);
}
