//! A kept-alive connection has a bound between its requests: idle, it is closed after
//! `KEEP_ALIVE_S`; and the head of every request on it — not only the first — must arrive in
//! time, so a client that trickles its next head a byte at a time loses the connection.

use std::time::{Duration, Instant};

use mock_deps::MockConfig;
use testkit::{Api, TestApp, contract_tests};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

contract_tests!(
    a_trickled_second_request_head_loses_the_connection,
    an_idle_kept_alive_connection_is_closed_after_keep_alive_s,
);

/// How often actix-http updates the clock its keep-alive deadline is read from.
const ACTIX_CLOCK_STEP_MS: u64 = 500;

const REQUEST: &[u8] = b"GET /health HTTP/1.1\r\nHost: test\r\n\r\n";

async fn app(api: Api) -> TestApp {
    TestApp::spawn_with(api, MockConfig::instant(), |s| {
        s.keep_alive_s = 1;
        s.client_header_timeout_ms = 1000;
    })
    .await
}

/// Opens a connection and completes one request on it (kept alive).
async fn connection_after_one_request(app: &TestApp) -> TcpStream {
    let address = app.address.trim_start_matches("http://");
    let mut socket = TcpStream::connect(address).await.unwrap();
    socket.write_all(REQUEST).await.unwrap();
    let mut response = Vec::new();
    let mut chunk = [0u8; 1024];
    while !String::from_utf8_lossy(&response).contains("\"status\"") {
        let n = socket.read(&mut chunk).await.unwrap();
        assert!(n > 0, "closed before the first response");
        response.extend_from_slice(&chunk[..n]);
    }
    assert!(response.starts_with(b"HTTP/1.1 200"), "{response:?}");
    socket
}

/// Whether the server has closed `socket`: a read returns end of stream or an error.
async fn closed_within(socket: &mut TcpStream, bound: Duration) -> bool {
    let mut chunk = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        match tokio::time::timeout_at(deadline, socket.read(&mut chunk)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            // A 408 or other answer before the close: keep reading to the end.
            Ok(Ok(_)) => continue,
        }
    }
}

async fn a_trickled_second_request_head_loses_the_connection(api: Api) {
    let app = app(api).await;
    let mut socket = connection_after_one_request(&app).await;
    let started = Instant::now();
    let (mut reader, mut writer) = socket.split();
    // One byte of the next head every 100 ms, for up to 10 s: never a whole head.
    let trickle = async {
        for byte in b"GET /health HTTP/1.1\r\nX-Slow: ".iter().cycle().take(100) {
            if writer.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let closed = async {
        let mut chunk = [0u8; 1024];
        loop {
            match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => return true,
                Ok(_) => continue,
            }
        }
    };
    let closed = tokio::select! {
        closed = closed => closed,
        _ = trickle => false,
    };
    let elapsed = started.elapsed();
    assert!(
        closed,
        "{api:?} kept a trickling connection open for {elapsed:?}"
    );
    // KEEP_ALIVE_S + CLIENT_HEADER_TIMEOUT_MS = 2 s, with room for a loaded machine.
    assert!(
        elapsed < Duration::from_secs(5),
        "closed only after {elapsed:?}"
    );
}

async fn an_idle_kept_alive_connection_is_closed_after_keep_alive_s(api: Api) {
    let app = app(api).await;
    let mut socket = connection_after_one_request(&app).await;
    let started = Instant::now();
    assert!(
        closed_within(&mut socket, Duration::from_secs(5)).await,
        "{api:?} kept an idle connection open"
    );
    let elapsed = started.elapsed();
    // actix-http sets the deadline from a clock it updates every 500 ms, so it may close up to
    // 500 ms before KEEP_ALIVE_S (docs/contract.md says so), never earlier.
    assert!(
        elapsed >= Duration::from_millis(1000 - ACTIX_CLOCK_STEP_MS),
        "closed more than {ACTIX_CLOCK_STEP_MS} ms before KEEP_ALIVE_S: {elapsed:?}"
    );
}
