//! No dependency call follows a redirect: a gateway that answers a charge with `307` to another
//! host gets neither the card nor the power to make an order. The 3xx is an unknown outcome: the
//! client gets 503 `dependency_unavailable`, the key stays `CHARGING`, and recovery's own calls
//! to the gateway do not follow the redirect either. Each such call counts as failed in the
//! dependency metrics. A 3xx from the seller service or the risk analysis is a failed call (503
//! `dependency_unavailable` naming it), not followed either.

use mock_deps::MockConfig;
use testkit::{
    Api, RedirectingDeps, TOKEN, TestApp, Trap, contract_tests, eventually, fast_recovery,
    reqwest_blocking_tests, valid_order,
};

contract_tests!(
    a_gateway_redirect_is_not_followed_and_makes_no_order,
    a_seller_or_risk_redirect_is_a_failed_call_and_is_not_followed,
);
reqwest_blocking_tests!(
    a_gateway_redirect_is_not_followed_and_makes_no_order,
    a_seller_or_risk_redirect_is_a_failed_call_and_is_not_followed,
);

/// The seller service or the risk analysis answering 307 to another host: 503
/// `dependency_unavailable` naming it, nothing sent to that host (the seller's call carries the
/// client's token, the risk analysis's the customer), no charge and no order.
async fn a_seller_or_risk_redirect_is_a_failed_call_and_is_not_followed(api: Api) {
    for (prefix, dependency) in [
        (order_core::domain::deps::SELLER_PATH, "seller"),
        (order_core::domain::deps::RISK_PATH, "risk"),
    ] {
        let trap = Trap::start().await;
        let deps = RedirectingDeps::redirecting(trap.url(), prefix).await;
        let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
            s.deps_url = deps.url().to_owned();
        })
        .await;
        let reference_id = format!("redirect-{dependency}");
        let response = app.post_order(TOKEN, &valid_order(&reference_id)).await;
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(status, 503, "{dependency}: {body}");
        assert_eq!(body["error"], "dependency_unavailable", "{body}");
        assert_eq!(body["dependency"], dependency, "{body}");
        assert_eq!(
            trap.connections(),
            0,
            "{dependency}'s redirect was followed"
        );
        assert_eq!(app.count("orders").await, 0);
        let failed_calls = format!(
            "dependency_request_duration_seconds_count{{dependency=\"{dependency}\",outcome=\"error\"}}"
        );
        let failed = app.metric(&failed_calls).await.unwrap_or_default();
        assert!(failed >= 1.0, "{dependency}'s 3xx not counted as failed");
    }
}

async fn a_gateway_redirect_is_not_followed_and_makes_no_order(api: Api) {
    let trap = Trap::start().await;
    let deps = RedirectingDeps::start(trap.url()).await;
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        fast_recovery(s);
        s.deps_url = deps.url().to_owned();
    })
    .await;

    let response = app.post_order(TOKEN, &valid_order("redirect-1")).await;
    let status = response.status().as_u16();
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"], "dependency_unavailable", "{body}");
    assert_eq!(body["dependency"], "payment", "{body}");

    // Seller, risk, the charge, then at least one of recovery's look-ups, all redirected.
    eventually(15, "recovery to ask the redirecting gateway", || async {
        deps.requests() >= 4
    })
    .await;
    assert_eq!(trap.connections(), 0, "a redirect was followed");
    assert_eq!(trap.bytes_received(), 0, "the other host received bytes");
    assert_eq!(app.count("orders").await, 0, "an order without a charge");
    let state: String =
        sqlx::query_scalar("SELECT state FROM idempotency_keys WHERE reference_id = 'redirect-1'")
            .fetch_one(&app.pool)
            .await
            .expect("the key");
    assert_eq!(
        state, "CHARGING",
        "the charge's outcome is unknown: the key stays CHARGING"
    );
    // The metrics agree: every redirected gateway call is a failed one.
    let payment = |outcome: &str| {
        format!(
            "dependency_request_duration_seconds_count{{dependency=\"payment\",outcome=\"{outcome}\"}}"
        )
    };
    assert_eq!(
        app.metric(&payment("ok")).await,
        None,
        "a 3xx counted as a call that worked"
    );
    let failed = app.metric(&payment("error")).await.unwrap_or_default();
    assert!(
        failed >= 2.0,
        "the charge and a look-up, counted as failed: {failed}"
    );
}
