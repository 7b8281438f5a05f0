//! `DEPS_HTTP`: the calls to the dependencies over HTTP/1.1 (the default) or cleartext HTTP/2,
//! run against both APIs. mock-deps counts the requests that arrived over HTTP/2, so a client
//! that ignored the setting would show. blocking-api's default client (ureq) speaks no HTTP/2:
//! with `DEPS_HTTP=h2c` it refuses to start, naming the client that does, whose calls are then
//! HTTP/2. And the gateway paths that carry a charge's key encode it.

use std::process::{Command, Stdio};

use mock_deps::MockConfig;
use order_core::plumbing::settings::DepsHttp;
use testkit::{
    Api, TOKEN, TestApp, api_tests, contract_tests, eventually, reqwest_blocking_tests, valid_order,
};

contract_tests!(
    by_default_the_dependencies_are_called_over_http1,
    a_seller_id_with_url_characters_is_encoded_in_gateway_paths,
);
// Every client that speaks HTTP/2: reactive-api's and blocking-api's reqwest::blocking.
api_tests!(
    reactive_h2c,
    Reactive,
    with_h2c_every_dependency_call_is_http2
);
reqwest_blocking_tests!(with_h2c_every_dependency_call_is_http2);

/// blocking-api's binary with `DEPS_HTTP=h2c` and its default client refuses to start, saying
/// which setting would make it work; nothing else is needed to see it (the check comes before
/// the database is reached).
#[test]
fn blocking_api_with_ureq_refuses_h2c_naming_the_client_that_speaks_it() {
    let binary = testbed::process::find_binary("blocking-api")
        .expect("scripts/test.sh builds the API binaries");
    let out = Command::new(binary)
        .env_clear()
        .env("DATABASE_URL", "postgres://127.0.0.1:1/unreached")
        .env("REQUEST_HASH_KEY", "a-test-request-hash-key")
        .env("BIND_ADDR", "127.0.0.1:0")
        .env("DEPS_HTTP", "h2c")
        .stdin(Stdio::null())
        .output()
        .expect("running blocking-api");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "it started: {said}");
    assert!(said.contains("DEPS_HTTP=h2c"), "{said}");
    assert!(said.contains("DEPS_CLIENT=reqwest-blocking"), "{said}");
}

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

/// A seller id is the seller service's to choose, and it may hold characters that mean something
/// in a URL (mock-deps hands out ids with `/`, `?` and `%`). Recovery's gateway calls put the
/// charge's key, which starts with the seller id, in the path: encoded, the lookup finds the
/// charge and recovery makes the order; not encoded, it asks for another path and never settles.
async fn a_seller_id_with_url_characters_is_encoded_in_gateway_paths(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.payment.charged_error_rate = 1.0;
    let app = TestApp::spawn_with(api, mocks, testkit::fast_recovery).await;
    let response = app
        .post_order("sk_shop/1?a%2f", &valid_order("url-1"))
        .await;
    assert_eq!(
        response.status(),
        503,
        "charged, then the gateway answered 500"
    );
    let seller: String = sqlx::query_scalar("SELECT seller_id FROM idempotency_keys")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(seller, "shop/1?a%2f");
    eventually(
        20,
        "recovery to find the charge and make the order",
        || async { app.count("orders").await == 1 },
    )
    .await;
    let ledger = app.deps.ledger();
    assert_eq!((ledger.charges, ledger.voids), (1, 0));
}
