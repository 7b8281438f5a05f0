//! Overload is refused early instead of queued to death: admission control (`MAX_IN_FLIGHT`,
//! `QUEUE_TIMEOUT_MS`), request deadlines (`REQUEST_DEADLINE_MS`), clients that give up before
//! or after the reservation, and database waits bounded by `DB_STATEMENT_TIMEOUT_MS`. Run
//! against both APIs.

use std::time::{Duration, Instant};

use mock_deps::MockConfig;
use sqlx::Connection;
use testkit::{
    Api, TOKEN, TestApp, contract_tests, eventually, reqwest_blocking_tests, valid_order,
};

contract_tests!(
    beyond_the_admission_limit_orders_are_refused_at_once,
    a_deadline_passed_before_the_charge_stops_the_work_and_frees_the_key,
    a_client_gone_before_the_reservation_cancels_the_work,
    a_client_gone_after_the_reservation_still_gets_its_order_made,
    a_locked_table_ends_in_503_within_the_statement_timeout,
    the_event_loop_lag_is_measured_where_orders_arrive,
    reads_answer_while_orders_fill_every_place,
);
reqwest_blocking_tests!(a_deadline_passed_before_the_charge_stops_the_work_and_frees_the_key);

async fn metrics(app: &TestApp) -> String {
    app.get("/metrics", None).await.text().await.unwrap()
}

/// `POST /orders` from a client that gives up after `timeout`; `None` when it gave up.
async fn post_with_timeout(
    app: &TestApp,
    body: &serde_json::Value,
    timeout: Duration,
) -> Option<u16> {
    let client = reqwest::Client::builder().timeout(timeout).build().unwrap();
    match client
        .post(format!("{}/orders", app.address))
        .header("Authorization", TOKEN)
        .json(body)
        .send()
        .await
    {
        Ok(r) => Some(r.status().as_u16()),
        Err(e) if e.is_timeout() => None,
        Err(e) => panic!("POST /orders: {e}"),
    }
}

async fn beyond_the_admission_limit_orders_are_refused_at_once(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.payment.latency_ms = 1000;
    let app = TestApp::spawn_with(api, mocks, |s| {
        s.max_in_flight = Some(2);
        s.queue_timeout_ms = 50;
    })
    .await;
    let started = Instant::now();
    let requests: Vec<_> = (0..10)
        .map(|i| {
            let (client, url) = (app.client.clone(), format!("{}/orders", app.address));
            let body = valid_order(&format!("shed-{i}"));
            tokio::spawn(async move {
                let sent = Instant::now();
                let r = client
                    .post(url)
                    .header("Authorization", TOKEN)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let retry_after = r
                    .headers()
                    .get("retry-after")
                    .map(|v| v.to_str().unwrap().to_owned());
                let status = r.status().as_u16();
                let json: serde_json::Value = r.json().await.unwrap();
                (status, json["error"].clone(), retry_after, sent.elapsed())
            })
        })
        .collect();
    let mut created = 0;
    let mut shed = 0;
    for request in requests {
        let (status, error, retry_after, took) = request.await.unwrap();
        match status {
            201 => created += 1,
            503 => {
                shed += 1;
                assert_eq!(error, "overloaded");
                assert_eq!(retry_after.as_deref(), Some("1"));
                assert!(
                    took < Duration::from_millis(700),
                    "refused after {took:?}: a refusal must not wait for the admitted work"
                );
            }
            other => panic!("unexpected status {other} ({error})"),
        }
    }
    assert_eq!((created, shed), (2, 8), "2 admitted, 8 refused");
    assert!(started.elapsed() < Duration::from_secs(5));
    // Refused before authentication, reservation or charge.
    let stats = app.deps.stats();
    assert_eq!(
        stats.seller.requests, 2,
        "the seller was asked for admitted orders only"
    );
    assert_eq!(app.deps.ledger().charges, 2);
    assert_eq!(app.count("idempotency_keys").await, 2);
    let text = metrics(&app).await;
    assert!(text.contains("orders_admission_limit 2"), "{text}");
    assert!(
        text.contains(r#"orders_shed_total{reason="overloaded"} 8"#),
        "{text}"
    );
    // Refused orders may come back: a retry once the load is gone is served.
    let retry = app.post_order(TOKEN, &valid_order("shed-9")).await;
    assert_eq!(retry.status(), 201);
}

async fn a_deadline_passed_before_the_charge_stops_the_work_and_frees_the_key(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.risk.latency_ms = 600;
    let app = TestApp::spawn_with(api, mocks, |s| s.request_deadline_ms = 300).await;
    let body = valid_order("deadline-1");
    let started = Instant::now();
    let response = app.post_order(TOKEN, &body).await;
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));
    let json: serde_json::Value = response.json().await.unwrap();
    assert_eq!(json["error"], "deadline_exceeded", "{json}");
    assert!(
        started.elapsed() < Duration::from_millis(550),
        "answered after {:?}, not at the deadline",
        started.elapsed()
    );
    assert_eq!(app.deps.stats().payment.requests, 0, "nothing was charged");
    assert_eq!(app.count("orders").await, 0);
    assert!(
        metrics(&app)
            .await
            .contains(r#"orders_shed_total{reason="deadline_exceeded"} 1"#)
    );

    // The key was freed: the same order, once risk is fast again, is made.
    mocks.risk.latency_ms = 0;
    app.deps.set_config(mocks);
    let retry = app.post_order(TOKEN, &body).await;
    assert_eq!(retry.status(), 201);
    assert_eq!(app.deps.ledger().charges, 1);
}

