//! A dependency's answer is untrusted input: bounded in size, in total time and so in memory, and
//! refused (never a 500) when it is over the bound, cut short, malformed or not JSON — with the
//! same answer to the client as any failed dependency, and counted by dependency and reason. Where
//! the gateway charged before its answer went bad, the charge ends as one order, through recovery
//! or through the client's retry under the same key. Run against both APIs (and blocking-api's
//! reqwest::blocking client, for the cases the client decides).
//!
//! Memory is read as the test process's peak resident set (`VmHWM`): testkit serves the API on
//! the test's own runtime, and a refused answer's buffer is freed when its call ends, so only the
//! peak shows what reading it cost.

use std::time::{Duration, Instant};

use mock_deps::{BadAnswer, MockConfig};
use order_core::domain::deps::DEPS_ANSWER_MAX_BYTES;
use testkit::{
    Api, TOKEN, TestApp, assert_money_balances, contract_tests, eventually, fast_recovery,
    reqwest_blocking_tests, valid_order,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

contract_tests!(
    an_endless_answer_is_refused_at_the_bound_in_little_time_and_memory,
    an_answer_whose_length_is_over_the_bound_is_refused,
    a_dripped_answer_ends_with_the_call_timeout,
    an_answer_that_is_not_json_is_refused,
    a_malformed_answer_is_refused,
    a_pay_answer_cut_after_the_charge_ends_as_one_order,
    a_connection_dropped_after_the_charge_ends_as_one_order,
    an_endless_pay_answer_after_the_charge_ends_as_one_order,
);
reqwest_blocking_tests!(
    an_endless_answer_is_refused_at_the_bound_in_little_time_and_memory,
    an_answer_whose_length_is_over_the_bound_is_refused,
    a_dripped_answer_ends_with_the_call_timeout,
    a_pay_answer_cut_after_the_charge_ends_as_one_order,
);

/// "A few MiB, not hundreds": how much higher than before a refused answer may take the
/// process's peak resident set. With the bound it rose 1.3–1.6 MiB; an unbounded read of an
/// endless answer within a 6 s timeout took it up 1.6 GiB (reqwest, both APIs) or by ureq's own
/// 10 MB default (blocking-api).
const PEAK_GROWTH_MAX_KIB: u64 = 8 * 1024;

// The oversized answer is over the bound by construction.
const _: () = assert!(mock_deps::config::OVERSIZED_BYTES > DEPS_ANSWER_MAX_BYTES);

/// The process's peak resident set so far, KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("reading /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

/// mock-deps with `dependency`'s every answer spoiled as `kind` says.
fn misanswering(
    kind: BadAnswer,
    pick: fn(&mut MockConfig) -> &mut mock_deps::EndpointConfig,
) -> MockConfig {
    let mut mocks = MockConfig::instant();
    let endpoint = pick(&mut mocks);
    endpoint.answer_fault = kind;
    endpoint.answer_fault_rate = 1.0;
    mocks
}

/// The answer of a failed dependency: `503 dependency_unavailable` naming it.
async fn assert_dependency_failed(response: reqwest::Response, dependency: &str) {
    assert_eq!(response.status(), 503);
    let json: serde_json::Value = response.json().await.expect("a JSON error body");
    assert_eq!(json["error"], "dependency_unavailable", "{json}");
    assert_eq!(json["dependency"], dependency, "{json}");
}

/// `dependency_answers_refused_total` for one dependency and reason.
async fn refused(app: &TestApp, dependency: &str, reason: &str) -> f64 {
    let name = format!(
        r#"dependency_answers_refused_total{{dependency="{dependency}",reason="{reason}"}}"#
    );
    app.metric(&name).await.unwrap_or(0.0)
}

async fn an_endless_answer_is_refused_at_the_bound_in_little_time_and_memory(api: Api) {
    let mocks = misanswering(BadAnswer::Endless, |m| &mut m.risk);
    // A timeout long enough for an unbounded read to show in time and memory.
    let app = TestApp::spawn_with(api, mocks, |s| s.deps_timeout_ms = 6000).await;
    // Warm up: the process's first order allocates what every order reuses.
    let mut warm = mocks;
    warm.risk.answer_fault_rate = 0.0;
    app.deps.set_config(warm);
    assert_eq!(
        app.post_order(TOKEN, &valid_order("warm-1")).await.status(),
        201
    );
    app.deps.set_config(mocks);

    let peak_before = peak_rss_kib();
    let started = Instant::now();
    let response = app.post_order(TOKEN, &valid_order("endless-1")).await;
    let took = started.elapsed();
    let growth = peak_rss_kib().saturating_sub(peak_before);
    eprintln!("{api:?}: refused after {took:?}, peak RSS {peak_before} KiB + {growth} KiB");
    assert_dependency_failed(response, "risk").await;
    assert!(
        took < Duration::from_secs(3),
        "refused at the bound, not at the 6 s timeout: {took:?}"
    );
    assert!(
        growth < PEAK_GROWTH_MAX_KIB,
        "the peak RSS grew {growth} KiB on one endless answer"
    );
    assert_eq!(refused(&app, "risk", "too_large").await, 1.0);
}

async fn an_answer_whose_length_is_over_the_bound_is_refused(api: Api) {
    // Valid JSON padded to four times the bound, with its Content-Length: only the bound refuses it.
    let app = TestApp::spawn(api).await;
    app.deps
        .set_config(misanswering(BadAnswer::Oversized, |m| &mut m.seller));
    let response = app.post_order(TOKEN, &valid_order("oversized-1")).await;
    assert_dependency_failed(response, "seller").await;
    assert_eq!(refused(&app, "seller", "too_large").await, 1.0);
    assert_eq!(app.count("idempotency_keys").await, 0);
}

async fn a_dripped_answer_ends_with_the_call_timeout(api: Api) {
    // One byte every 0.4 s: no read waits long, the whole answer would take 11 s.
    let mocks = misanswering(BadAnswer::Drip, |m| &mut m.risk);
    let app = TestApp::spawn_with(api, mocks, |s| s.deps_timeout_ms = 1500).await;
    let started = Instant::now();
    let response = app.post_order(TOKEN, &valid_order("drip-1")).await;
    let took = started.elapsed();
    assert_dependency_failed(response, "risk").await;
    assert!(
        (Duration::from_millis(1400)..Duration::from_millis(1500 + 4000)).contains(&took),
        "the dripped answer ended after {took:?}, not at the 1.5 s timeout"
    );
    assert_eq!(refused(&app, "risk", "timed_out").await, 1.0);
}

/// A server that answers every request `200` with `content_type` and `body`, then closes.
async fn fixed_server(content_type: &'static str, body: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    url
}

async fn an_answer_that_is_not_json_is_refused(api: Api) {
    // The seller's answer, word for word, but said to be HTML.
    let url = fixed_server("text/html", r#"{"seller_id":"acme"}"#).await;
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| s.deps_url = url).await;
    let response = app.post_order(TOKEN, &valid_order("html-1")).await;
    assert_dependency_failed(response, "seller").await;
    assert_eq!(refused(&app, "seller", "content_type").await, 1.0);
}

async fn a_malformed_answer_is_refused(api: Api) {
    let url = fixed_server("application/json", r#"{"seller_id":"#).await;
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| s.deps_url = url).await;
    let response = app.post_order(TOKEN, &valid_order("malformed-1")).await;
    assert_dependency_failed(response, "seller").await;
    assert_eq!(refused(&app, "seller", "malformed").await, 1.0);
}

/// The gateway charges, then its answer goes bad as `kind` says. Two orders: the first is left
/// to recovery, the second is retried by its client under the same key once the gateway answers
/// well again. Each charge ends as exactly one order, and the retry ends 201.
async fn money_after_a_bad_pay_answer(api: Api, kind: BadAnswer) {
    let mocks = misanswering(kind, |m| &mut m.payment);
    let app = TestApp::spawn_with(api, mocks, fast_recovery).await;
    let (left, retried) = (valid_order("left-1"), valid_order("retried-1"));
    for body in [&left, &retried] {
        let started = Instant::now();
        let response = app.post_order(TOKEN, body).await;
        let took = started.elapsed();
        assert_dependency_failed(response, "payment").await;
        // `fast_recovery`'s DEPS_TIMEOUT_MS is 1 s.
        assert!(took < Duration::from_secs(4), "{kind:?} took {took:?}");
    }
    assert_eq!(app.deps.ledger().charges, 2, "the gateway charged both");

    let mut healed = mocks;
    healed.payment.answer_fault_rate = 0.0;
    app.deps.set_config(healed);
    let retry = app.post_order(TOKEN, &retried).await;
    assert_eq!(retry.status(), 201, "the retry under the same key");
    eventually(20, "recovery to complete the order left", || async {
        app.count("orders").await == 2
    })
    .await;
    let ledger = app.deps.ledger();
    assert_eq!((ledger.charges, ledger.distinct_keys), (2, 2));
    assert_money_balances(&app).await;
}

async fn a_pay_answer_cut_after_the_charge_ends_as_one_order(api: Api) {
    money_after_a_bad_pay_answer(api, BadAnswer::Cut).await;
}

async fn a_connection_dropped_after_the_charge_ends_as_one_order(api: Api) {
    money_after_a_bad_pay_answer(api, BadAnswer::Reset).await;
}

async fn an_endless_pay_answer_after_the_charge_ends_as_one_order(api: Api) {
    money_after_a_bad_pay_answer(api, BadAnswer::Endless).await;
}
