//! A rolling deploy loses no request. On SIGTERM the API answers `/ready` 503 at once but keeps
//! accepting and serving new connections for `SHUTDOWN_DELAY_MS` (the platform stops routing to it
//! meanwhile), tells kept-alive clients to close (`Connection: close`), then stops accepting, lets
//! the orders in flight finish and exits 0 within `SHUTDOWN_DELAY_MS` + `SHUTDOWN_GRACE_MS`.
//! SIGINT, a person's Ctrl-C, skips the delay. The API runs as a child process so that a real
//! signal reaches it; every wait here has a bound.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use mock_deps::{MockConfig, MockDeps};
use sqlx::PgPool;
use testkit::child::{ApiChild, api_command, exit_within, free_port, send_signal, start_api};
use testkit::{Api, TOKEN, TestDatabase, contract_tests, eventually, valid_order};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

contract_tests!(
    sigterm_keeps_serving_new_connections_for_the_delay_then_drains_and_exits_0,
    sigterm_tells_a_kept_alive_connection_to_close,
    sigint_skips_the_delay,
);

/// The tests' delay: long enough to send new orders into, short enough to keep the suite quick.
const DELAY: Duration = Duration::from_millis(1500);
const GRACE: Duration = Duration::from_millis(5000);
/// Beyond delay + grace: actix rounds the grace up to a whole second, and the exit itself.
const EXIT_MARGIN: Duration = Duration::from_secs(2);
/// Payment latency: orders sent during the delay are still in flight when it ends.
const PAYMENT_MS: u64 = 700;

struct Process {
    db: TestDatabase,
    deps: MockDeps,
    port: u16,
    child: ApiChild,
}

async fn start(api: Api, delay: Duration) -> Process {
    let db = TestDatabase::new().await;
    let mut mocks = MockConfig::instant();
    mocks.payment.latency_ms = PAYMENT_MS; // under the binary's DEPS_TIMEOUT_MS of 1000
    let deps = MockDeps::spawn(mocks).await.unwrap();
    let port = free_port();
    let mut cmd = api_command(api, &db.url, &deps.base_url(), port);
    cmd.env("SHUTDOWN_DELAY_MS", delay.as_millis().to_string())
        .env("SHUTDOWN_GRACE_MS", GRACE.as_millis().to_string());
    let child = start_api(cmd, port).await;
    Process {
        db,
        deps,
        port,
        child,
    }
}

impl Process {
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// An order sent on a connection of its own (a new client, no pool): what a load balancer
    /// that still routes to this process sends. Answers the status and body.
    fn order_on_a_new_connection(&self, key: &str) -> tokio::task::JoinHandle<(u16, String)> {
        let (url, body) = (self.url("/orders"), valid_order(key));
        tokio::spawn(async move {
            let r = reqwest::Client::new()
                .post(url)
                .header("Authorization", TOKEN)
                .json(&body)
                .timeout(Duration::from_secs(10))
                .send()
                .await;
            match r {
                Ok(r) => (r.status().as_u16(), r.text().await.unwrap_or_default()),
                Err(e) => (0, format!("no answer: {e}")),
            }
        })
    }

    async fn ready_status(&self) -> Option<u16> {
        let r = reqwest::Client::new()
            .get(self.url("/ready"))
            .timeout(Duration::from_secs(2))
            .send()
            .await;
        r.ok().map(|r| r.status().as_u16())
    }

    /// The exit status, waiting until `bound` after `since` at most.
    async fn exit(&mut self, since: Instant, bound: Duration) -> ExitStatus {
        exit_within(&mut self.child, bound.saturating_sub(since.elapsed())).await
    }
}

