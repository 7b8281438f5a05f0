//! When the schedule starts: now, at an agreed instant, or when a starter says so.
//!
//! Shards of one run (see [`crate::shard`]) must share one time origin, or their union is not the
//! schedule. Two ways, both used before the first arrival, once the generator is built and ready:
//! - [`StartGate::At`] (`--start-at`): every shard sleeps until one wall-clock instant, which
//!   becomes the schedule's origin. It needs the shards' clocks to agree (NTP on one machine or
//!   a cluster keeps them within milliseconds).
//! - [`StartGate::Signal`] (`--wait-for-start ADDR`): the shard answers `GET /ready` and waits for
//!   a `POST /start` — the k8s-operator pattern: pods start paused, a starter releases them. The
//!   body may name the instant (`unix ms` or RFC 3339), so a starter that reaches its shards one
//!   after the other still gives them one origin; an empty body means "now".
//!
//! Either way the origin is the *intended* start, so a shard that wakes late is late against the
//! schedule for every early arrival, and that is measured like any lateness. [`StartRecord`]
//! keeps both instants.

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How the schedule starts.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum StartGate {
    /// As soon as the generator is ready.
    #[default]
    Now,
    /// At this wall-clock instant.
    At(SystemTime),
    /// On `POST /start` to this address.
    Signal(SocketAddr),
}

/// A [`StartGate`] ready to be waited on: its listener bound, so a starter finds the shard
/// (`GET /ready`) from the moment the run is set up.
#[derive(Debug)]
pub struct ArmedGate(Armed);

#[derive(Debug)]
enum Armed {
    At(Option<SystemTime>),
    Listening(TcpListener),
}

/// When the schedule's origin was meant to be and when the generator actually reached it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StartRecord {
    /// The schedule's origin, Unix ms.
    pub intended_unix_ms: f64,
    /// When the scheduler woke to start it, Unix ms.
    pub actual_unix_ms: f64,
}

impl StartRecord {
    /// Actual − intended, ms (negative would mean a clock jump).
    pub fn lateness_ms(&self) -> f64 {
        self.actual_unix_ms - self.intended_unix_ms
    }
}

/// Parses `--start-at`: Unix milliseconds, or an RFC 3339 time.
pub fn parse_instant(text: &str) -> Result<SystemTime> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let ms: u64 = text.parse().context("unix ms out of range")?;
        return Ok(UNIX_EPOCH + Duration::from_millis(ms));
    }
    let t = chrono::DateTime::parse_from_rfc3339(text)
        .with_context(|| format!("{text:?} is neither Unix ms nor an RFC 3339 time"))?;
    let ms = u64::try_from(t.timestamp_millis()).context("a time before 1970")?;
    Ok(UNIX_EPOCH + Duration::from_millis(ms))
}

/// `t` as Unix ms.
pub fn unix_ms(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

impl StartGate {
    /// Binds the listener of a signalled start.
    pub async fn arm(self) -> Result<ArmedGate> {
        Ok(ArmedGate(match self {
            StartGate::Now => Armed::At(None),
            StartGate::At(t) => Armed::At(Some(t)),
            StartGate::Signal(addr) => Armed::Listening(
                TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("--wait-for-start: listening on {addr}"))?,
            ),
        }))
    }
}

impl ArmedGate {
    /// Waits for the start; returns the schedule's origin (on this process's monotonic clock) and
    /// the record of it.
    pub async fn wait(self) -> (Instant, StartRecord) {
        let intended = match self.0 {
            Armed::At(t) => t.unwrap_or_else(SystemTime::now),
            Armed::Listening(listener) => signalled(listener).await,
        };
        let (now, wall) = (Instant::now(), SystemTime::now());
        let origin = match intended.duration_since(wall) {
            Ok(ahead) => now + ahead,
            Err(behind) => now.checked_sub(behind.duration()).unwrap_or(now),
        };
        tokio::time::sleep_until(origin.into()).await;
        let record = StartRecord {
            intended_unix_ms: unix_ms(intended),
            actual_unix_ms: unix_ms(SystemTime::now()),
        };
        (origin, record)
    }
}

/// Serves `GET /ready` (200) until a `POST /start` names the start (its body, else now).
async fn signalled(listener: TcpListener) -> SystemTime {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        match exchange(&mut stream).await {
            Ok(Some(at)) => return at,
            Ok(None) => {}
            Err(e) => {
                let body = format!("{e:#}\n");
                let _ = respond(&mut stream, "400 Bad Request", &body).await;
            }
        }
    }
}

/// One request: `Some(start)` for a valid `POST /start`, `None` for anything else (answered).
async fn exchange(stream: &mut TcpStream) -> Result<Option<SystemTime>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 16 * 1024 {
            bail!("request head too long");
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            bail!("connection closed mid-request");
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let length: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length.min(1024) {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..]).trim().to_owned();
    let line = head.lines().next().unwrap_or_default();
    let mut parts = line.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some("POST"), Some("/start")) => {
            let at = if body.is_empty() {
                SystemTime::now()
            } else {
                parse_instant(&body)?
            };
            respond(stream, "202 Accepted", "starting\n").await?;
            Ok(Some(at))
        }
        (Some("GET"), Some("/ready")) => {
            respond(stream, "200 OK", "waiting for POST /start\n").await?;
            Ok(None)
        }
        _ => {
            respond(stream, "404 Not Found", "GET /ready, POST /start\n").await?;
            Ok(None)
        }
    }
}

async fn respond(stream: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let text = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(text.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_instants_parse_as_unix_ms_or_rfc_3339() {
        let a = parse_instant("1767225600000").unwrap();
        let b = parse_instant("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(a, b);
        assert_eq!(unix_ms(a), 1_767_225_600_000.0);
        assert!(parse_instant("tomorrow").is_err());
    }

    #[tokio::test]
    async fn a_signalled_start_answers_ready_then_starts_at_the_posted_instant() {
        let port = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = port.local_addr().unwrap();
        drop(port);
        let gate = StartGate::Signal(addr).arm().await.unwrap();
        let waiting = tokio::spawn(gate.wait());
        let client = reqwest::Client::new();
        let ready = client.get(format!("http://{addr}/ready")).send().await;
        assert_eq!(ready.unwrap().status(), 200);
        assert!(!waiting.is_finished());
        let at = unix_ms(SystemTime::now()) as u64 + 200;
        let posted = client
            .post(format!("http://{addr}/start"))
            .body(at.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(posted.status(), 202);
        let (_, record) = waiting.await.unwrap();
        assert_eq!(record.intended_unix_ms, at as f64);
        let late = record.lateness_ms();
        assert!(
            (0.0..100.0).contains(&late),
            "woke {late} ms after the posted instant"
        );
    }
}
