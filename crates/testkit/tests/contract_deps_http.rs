//! `DEPS_HTTP`: the calls to the dependencies over HTTP/1.1 (the default) or cleartext HTTP/2,
//! run against both APIs. mock-deps counts the requests that arrived over HTTP/2, so a client
//! that ignored the setting would show.

use mock_deps::MockConfig;
use order_core::settings::DepsHttp;
use testkit::{Api, TOKEN, TestApp, contract_tests, valid_order};

contract_tests!(
    by_default_the_dependencies_are_called_over_http1,
    with_h2c_every_dependency_call_is_http2,
);

async fn by_default_the_dependencies_are_called_over_http1(api: Api) {
    let app = TestApp::spawn_with(api, MockConfig::instant(), |_| {}).await;
    let response = app.post_order(TOKEN, &valid_order("h1-1")).await;
    assert_eq!(response.status(), 201);
    let stats = app.deps.stats();
    assert_eq!(stats.payment.requests, 1);
    assert_eq!(stats.http2_requests, 0);
}

async fn with_h2c_every_dependency_call_is_http2(api: Api) {
    let app =
        TestApp::spawn_with(api, MockConfig::instant(), |s| s.deps_http = DepsHttp::H2c).await;
    for i in 0..3 {
        let response = app
            .post_order(TOKEN, &valid_order(&format!("h2c-{i}")))
            .await;
        assert_eq!(response.status(), 201, "order {i}");
    }
    let stats = app.deps.stats();
    // Seller, risk and payment: three calls per order, all of them HTTP/2.
    let calls = stats.seller.requests + stats.risk.requests + stats.payment.requests;
    assert_eq!(calls, 9);
    assert_eq!(stats.http2_requests, calls);
    assert_eq!(app.deps.ledger().charges, 3);
}
