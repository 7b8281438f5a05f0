use std::time::{Duration, Instant};

use mock_deps::{EndpointConfig, MockConfig};
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestMock, expect_json, pay_body, risk_body};

fn failing(error_rate: f64, hang_rate: f64) -> EndpointConfig {
    EndpointConfig {
        error_rate,
        hang_rate,
        ..EndpointConfig::default()
    }
}

#[tokio::test]
async fn injected_errors_answer_503_and_never_charge() {
    let config = MockConfig {
        payment: failing(1.0, 0.0),
        ..MockConfig::instant()
    };
    let app = TestMock::start(config).await;
    for _ in 0..3 {
        let resp = app.pay(Some("k"), &pay_body(100, "123")).await;
        let body = expect_json(resp, StatusCode::SERVICE_UNAVAILABLE).await;
        assert_eq!(body, json!({"error": "injected_failure"}));
    }
    let ledger = app.ledger().await;
    assert_eq!(
        (ledger.charges, ledger.pay_requests, ledger.distinct_keys),
        (0, 0, 0)
    );
    assert_eq!(app.stats().await.payment.injected_errors, 3);

    // Once the failure is lifted, the same key charges normally: a failed attempt left no answer.
    app.put_config(&json!({"payment": {"error_rate": 0.0}}))
        .await;
    let ok = expect_json(
        app.pay(Some("k"), &pay_body(100, "123")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(ok["message"], "SUCCESS");
    assert_eq!(app.ledger().await.charges, 1);
}

#[tokio::test]
async fn a_hang_outlives_the_client_timeout_and_is_freed_when_the_client_leaves() {
    let config = MockConfig {
        seller: failing(0.0, 1.0),
        ..MockConfig::instant()
    };
    let app = TestMock::start(config).await;
    let err = app
        .client
        .get(format!("{}/sellers/authorization", app.url))
        .header("Authorization", "sk_shop")
        .timeout(Duration::from_millis(200))
        .send()
        .await
        .expect_err("a hung request must not answer");
    assert!(err.is_timeout(), "{err}");
    assert_eq!(app.stats().await.seller.hangs, 1);

    // The client is gone: the hung request must not stay in flight for ten minutes.
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.stats().await.seller.in_flight > 0 {
        assert!(
            Instant::now() < deadline,
            "hung request leaked after disconnect"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_hang_ends_when_its_timer_fires() {
    let config = MockConfig {
        risk: failing(0.0, 1.0),
        hang_ms: 300,
        ..MockConfig::instant()
    };
    let app = TestMock::start(config).await;
    let started = Instant::now();
    let resp = app.risk(&risk_body(1, "1")).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    let body = expect_json(resp, StatusCode::GATEWAY_TIMEOUT).await;
    assert_eq!(body, json!({"error": "injected_hang"}));
}

#[tokio::test]
async fn live_config_changes_the_measured_latency() {
    let app = TestMock::instant().await;
    let timed = || async {
        let started = Instant::now();
        let resp = app.risk(&risk_body(1, "1")).await;
        assert_eq!(resp.status(), StatusCode::OK);
        started.elapsed()
    };
    timed().await; // warm the connection
    let fast = timed().await;

    let resp = app.put_config(&json!({"risk": {"latency_ms": 300}})).await;
    let config: MockConfig = resp.json().await.unwrap();
    assert_eq!(config.risk.latency_ms, 300);
    assert_eq!(config.payment, EndpointConfig::default(), "untouched");
    let slow = timed().await;

    assert!(slow >= Duration::from_millis(300), "{slow:?}");
    assert!(fast < slow, "fast {fast:?} vs slow {slow:?}");
}
