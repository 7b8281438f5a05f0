//! The probes and the reads cannot starve: `/health` and `/ready` answer within 100 ms however
//! many reads wait and however slow the database is (ready means this process can serve; the
//! database's state is in `/metrics`); a read is refused before any work when its id cannot name
//! an order; reads have an admission of their own (a few places, a bounded queue, a bounded wait);
//! and a flood of reads whose clients gave up leaves no work behind.

use std::time::{Duration, Instant};

use mock_deps::{EndpointConfig, MockConfig};
use testkit::{Api, TOKEN, TestApp, contract_tests, eventually, freezable_database};

contract_tests!(
    probes_answer_within_100ms_while_reads_flood,
    probes_answer_within_100ms_with_the_pool_saturated,
    an_id_no_order_can_have_is_refused_before_any_work,
    reads_whose_clients_left_are_not_run,
    reads_beyond_their_places_wait_a_bounded_time_in_a_bounded_queue,
    an_order_is_admitted_while_reads_fill_their_places_and_queue,
);

/// How fast a probe must answer.
const PROBE_BOUND: Duration = Duration::from_millis(100);

/// Every probe answers 200 within [`PROBE_BOUND`], five times in a row.
async fn assert_probes_fast(app: &TestApp, what: &str) {
    for _ in 0..5 {
        for path in ["/health", "/ready"] {
            let started = Instant::now();
            let status = app.get(path, None).await.status();
            let took = started.elapsed();
            assert_eq!(status, 200, "{path} {what}");
            assert!(took < PROBE_BOUND, "{path} answered after {took:?} {what}");
        }
    }
}

/// Mocks whose seller service takes `ms` to answer: every read waits on it.
fn slow_seller(ms: u64) -> MockConfig {
    MockConfig {
        seller: EndpointConfig::with_latency(ms),
        ..MockConfig::instant()
    }
}

/// `count` reads of an order that does not exist, each given up by its client after `patience`:
/// each one's status (`None`: given up) and how long it took.
fn flood(
    app: &TestApp,
    count: usize,
    patience: Duration,
) -> Vec<tokio::task::JoinHandle<(Option<u16>, Duration)>> {
    let client = reqwest::Client::builder()
        .timeout(patience)
        .build()
        .unwrap();
    (0..count)
        .map(|_| {
            let request = client
                .get(format!("{}/orders/ORDER_NONE", app.address))
                .header("Authorization", TOKEN);
            tokio::spawn(async move {
                let started = Instant::now();
                let status = request.send().await.ok().map(|r| r.status().as_u16());
                (status, started.elapsed())
            })
        })
        .collect()
}

async fn probes_answer_within_100ms_while_reads_flood(api: Api) {
    let app = TestApp::spawn_with(api, slow_seller(3000), |_| {}).await;
    let reads = flood(&app, 200, Duration::from_secs(2));
    // The reads have taken every place once the slow seller has that many calls open.
    testkit::eventually(10, "the reads to take every place", || async {
        app.deps.stats().seller.requests as usize >= READ_PLACES
    })
    .await;
    assert_probes_fast(&app, "while 200 reads wait on a slow seller").await;
    for read in reads {
        // Answered (no such order), refused at once (the reads' queue is full), or given up.
        let (status, _) = read.await.unwrap();
        assert!(
            matches!(status, None | Some(404 | 503)),
            "a read answered {status:?}"
        );
    }
}

/// Database connections of the API in [`probes_answer_within_100ms_with_the_pool_saturated`].
const SATURATED_POOL: u32 = 2;

/// Requests kept going at once against the saturated pool: orders and reads, half each.
const PRESSING: usize = 16;

/// Keeps [`PRESSING`] requests going (orders under fresh keys, reads of `location`) until
/// `stop`: each loop sends its next request when the last one is answered.
fn press(
    app: &TestApp,
    location: &str,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    use std::sync::atomic::Ordering;
    (0..PRESSING)
        .map(|n| {
            let (client, address) = (app.client.clone(), app.address.clone());
            let (location, stop) = (location.to_owned(), stop.clone());
            tokio::spawn(async move {
                let mut sent = 0;
                while !stop.load(Ordering::Relaxed) {
                    let request = if n % 2 == 0 {
                        let body = testkit::valid_order(&format!("pressing-{n}-{sent}"));
                        client.post(format!("{address}/orders")).json(&body)
                    } else {
                        client.get(format!("{address}{location}"))
                    };
                    let started = Instant::now();
                    let _ = request.header("Authorization", TOKEN).send().await;
                    sent += 1;
                    // A fast refusal (admission, a read queue) is paced, not spun on.
                    if started.elapsed() < Duration::from_millis(50) {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            })
        })
        .collect()
}

/// Whether every pooled connection is held and requests wait for one.
async fn pool_saturated(app: &TestApp) -> bool {
    let in_use = app.metric("db_pool_connections_in_use").await;
    let waiting = app.metric("db_pool_waiting").await.unwrap_or(0.0);
    in_use == Some(f64::from(SATURATED_POOL)) && waiting > 0.0
}

/// The database slow (500 ms a round trip), then frozen, with every pooled connection held and
/// orders and reads waiting for one: the probes answer within [`PROBE_BOUND`] in both phases.
async fn probes_answer_within_100ms_with_the_pool_saturated(api: Api) {
    let mut proxy = None;
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        s.db_pool_size = SATURATED_POOL;
        proxy = Some(freezable_database(s));
    })
    .await;
    let proxy = proxy.unwrap();
    let made = app
        .post_order(TOKEN, &testkit::valid_order("saturated-0"))
        .await;
    assert_eq!(made.status(), 201);
    let location = made.headers()["location"].to_str().unwrap().to_owned();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));

    proxy.set_rtt(Duration::from_millis(500));
    let pressing = press(&app, &location, &stop);
    let what = "saturated pool on a slow database";
    eventually(20, what, || pool_saturated(&app)).await;
    assert_probes_fast(&app, &format!("with a {what}")).await;
    assert!(
        pool_saturated(&app).await,
        "{api:?}: the {what} did not last"
    );

    proxy.set_frozen(true);
    let what = "saturated pool on a frozen database";
    eventually(20, what, || pool_saturated(&app)).await;
    assert_probes_fast(&app, &format!("with a {what}")).await;
    assert!(
        pool_saturated(&app).await,
        "{api:?}: the {what} did not last"
    );

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    proxy.set_frozen(false);
    proxy.set_rtt(Duration::ZERO);
    for request in pressing {
        request.await.unwrap();
    }
}

