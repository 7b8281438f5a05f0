//! A gateway that answers every reconciliation call with one fixed answer, after an optional
//! delay, and counts what it was asked — for the recovery cases that mock-deps' honest ledger
//! cannot play: a gateway that is down, one whose void does not take effect, one slow enough for
//! a claim to go stale. Point an API's `DEPS_URL` at [`StubGateway::url`]; only recovery calls it
//! (the keys under test are written straight into the database).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The stub's counts: lookups (`GET …/payments/{key}`) and voids (`POST …/void`).
#[derive(Default)]
pub struct StubCounts {
    pub lookups: AtomicU64,
    pub voids: AtomicU64,
}

pub struct StubGateway {
    url: String,
    counts: Arc<StubCounts>,
    task: tokio::task::JoinHandle<()>,
}

impl StubGateway {
    /// Answers every request with `status` and the JSON `body`, `delay` after reading it.
    pub async fn start(status: u16, body: serde_json::Value, delay: Duration) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let counts = Arc::new(StubCounts::default());
        let body = Arc::new(body.to_string());
        let task = tokio::spawn({
            let counts = counts.clone();
            async move {
                while let Ok((socket, _)) = listener.accept().await {
                    let (counts, body) = (counts.clone(), body.clone());
                    tokio::spawn(serve(socket, status, body, delay, counts));
                }
            }
        });
        StubGateway { url, counts, task }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn lookups(&self) -> u64 {
        self.counts.lookups.load(Ordering::Relaxed)
    }

    pub fn voids(&self) -> u64 {
        self.counts.voids.load(Ordering::Relaxed)
    }
}

impl Drop for StubGateway {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One connection: requests without bodies (the reconciliation calls have none), one at a time.
async fn serve(
    mut socket: tokio::net::TcpStream,
    status: u16,
    body: Arc<String>,
    delay: Duration,
    counts: Arc<StubCounts>,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end + 4);
        let counter = if head.starts_with("POST") && head.contains("/void ") {
            &counts.voids
        } else {
            &counts.lookups
        };
        counter.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(delay).await;
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if socket.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}