async fn sigterm_keeps_serving_new_connections_for_the_delay_then_drains_and_exits_0(api: Api) {
    let mut p = start(api, DELAY).await;
    let in_flight: Vec<_> = (0..5)
        .map(|i| p.order_on_a_new_connection(&format!("before-{i}")))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    while p.deps.stats().payment.in_flight < 5 {
        assert!(Instant::now() < deadline, "the payments never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    send_signal(&p.child, "TERM");
    let term = Instant::now();
    // New connections through the first second, as kube-proxy still sends while the endpoint's
    // removal propagates: each sent at its time on the SIGTERM's clock.
    let mut after = Vec::new();
    for i in 0..5u32 {
        tokio::time::sleep_until((term + Duration::from_millis(100 + 200 * u64::from(i))).into())
            .await;
        after.push(p.order_on_a_new_connection(&format!("after-{i}")));
    }
    let ready = p.ready_status().await;
    assert!(
        term.elapsed() < DELAY,
        "the orders and /ready were sent within the delay (a slow machine took {:?})",
        term.elapsed()
    );
    for (i, order) in in_flight.into_iter().enumerate() {
        let (status, body) = order.await.unwrap();
        assert_eq!(status, 201, "in flight at SIGTERM, order {i}: {body}");
    }
    for (i, order) in after.into_iter().enumerate() {
        let (status, body) = order.await.unwrap();
        assert_eq!(
            status, 201,
            "sent {i} after SIGTERM, on a new connection: {body}"
        );
    }
    assert_eq!(ready, Some(503), "/ready during the delay");
    let status = p.exit(term, DELAY + GRACE + EXIT_MARGIN).await;
    assert!(status.success(), "exit status {status}");
    assert!(
        term.elapsed() >= DELAY,
        "exited {:?} after SIGTERM, before its delay",
        term.elapsed()
    );
    let pool = PgPool::connect(&p.db.url).await.unwrap();
    let orders: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(
        (p.deps.ledger().charges, orders),
        (10, 10),
        "every charge has its order"
    );
}

/// One request on `socket` (kept alive); the response's head, lower-cased, once it is whole.
async fn health_on(socket: &mut TcpStream) -> String {
    socket
        .write_all(b"GET /health HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let mut response = Vec::new();
    let mut chunk = [0u8; 1024];
    let read = async {
        while !String::from_utf8_lossy(&response).contains("\"status\"") {
            let n = socket.read(&mut chunk).await.unwrap_or(0);
            assert!(n > 0, "closed before the response: {response:?}");
            response.extend_from_slice(&chunk[..n]);
        }
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .expect("a response within 5 s");
    String::from_utf8_lossy(&response).to_ascii_lowercase()
}

async fn sigterm_tells_a_kept_alive_connection_to_close(api: Api) {
    let mut p = start(api, DELAY).await;
    let mut socket = TcpStream::connect(("127.0.0.1", p.port)).await.unwrap();
    let before = health_on(&mut socket).await;
    assert!(before.starts_with("http/1.1 200"), "{before}");
    assert!(!before.contains("connection: close"), "{before}");
    send_signal(&p.child, "TERM");
    let term = Instant::now();
    eventually(5, "/ready answers 503", || async {
        p.ready_status().await == Some(503)
    })
    .await;
    let during = health_on(&mut socket).await;
    assert!(
        term.elapsed() < DELAY,
        "asked within the delay (a slow machine took {:?})",
        term.elapsed()
    );
    assert!(during.starts_with("http/1.1 200"), "{during}");
    assert!(during.contains("connection: close"), "{during}");
    // And the server closes it: the client reconnects, elsewhere.
    let mut rest = [0u8; 256];
    let closed = tokio::time::timeout(Duration::from_secs(2), socket.read(&mut rest)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "still open after Connection: close: {closed:?}"
    );
    let status = p.exit(term, DELAY + GRACE + EXIT_MARGIN).await;
    assert!(status.success(), "exit status {status}");
}

async fn sigint_skips_the_delay(api: Api) {
    let delay = Duration::from_secs(10);
    let mut p = start(api, delay).await;
    send_signal(&p.child, "INT");
    let interrupted = Instant::now();
    // Well within the 10 s a SIGTERM would keep it listening.
    let status = p.exit(interrupted, delay / 2).await;
    assert!(status.success(), "exit status {status}");
}
