//! `DEPS_URL`'s host name is looked up once and kept (`order_core::plumbing::dns`), by each
//! client of each API: a burst of new connections makes one query, not one per connection (nor,
//! with ureq, one per call), and a name that does not resolve fails each call at once with 503
//! `dependency_unavailable`, shows on `/metrics`, and leaves `/ready` as it was (it says whether
//! this process can serve; the dependencies' state is in `/metrics`).

use std::time::{Duration, Instant};

use mock_deps::{EndpointConfig, MockConfig};
use testkit::{Api, TOKEN, TestApp, contract_tests, reqwest_blocking_tests, valid_order};

contract_tests!(
    a_dependency_name_is_looked_up_once_for_a_burst_of_orders,
    a_name_that_does_not_resolve_fails_each_call_at_once_and_shows_on_metrics,
);
reqwest_blocking_tests!(
    a_dependency_name_is_looked_up_once_for_a_burst_of_orders,
    a_name_that_does_not_resolve_fails_each_call_at_once_and_shows_on_metrics,
);

async fn a_dependency_name_is_looked_up_once_for_a_burst_of_orders(api: Api) {
    // mock-deps answers after 50 ms, so the burst's calls overlap and need connections of their
    // own: reqwest would look the name up for each new one, ureq for every call.
    let mocks = MockConfig {
        seller: EndpointConfig::with_latency(50),
        risk: EndpointConfig::with_latency(50),
        payment: EndpointConfig::with_latency(50),
        ..MockConfig::instant()
    };
    let app = TestApp::spawn_with(api, mocks, |s| {
        s.deps_url = s.deps_url.replace("127.0.0.1", "localhost");
        assert!(s.deps_url.contains("localhost"), "{}", s.deps_url);
    })
    .await;
    let orders = (0..20).map(|i| {
        let app = &app;
        async move {
            app.post_order(TOKEN, &valid_order(&format!("names-{i}")))
                .await
                .status()
                .as_u16()
        }
    });
    let statuses = futures_util::future::join_all(orders).await;
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    let looked_up = app
        .metric(r#"deps_dns_lookups_total{name="localhost",outcome="ok"}"#)
        .await;
    assert_eq!(looked_up, Some(1.0), "20 orders, 60 calls: one lookup");
}

async fn a_name_that_does_not_resolve_fails_each_call_at_once_and_shows_on_metrics(api: Api) {
    // `.invalid` never resolves (RFC 6761).
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        s.deps_url = "http://deps.invalid:9".to_owned();
    })
    .await;
    for i in 0..5 {
        let start = Instant::now();
        let response = app
            .post_order(TOKEN, &valid_order(&format!("unresolved-{i}")))
            .await;
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(status, 503, "{body}");
        assert_eq!(body["error"], "dependency_unavailable", "{body}");
        assert_eq!(body["dependency"], "seller", "{body}");
        // At once: not the client's timeout (10 s by default).
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }
    let failed = app
        .metric(r#"deps_dns_lookups_total{name="deps.invalid",outcome="failed"}"#)
        .await
        .unwrap_or_default();
    // Five orders close together: one lookup, the others answered with its error (a new
    // lookup waits a second), and never more than one lookup per order.
    assert!((1.0..=5.0).contains(&failed), "failed lookups: {failed}");
    assert_eq!(app.get("/ready", None).await.status().as_u16(), 200);
    assert_eq!(app.count("orders").await, 0);
}
