use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestMock, expect_json};

#[tokio::test]
async fn valid_tokens_return_the_seller_id() {
    let app = TestMock::instant().await;
    for header in ["sk_shop-42", "Bearer sk_shop-42"] {
        let body = expect_json(app.seller(Some(header)).await, StatusCode::OK).await;
        assert_eq!(body, json!({"seller_id": "shop-42"}), "{header}");
    }
    let stats = app.stats().await.seller;
    assert_eq!((stats.requests, stats.ok, stats.unauthorized), (2, 2, 0));
}

#[tokio::test]
async fn revoked_malformed_and_missing_tokens_are_unauthorized() {
    let app = TestMock::instant().await;
    let long = format!("sk_{}", "a".repeat(33));
    let bad = [
        Some("sk_revoked-1"),
        Some("Bearer sk_revoked"),
        Some("sk_UPPER"),
        Some("sk_"),
        Some("token"),
        Some(long.as_str()),
        None,
    ];
    for header in bad {
        let body = expect_json(app.seller(header).await, StatusCode::UNAUTHORIZED).await;
        assert_eq!(body, json!({"error": "unauthorized"}), "{header:?}");
    }
    assert_eq!(app.stats().await.seller.unauthorized, bad.len() as u64);
}