async fn an_id_no_order_can_have_is_refused_before_any_work(api: Api) {
    let app = TestApp::spawn(api).await;
    for id in ["A".repeat(2000), "ORDER_%20%27x".to_owned()] {
        let started = Instant::now();
        let response = app.get(&format!("/orders/{id}"), Some(TOKEN)).await;
        assert_eq!(response.status(), 404, "{id}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"], "not_found");
        assert!(started.elapsed() < Duration::from_secs(1));
    }
    assert_eq!(
        app.deps.stats().seller.requests,
        0,
        "the seller was asked about an id no order can have"
    );
}

async fn reads_whose_clients_left_are_not_run(api: Api) {
    let app = TestApp::spawn_with(api, slow_seller(1000), |_| {}).await;
    let reads = flood(&app, 30, Duration::from_millis(300));
    for read in reads {
        read.await.unwrap();
    }
    // Every client has given up. The reads already calling the seller finish their call; none
    // starts afterwards: in the window below, no call may begin.
    testkit::eventually(10, "the seller's open calls to end", || async {
        app.deps.stats().seller.in_flight == 0
    })
    .await;
    let settled = app.deps.stats().seller.requests;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let later = app.deps.stats().seller.requests;
    assert_eq!(
        later, settled,
        "{api:?} went on calling the seller for reads nobody waits for"
    );
}

/// testkit's read places (`READ_THREADS` / `READ_IN_FLIGHT`) and queue (`READ_QUEUE`).
const READ_PLACES: usize = 4;
const READ_QUEUE: usize = 64;

async fn reads_beyond_their_places_wait_a_bounded_time_in_a_bounded_queue(api: Api) {
    let queue_timeout = Duration::from_millis(1000);
    let app = TestApp::spawn_with(api, slow_seller(3000), |s| {
        s.queue_timeout_ms = queue_timeout.as_millis() as u64;
    })
    .await;
    let count = 100;
    let reads = flood(&app, count, Duration::from_secs(10));
    let mut answered = 0;
    for read in reads {
        match read.await.unwrap() {
            (Some(404), _) => answered += 1,
            (Some(503), took) => assert!(
                took < queue_timeout + Duration::from_millis(700),
                "{api:?}: a refused read waited {took:?}"
            ),
            other => panic!("{api:?}: a read answered {other:?}"),
        }
    }
    // Every read arrived within the seller's 3 s: only those with a place were served.
    assert_eq!(answered, READ_PLACES, "{api:?}: reads served");
    assert_eq!(
        app.deps.stats().seller.requests as usize,
        READ_PLACES,
        "{api:?}: seller calls"
    );
    let refused = |reason| format!(r#"reads_refused_total{{reason="{reason}"}}"#);
    let full = app.metric(&refused("queue_full")).await.unwrap_or(0.0);
    let timed_out = app.metric(&refused("queue_timeout")).await.unwrap_or(0.0);
    assert_eq!(full as usize, count - READ_PLACES - READ_QUEUE, "{api:?}");
    assert_eq!(timed_out as usize, READ_QUEUE, "{api:?}");
}

/// Reads never take the orders' places: with every read place taken and the reads' queue full,
/// an order is admitted at once under an admission of one place and a 200 ms queue timeout.
async fn an_order_is_admitted_while_reads_fill_their_places_and_queue(api: Api) {
    let seller = Duration::from_millis(1000);
    let app = TestApp::spawn_with(api, slow_seller(seller.as_millis() as u64), |s| {
        s.max_in_flight = Some(1);
        s.queue_timeout_ms = 200;
    })
    .await;
    let reads = flood(&app, READ_PLACES + READ_QUEUE + 20, Duration::from_secs(10));
    let full = r#"reads_refused_total{reason="queue_full"}"#;
    eventually(10, "the reads' queue to be full", || async {
        app.metric(full).await.unwrap_or(0.0) > 0.0
    })
    .await;
    let started = Instant::now();
    let order = app
        .post_order(TOKEN, &testkit::valid_order("beside-reads-1"))
        .await;
    let took = started.elapsed();
    assert_eq!(
        order.status(),
        201,
        "{api:?}: {}",
        order.text().await.unwrap()
    );
    // Its own seller call, and no read's.
    assert!(
        took < seller + Duration::from_millis(1500),
        "{api:?}: the order took {took:?}"
    );
    for read in reads {
        read.await.unwrap();
    }
}
