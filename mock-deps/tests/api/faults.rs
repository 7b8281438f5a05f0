use std::time::{Duration, Instant};

use mock_deps::{EndpointConfig, MockConfig};
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestMock, expect_json, ledger_eventually, pay_body, risk_body};

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

#[tokio::test]
async fn charged_then_500_keeps_the_charge() {
    let app = TestMock::instant().await;
    app.put_config(&json!({"payment": {"charged_error_rate": 1.0}}))
        .await;
    let resp = app.pay(Some("acme:o-1:1"), &pay_body(15_000, "123")).await;
    let body = expect_json(resp, StatusCode::INTERNAL_SERVER_ERROR).await;
    assert_eq!(body, json!({"error": "injected_failure_after_charge"}));
    assert_eq!(app.ledger().await.charges, 1, "the money is gone");
    assert_eq!(app.stats().await.payment.injected_charged_errors, 1);
    let found = expect_json(app.lookup("acme:o-1:1").await, StatusCode::OK).await;
    assert_eq!(
        (&found["status"], &found["charged"]),
        (&json!("SUCCESS"), &json!(true))
    );

    // Once the fault is lifted, a retry replays the charge the client never saw.
    app.put_config(&json!({"payment": {"charged_error_rate": 0.0}}))
        .await;
    let retry = app.pay(Some("acme:o-1:1"), &pay_body(15_000, "123")).await;
    let retry = expect_json(retry, StatusCode::OK).await;
    assert_eq!(retry["code"], found["code"]);
    let ledger = app.ledger().await;
    assert_eq!((ledger.charges, ledger.replayed_requests), (1, 1));
}

#[tokio::test]
async fn a_payment_whose_client_leaves_still_charges() {
    let config = MockConfig {
        payment: EndpointConfig::with_latency(500),
        ..MockConfig::instant()
    };
    let app = TestMock::start(config).await;
    let started = Instant::now();
    let err = app
        .client
        .post(format!("{}/gateway/pay", app.url))
        .header("Idempotency-Key", "acme:gone:1")
        .json(&pay_body(15_000, "123"))
        .timeout(Duration::from_millis(100))
        .send()
        .await
        .expect_err("the client gives up before the latency ends");
    assert!(err.is_timeout(), "{err}");

    let ledger = ledger_eventually(&app, Duration::from_secs(10), |l| l.charges == 1).await;
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "charged after the latency"
    );
    assert_eq!((ledger.pay_requests, ledger.distinct_keys), (1, 1));
    let found = expect_json(app.lookup("acme:gone:1").await, StatusCode::OK).await;
    assert_eq!(found["status"], "SUCCESS");
    // The request stayed in flight until its charge was done, and not after.
    assert_eq!(app.stats().await.payment.in_flight, 0);
}

#[tokio::test]
async fn a_hung_payment_never_charges_and_leaves_with_its_client() {
    let config = MockConfig {
        payment: failing(0.0, 1.0),
        ..MockConfig::instant()
    };
    let app = TestMock::start(config).await;
    let err = app
        .client
        .post(format!("{}/gateway/pay", app.url))
        .header("Idempotency-Key", "acme:hung:1")
        .json(&pay_body(15_000, "123"))
        .timeout(Duration::from_millis(200))
        .send()
        .await
        .expect_err("a hung payment must not answer");
    assert!(err.is_timeout(), "{err}");

    let deadline = Instant::now() + Duration::from_secs(10);
    while app.stats().await.payment.in_flight > 0 {
        assert!(
            Instant::now() < deadline,
            "hung payment leaked after disconnect"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ledger = app.ledger().await;
    assert_eq!((ledger.charges, ledger.pay_requests), (0, 0));
    assert_eq!(app.stats().await.payment.hangs, 1);
}
