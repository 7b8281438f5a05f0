//! Dependencies whose payment gateway redirects: [`RedirectingDeps`] answers the seller and the
//! risk analysis as mock-deps would (seller `acme`, `APPROVE`), and every gateway call with
//! `307 Temporary Redirect` to a [`Trap`] — another listener, standing for another host, that
//! counts every byte it is sent and answers like a gateway that charged. A client that follows
//! the redirect re-sends the charge, card included, to the trap and stores an order on its word.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What one canned server answers to a request head: the status, extra headers and a JSON body.
type Answer = Arc<dyn Fn(&str) -> (u16, Vec<(String, String)>, String) + Send + Sync>;

/// A listener standing for another host: counts the bytes and requests it receives.
pub struct Trap {
    server: Canned,
}

impl Trap {
    pub async fn start() -> Self {
        let answer: Answer = Arc::new(|_| {
            let charged = r#"{"code":"TRAP","message":"SUCCESS"}"#.to_owned();
            (200, Vec::new(), charged)
        });
        Trap {
            server: Canned::start(answer).await,
        }
    }

    pub fn url(&self) -> &str {
        &self.server.url
    }

    /// Bytes received on any connection, request heads and bodies.
    pub fn bytes_received(&self) -> u64 {
        self.server.received.load(Ordering::Relaxed)
    }

    /// Connections accepted.
    pub fn connections(&self) -> u64 {
        self.server.connections.load(Ordering::Relaxed)
    }
}

/// Seller and risk answered, every `/gateway/…` call redirected to `target` (same path); or,
/// with [`RedirectingDeps::redirecting`], the calls to another dependency.
pub struct RedirectingDeps {
    server: Canned,
}

impl RedirectingDeps {
    pub async fn start(target: &str) -> Self {
        Self::redirecting(target, "/gateway/").await
    }

    /// Every call whose path starts with `prefix` (`order_core::deps::SELLER_PATH`,
    /// `RISK_PATH`, `/gateway/`) redirected to `target`, the seller's and the risk analysis's
    /// others answered (an order stopped by the redirect never reaches the gateway).
    pub async fn redirecting(target: &str, prefix: &'static str) -> Self {
        let target = target.to_owned();
        let answer: Answer = Arc::new(move |head| {
            let path = head.split(' ').nth(1).unwrap_or("/");
            if path.starts_with(prefix) {
                let location = vec![("location".to_owned(), format!("{target}{path}"))];
                (307, location, "{}".to_owned())
            } else if path.starts_with(order_core::domain::deps::SELLER_PATH) {
                (200, Vec::new(), r#"{"seller_id":"acme"}"#.to_owned())
            } else {
                (
                    200,
                    Vec::new(),
                    r#"{"recommendation":"APPROVE"}"#.to_owned(),
                )
            }
        });
        RedirectingDeps {
            server: Canned::start(answer).await,
        }
    }

    pub fn url(&self) -> &str {
        &self.server.url
    }

    /// Requests answered (any path).
    pub fn requests(&self) -> u64 {
        self.server.requests.load(Ordering::Relaxed)
    }
}

/// A keep-alive HTTP/1.1 server with `Content-Length` bodies and one answer per request head.
struct Canned {
    url: String,
    received: Arc<AtomicU64>,
    connections: Arc<AtomicU64>,
    requests: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Canned {
    async fn start(answer: Answer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let received = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn({
            let (received, connections, requests) =
                (received.clone(), connections.clone(), requests.clone());
            async move {
                while let Ok((socket, _)) = listener.accept().await {
                    connections.fetch_add(1, Ordering::Relaxed);
                    let counts = (received.clone(), requests.clone());
                    tokio::spawn(serve(socket, answer.clone(), counts));
                }
            }
        });
        Canned {
            url,
            received,
            connections,
            requests,
            task,
        }
    }
}

impl Drop for Canned {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut socket: TcpStream, answer: Answer, counts: (Arc<AtomicU64>, Arc<AtomicU64>)) {
    let (received, requests) = counts;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    received.fetch_add(n as u64, Ordering::Relaxed);
                    buf.extend_from_slice(&chunk[..n]);
                }
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        let length = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        while buf.len() < end + 4 + length {
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    received.fetch_add(n as u64, Ordering::Relaxed);
                    buf.extend_from_slice(&chunk[..n]);
                }
            }
        }
        buf.drain(..end + 4 + length);
        requests.fetch_add(1, Ordering::Relaxed);
        let (status, headers, body) = answer(&head);
        let mut response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
            body.len()
        );
        for (name, value) in headers {
            response.push_str(&format!("{name}: {value}\r\n"));
        }
        response.push_str("\r\n");
        response.push_str(&body);
        if socket.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}
