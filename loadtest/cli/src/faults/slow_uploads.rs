//! Slow uploads (`--faults slow-uploads=N@S+LEN`): N connections to the API, each sending an
//! order's request line and headers (its real `Content-Length` and seller token) and then its body
//! one byte every [`TRICKLE`], so that no idle timeout between reads is ever reached; at the end of
//! the window they are closed. What the measured orders meanwhile see is the point: an API that
//! holds a thread (or a pool slot) per unread body slows down for everyone.
//!
//! Each connection also watches for the API's side: an answer (a 408, say) or a close before the
//! window's end is counted, so the event says how many the API cut short.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinSet;

use loadgen::body::BodyGen;

/// One body byte this often.
pub(super) const TRICKLE: Duration = Duration::from_secs(2);

/// The connections, open.
pub(super) struct Held {
    close: watch::Sender<bool>,
    tasks: JoinSet<()>,
    opened: u32,
    cut_short: Arc<AtomicU32>,
}

/// How the held connections ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Closed {
    pub opened: u32,
    /// Answered or closed by the API before the window's end.
    pub cut_short: u32,
}

/// The request line and headers of an order whose body is `body_len` bytes.
fn head(host: &str, token: &str, body_len: usize) -> String {
    format!(
        "POST /orders HTTP/1.1\r\nHost: {host}\r\nAuthorization: {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {body_len}\r\n\r\n"
    )
}

/// Opens `connections` slow uploads to the API at `api_url` (`http://host:port`); fails if none
/// could be opened.
pub(super) async fn open(api_url: &str, connections: u32) -> Result<Held> {
    let url = reqwest::Url::parse(api_url).with_context(|| format!("the API's URL {api_url}"))?;
    let host = url
        .host_str()
        .context("the API's URL has no host")?
        .to_owned();
    let port = url
        .port_or_known_default()
        .context("the API's URL has no port")?;
    let (close, closing) = watch::channel(false);
    let cut_short = Arc::new(AtomicU32::new(0));
    let bodies = BodyGen::new("slowupload", 16, 0.0, 7);
    let mut tasks = JoinSet::new();
    let mut opened = 0;
    for j in 0..connections {
        // One that cannot connect is left out: the event says how many of N were opened.
        let Ok(stream) = TcpStream::connect((host.as_str(), port)).await else {
            continue;
        };
        let order = bodies.request(u64::from(j));
        let head = head(&format!("{host}:{port}"), &order.token, order.body.len());
        opened += 1;
        let (closing, cut_short) = (closing.clone(), Arc::clone(&cut_short));
        tasks.spawn(async move {
            if !trickle(stream, head, &order.body, closing).await {
                cut_short.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    if opened == 0 {
        anyhow::bail!("no slow upload could connect to {api_url}");
    }
    Ok(Held {
        close,
        tasks,
        opened,
        cut_short,
    })
}

/// Sends `head`, then `body` a byte at a time, until told to close (`true`) or until the API
/// answers or closes the connection (`false`). The body's last byte is never sent.
async fn trickle(
    mut stream: TcpStream,
    head: String,
    body: &[u8],
    mut closing: watch::Receiver<bool>,
) -> bool {
    if stream.write_all(head.as_bytes()).await.is_err() {
        return false;
    }
    let (mut read, mut write) = stream.into_split();
    let mut answer = [0u8; 256];
    for byte in body.iter().take(body.len().saturating_sub(1)) {
        if write.write_all(std::slice::from_ref(byte)).await.is_err() {
            return false;
        }
        tokio::select! {
            _ = tokio::time::sleep(TRICKLE) => {}
            // Any answer, or end of stream, before the body is complete: the API cut it short.
            _ = read.read(&mut answer) => return false,
            _ = closing.wait_for(|c| *c) => return true,
        }
    }
    // Out of body bytes (a window longer than the body lasts): hold on without sending.
    tokio::select! {
        _ = read.read(&mut answer) => false,
        _ = closing.wait_for(|c| *c) => true,
    }
}

impl Held {
    /// How many were opened.
    pub(super) fn opened(&self) -> u32 {
        self.opened
    }

    /// Closes every connection still open.
    pub(super) async fn close(mut self) -> Closed {
        self.close.send_replace(true);
        while self.tasks.join_next().await.is_some() {}
        Closed {
            opened: self.opened,
            cut_short: self.cut_short.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    #[test]
    fn the_head_announces_the_whole_body() {
        let h = head("127.0.0.1:8080", "sk_seller-01", 612);
        assert!(h.starts_with("POST /orders HTTP/1.1\r\n"));
        assert!(h.contains("\r\nContent-Length: 612\r\n"));
        assert!(h.contains("\r\nAuthorization: sk_seller-01\r\n"));
        assert!(h.ends_with("\r\n\r\n"));
    }

    /// A server that reads everything and answers nothing, and one that answers 408 at once.
    async fn server(answer: bool) -> (String, tokio::task::JoinHandle<Vec<usize>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let mut received = Vec::new();
            for _ in 0..3 {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = vec![0; 4096];
                let n = s.read(&mut buf).await.unwrap();
                if answer {
                    s.write_all(b"HTTP/1.1 408 Request Timeout\r\n\r\n")
                        .await
                        .unwrap();
                }
                received.push(n);
                // Keep the socket open (unanswered) for the test's length.
                tokio::spawn(async move {
                    let _ = s.read_to_end(&mut Vec::new()).await;
                });
            }
            received
        });
        (url, task)
    }

    #[tokio::test]
    async fn uploads_hold_their_body_back_until_closed_and_count_the_ones_cut_short() {
        let (url, server_task) = server(false).await;
        let held = open(&url, 3).await.unwrap();
        assert_eq!(held.opened(), 3);
        let received = server_task.await.unwrap();
        // Only the head and a byte or so arrived, not a whole order.
        assert!(received.iter().all(|&n| n < 400), "{received:?}");
        assert_eq!(
            held.close().await,
            Closed {
                opened: 3,
                cut_short: 0
            }
        );

        let (url, _server) = server(true).await;
        let held = open(&url, 3).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(held.close().await.cut_short, 3);
    }
}
