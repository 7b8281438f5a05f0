//! The API holds at most `MAX_CONNECTIONS` client connections: a request on a connection above
//! the cap is answered 503 `too_many_connections` with `Connection: close` and the connection is
//! closed, while the connections under the cap keep being served; a closed one frees its place.
//! The probes are answered above the cap too (then the connection is closed), so a replica at its
//! cap is neither restarted nor taken out of its Service.

use std::time::Duration;

use mock_deps::MockConfig;
use testkit::{Api, TestApp, contract_tests, eventually};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

contract_tests!(
    connections_above_max_connections_are_refused_and_the_others_keep_working,
    probes_on_a_connection_above_max_connections_are_answered_then_closed,
);

/// A request that is not a probe (any such request is refused above the cap).
const READ: &str = "/orders/ORDER_1";

const CAP: usize = 4;
const EXTRA: usize = 3;

/// One answer on a raw connection: its head and body.
struct Answer {
    head: String,
    body: String,
}

impl Answer {
    fn status(&self) -> &str {
        self.head.split(' ').nth(1).unwrap_or_default()
    }
}

/// Sends `GET /health` on `socket` and reads its whole answer.
async fn exchange(socket: &mut TcpStream) -> Answer {
    get(socket, "/health").await
}

/// Sends `GET path` on `socket` and reads its whole answer.
async fn get(socket: &mut TcpStream, path: &str) -> Answer {
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n");
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut chunk))
            .await
            .expect("an answer within 10 s")
            .unwrap();
        assert!(
            n > 0,
            "closed before its answer: {:?}",
            String::from_utf8_lossy(&bytes)
        );
        bytes.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        let length: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap())
            })
            .expect("a Content-Length");
        if body.len() >= length {
            return Answer {
                head: head.to_ascii_lowercase(),
                body: body.to_owned(),
            };
        }
    }
}

/// Whether the server closes `socket` (reads end) within 5 s.
async fn closed_by_server(socket: &mut TcpStream) -> bool {
    let mut rest = [0u8; 64];
    matches!(
        tokio::time::timeout(Duration::from_secs(5), socket.read(&mut rest)).await,
        Ok(Ok(0) | Err(_))
    )
}

/// The API with `MAX_CONNECTIONS` = [`CAP`], its address and [`CAP`] connections held open.
async fn at_the_cap(api: Api) -> (TestApp, String, Vec<TcpStream>) {
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        s.max_connections = Some(CAP);
        s.keep_alive_s = 60;
    })
    .await;
    let address = app.address.trim_start_matches("http://").to_owned();
    let mut held = Vec::new();
    for _ in 0..CAP {
        let mut socket = TcpStream::connect(&address).await.unwrap();
        assert_eq!(exchange(&mut socket).await.status(), "200");
        held.push(socket);
    }
    (app, address, held)
}

async fn connections_above_max_connections_are_refused_and_the_others_keep_working(api: Api) {
    let (_app, address, mut held) = at_the_cap(api).await;
    for i in 0..EXTRA {
        let mut extra = TcpStream::connect(&address).await.unwrap();
        let answer = get(&mut extra, READ).await;
        assert_eq!(
            answer.status(),
            "503",
            "extra connection {i}: {}",
            answer.head
        );
        assert!(answer.head.contains("connection: close"), "{}", answer.head);
        let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(body["error"], "too_many_connections");
        assert!(
            closed_by_server(&mut extra).await,
            "extra connection {i} left open"
        );
    }
    // Counted now, on a connection under the cap: a new connection that arrives before the server
    // has seen a closed one go is refused (and counted) too.
    let text = get(&mut held[0], "/metrics").await.body;
    let value = |name| testbed::prometheus::value_of(&text, name);
    assert_eq!(value("http_connections_refused_total"), Some(EXTRA as f64));
    assert_eq!(value("http_connections_limit"), Some(CAP as f64));
    for socket in &mut held {
        assert_eq!(
            exchange(socket).await.status(),
            "200",
            "a connection under the cap"
        );
    }
    // One held connection closed frees its place for a new one.
    drop(held.pop());
    eventually(10, "a new connection served after one closed", || async {
        let mut socket = TcpStream::connect(&address).await.unwrap();
        exchange(&mut socket).await.status() == "200"
    })
    .await;
    drop(held);
}

async fn probes_on_a_connection_above_max_connections_are_answered_then_closed(api: Api) {
    let (_app, address, mut held) = at_the_cap(api).await;
    for path in ["/health", "/ready"] {
        let mut extra = TcpStream::connect(&address).await.unwrap();
        let answer = get(&mut extra, path).await;
        assert_eq!(
            answer.status(),
            "200",
            "{path} above the cap: {}",
            answer.head
        );
        assert!(answer.head.contains("connection: close"), "{}", answer.head);
        assert!(
            closed_by_server(&mut extra).await,
            "{path}'s connection above the cap left open"
        );
    }
    let text = get(&mut held[0], "/metrics").await.body;
    assert_eq!(
        testbed::prometheus::value_of(&text, "http_connections_refused_total"),
        Some(0.0),
        "a probe counted as refused"
    );
    // The held connections, and the cap, are as they were.
    let mut extra = TcpStream::connect(&address).await.unwrap();
    assert_eq!(get(&mut extra, READ).await.status(), "503");
    for socket in &mut held {
        assert_eq!(exchange(socket).await.status(), "200");
    }
}
