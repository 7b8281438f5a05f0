use mock_deps::{EndpointConfig, MockConfig};
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestMock, expect_json, pay_body};

#[tokio::test]
async fn config_is_read_and_patched_over_http() {
    let app = TestMock::start(MockConfig::seed_defaults()).await;
    let config: MockConfig = app.get("/admin/config").await.json().await.unwrap();
    assert_eq!(config, MockConfig::seed_defaults());

    let patch = json!({"seller": {"jitter_ms": 5}, "payment": {"hang_rate": 0.5}});
    let resp = app.put_config(&patch).await;
    let config: MockConfig = resp.json().await.unwrap();
    assert_eq!(config.seller.latency_ms, 200);
    assert_eq!(config.seller.jitter_ms, 5);
    assert_eq!(config.payment.hang_rate, 0.5);

    let patch = json!({"payment": {"charged_error_rate": 0.02}});
    let config: MockConfig = app.put_config(&patch).await.json().await.unwrap();
    assert_eq!(config.payment.charged_error_rate, 0.02);
    assert_eq!(config.payment.hang_rate, 0.5, "untouched");
    assert_eq!(app.mock.config(), config);
}

#[tokio::test]
async fn invalid_config_is_rejected_and_changes_nothing() {
    let app = TestMock::instant().await;
    for bad in [
        json!({"risk": {"error_rate": 1.01}}),
        json!({"risk": {"latency_ms": 5}, "payment": {"hang_rate": -1}}),
        json!({"risk": {"latency": 5}}),
        json!({"seller": {"charged_error_rate": 0.1}}),
        json!({"payment": {"charged_error_rate": 2.0}}),
    ] {
        let body = expect_json(app.put_config(&bad).await, StatusCode::BAD_REQUEST).await;
        assert_eq!(body["error"], "invalid_config", "{bad}");
    }
    assert_eq!(app.mock.config(), MockConfig::instant());
}

#[tokio::test]
async fn reset_clears_ledger_and_stats_but_not_config() {
    let app = TestMock::instant().await;
    app.put_config(&json!({"seller": {"jitter_ms": 1}})).await;
    app.pay(Some("k"), &pay_body(1, "123")).await;
    app.seller(Some("sk_a")).await;
    app.void("k").await;
    app.void("never-paid").await;
    app.lookup("k").await;
    let before = app.ledger().await;
    assert_eq!((before.charges, before.voids, before.tombstones), (1, 1, 1));

    let resp = app.client.post(format!("{}/admin/reset", app.url)).send();
    assert_eq!(resp.await.unwrap().status(), StatusCode::NO_CONTENT);
    assert_eq!(app.ledger().await, mock_deps::Ledger::default());
    let stats = app.stats().await;
    assert_eq!((stats.seller.requests, stats.payment.requests), (0, 0));
    assert_eq!(stats.payment.lookups, 0);
    assert_eq!(app.mock.config().seller.jitter_ms, 1);

    // The key is forgotten: paying again is a new charge.
    app.pay(Some("k"), &pay_body(1, "123")).await;
    assert_eq!(app.ledger().await.charges, 1);
}

#[tokio::test]
async fn direct_handle_api() {
    let app = TestMock::instant().await;
    assert_eq!(app.get("/health").await.status(), StatusCode::OK);
    assert!(app.url.starts_with("http://127.0.0.1:"));
    assert_eq!(app.url, format!("http://127.0.0.1:{}", app.mock.port()));

    let config = MockConfig {
        risk: EndpointConfig::with_latency(7),
        ..MockConfig::instant()
    };
    app.mock.set_config(config);
    let served: MockConfig = app.get("/admin/config").await.json().await.unwrap();
    assert_eq!(served, config);

    app.pay(Some("k"), &pay_body(3, "123")).await;
    assert_eq!(app.mock.ledger().charges, 1);
    assert_eq!(app.mock.stats().payment.ok, 1);
    assert_eq!(
        app.mock.ledger_with_detail().charges_by_key.unwrap()["k"].amount,
        3
    );
    app.mock.reset();
    assert_eq!(app.mock.ledger().charges, 0);
}

#[tokio::test]
async fn stop_releases_the_port() {
    let app = TestMock::instant().await;
    let port = app.mock.port();
    app.mock.stop().await;
    let addr = format!("127.0.0.1:{port}");
    let rebound = mock_deps::MockDeps::bind(&addr, MockConfig::instant(), 1);
    rebound.await.expect("port is free again").stop().await;
}