async fn a_client_gone_before_the_reservation_cancels_the_work(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.seller.latency_ms = 500;
    let app = TestApp::spawn_with(api, mocks, |_| {}).await;
    let status =
        post_with_timeout(&app, &valid_order("gone-early"), Duration::from_millis(100)).await;
    assert_eq!(status, None, "the client gave up");
    // Once the seller answers, the API notices nobody waits and stops before the reservation.
    eventually(5, "the work to be counted as shed", || async {
        metrics(&app)
            .await
            .contains(r#"orders_shed_total{reason="client_closed_request"} 1"#)
    })
    .await;
    // The shed is counted where the work stops, before the reservation: nothing after it can
    // reserve a key or call a dependency.
    assert_eq!(app.count("idempotency_keys").await, 0, "no key reserved");
    assert_eq!(app.deps.stats().risk.requests, 0);
    assert_eq!(app.deps.ledger().charges, 0);
}

async fn a_client_gone_after_the_reservation_still_gets_its_order_made(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.payment.latency_ms = 500;
    let app = TestApp::spawn_with(api, mocks, |_| {}).await;
    let body = valid_order("gone-late");
    let status = post_with_timeout(&app, &body, Duration::from_millis(200)).await;
    assert_eq!(status, None, "the client gave up while the payment ran");
    // The work past the reservation runs to completion: the charge becomes the order at once,
    // not after a lease and a recovery pass.
    eventually(3, "the order to be made", || async {
        app.count("orders").await == 1
    })
    .await;
    let (state, status): (String, Option<i32>) =
        sqlx::query_as("SELECT state, response_status FROM idempotency_keys")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((state.as_str(), status), ("COMPLETED", Some(201)));
    assert_eq!(app.deps.ledger().charges, 1);
    // The client's retry is answered from the stored 201.
    let retry = app.post_order(TOKEN, &body).await;
    assert_eq!(retry.status(), 201);
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
}

async fn a_locked_table_ends_in_503_within_the_statement_timeout(api: Api) {
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        s.db_statement_timeout_ms = 1000;
    })
    .await;
    // Another session holds a lock on the keys table.
    let mut locker = sqlx::PgConnection::connect(&app.db.url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut locker).await.unwrap();
    sqlx::query("LOCK TABLE idempotency_keys IN ACCESS EXCLUSIVE MODE")
        .execute(&mut locker)
        .await
        .unwrap();
    let started = Instant::now();
    let response = app.post_order(TOKEN, &valid_order("locked-1")).await;
    let took = started.elapsed();
    assert_eq!(response.status(), 503);
    let json: serde_json::Value = response.json().await.unwrap();
    assert_eq!(json["error"], "database_unavailable", "{json}");
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    assert_eq!(app.deps.ledger().charges, 0);

    sqlx::query("ROLLBACK").execute(&mut locker).await.unwrap();
    let response = app.post_order(TOKEN, &valid_order("locked-1")).await;
    assert_eq!(response.status(), 201);
}

/// The loop-lag probe runs on the worker that receives orders (wired by the shared server) and
/// reports a plausible lag: above zero (a sleep wakes at least a little late), far below a second
/// on an idle API. The refusal itself is tested in order-core's admission module, where the lag
/// can be made deterministic.
async fn the_event_loop_lag_is_measured_where_orders_arrive(api: Api) {
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        s.max_loop_lag_ms = 1000;
    })
    .await;
    let status = app.post_order(TOKEN, &valid_order("lag-1")).await.status();
    assert_eq!(status, 201, "an idle loop admits");
    let lag = || async {
        metrics(&app)
            .await
            .lines()
            .find_map(|l| l.strip_prefix("event_loop_lag_seconds "))
            .expect("event_loop_lag_seconds is exported")
            .parse::<f64>()
            .unwrap()
    };
    eventually(5, "the probe to report a lag", || async {
        lag().await > 0.0
    })
    .await;
    let lag = lag().await;
    assert!(lag < 1.0, "an idle API's loop lag: {lag} s");
}

/// Reads do not wait behind orders: with every admission place taken by an order that waits 4 s
/// for the gateway (in blocking-api, every thread of the order pool), `GET /orders/{id}` and
/// `/ready` still answer at once.
async fn reads_answer_while_orders_fill_every_place(api: Api) {
    const PLACES: usize = 64;
    let mut mocks = MockConfig::instant();
    let app = TestApp::spawn_with(api, mocks, |s| s.max_in_flight = Some(PLACES)).await;
    let created = app.post_order(TOKEN, &valid_order("read-1")).await;
    assert_eq!(created.status(), 201);
    let id = created.json::<serde_json::Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    mocks.payment.latency_ms = 4000;
    app.deps.set_config(mocks);
    let orders: Vec<_> = (0..PLACES)
        .map(|i| {
            let (client, url) = (app.client.clone(), format!("{}/orders", app.address));
            let body = valid_order(&format!("fill-{i}"));
            tokio::spawn(async move {
                let request = client.post(url).header("Authorization", TOKEN).json(&body);
                request.send().await.unwrap().status().as_u16()
            })
        })
        .collect();
    eventually(3, "every place to be taken", || async {
        app.metric("orders_admitted_in_flight").await == Some(PLACES as f64)
    })
    .await;
    for path in [format!("/orders/{id}"), "/ready".to_owned()] {
        let started = Instant::now();
        let status = app.get(&path, Some(TOKEN)).await.status();
        let took = started.elapsed();
        assert_eq!(status, 200, "{path}");
        assert!(
            took < Duration::from_secs(1),
            "{path} answered after {took:?}"
        );
    }
    for order in orders {
        assert_eq!(order.await.unwrap(), 201, "an admitted order is made");
    }
}
