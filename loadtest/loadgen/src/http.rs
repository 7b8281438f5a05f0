//! Sending one order and classifying what came back.
//!
//! One `reqwest::Client` is shared by every request of a run: HTTP/1.1 (one connection per request
//! in flight, as the original Gatling load had), no idle-pool cap, keep-alive reuse when a
//! connection is free, `TCP_NODELAY`, and the run's request timeout over the whole exchange (body
//! included). The outcome kinds are the API's machine error codes, so the report can tell
//! `database_unavailable` from `dependency_unavailable`, plus transport failures.

use std::time::Duration;

use anyhow::{Context, Result};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};

use crate::body::OrderRequest;
use lab_results::{
    OUTCOME_CONNECT_ERROR, OUTCOME_CREATED, OUTCOME_IO_ERROR, OUTCOME_REPLAYED, OUTCOME_TIMEOUT,
};

/// Outcome kind of an arrival refused by the in-flight cap (only in goose's metrics and counts).
pub const OUTCOME_NOT_SENT: &str = "not_sent";

/// How one request ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// `201`, `201_replayed`, an API error code, `http_<status>`, `timeout`, `connect_error`, `io_error`.
    pub kind: String,
    /// HTTP status, when a response came.
    pub status: Option<u16>,
    /// Error detail for goose's error table.
    pub error: Option<String>,
    /// The answer's `Retry-After` (whole seconds), when it had one.
    pub retry_after: Option<Duration>,
}

impl Outcome {
    /// An arrival the generator did not send.
    pub fn not_sent() -> Self {
        Outcome {
            kind: OUTCOME_NOT_SENT.to_owned(),
            status: None,
            error: Some("not sent: generator in-flight cap reached".to_owned()),
            retry_after: None,
        }
    }

    /// A fresh order or an idempotent replay.
    pub fn is_success(&self) -> bool {
        self.kind == OUTCOME_CREATED || self.kind == OUTCOME_REPLAYED
    }

    /// See [`Outcome::not_sent`].
    pub fn is_not_sent(&self) -> bool {
        self.kind == OUTCOME_NOT_SENT
    }

    fn transport(kind: &str, e: &reqwest::Error) -> Self {
        Outcome {
            kind: kind.to_owned(),
            status: None,
            error: Some(format!("{kind}: {e}")),
            retry_after: None,
        }
    }
}

/// The shared client of a run.
pub fn order_client(timeout: Duration) -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .pool_max_idle_per_host(usize::MAX)
        .pool_idle_timeout(Duration::from_secs(90))
        .tcp_nodelay(true)
        .http1_only()
        .no_proxy()
        .build()
        .context("building the HTTP client")
}

/// Sends one order and waits for the whole answer (within the client's timeout).
pub async fn fire(client: &reqwest::Client, url: &str, request: &OrderRequest) -> Outcome {
    fire_within(client, url, request, None).await
}

/// [`fire`], with a shorter timeout for this request when `timeout` is given.
pub async fn fire_within(
    client: &reqwest::Client,
    url: &str,
    request: &OrderRequest,
    timeout: Option<Duration>,
) -> Outcome {
    let mut builder = client
        .post(url)
        .header(AUTHORIZATION, &*request.token)
        .header(CONTENT_TYPE, "application/json")
        .body(request.body.to_vec());
    if let Some(t) = timeout {
        builder = builder.timeout(t);
    }
    let sent = builder.send().await;
    let response = match sent {
        Ok(r) => r,
        Err(e) => return classify_error(&e),
    };
    let status = response.status().as_u16();
    let replayed = response
        .headers()
        .get("idempotent-replayed")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let body = match response.bytes().await {
        Ok(b) => b,
        Err(e) => return classify_error(&e),
    };
    let kind = match status {
        201 if replayed => OUTCOME_REPLAYED.to_owned(),
        201 => OUTCOME_CREATED.to_owned(),
        _ => error_code(&body).unwrap_or_else(|| format!("http_{status}")),
    };
    let error = (status != 201).then(|| format!("{status} {kind}"));
    Outcome {
        kind,
        status: Some(status),
        error,
        retry_after,
    }
}

fn classify_error(e: &reqwest::Error) -> Outcome {
    if e.is_timeout() {
        Outcome::transport(OUTCOME_TIMEOUT, e)
    } else if e.is_connect() {
        Outcome::transport(OUTCOME_CONNECT_ERROR, e)
    } else {
        Outcome::transport(OUTCOME_IO_ERROR, e)
    }
}

/// The `error` field of an API error body, if it is a plausible code.
pub fn error_code(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let code = v.get("error")?.as_str()?;
    let plausible = !code.is_empty()
        && code.len() <= 64
        && code
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    plausible.then(|| code.to_owned())
}

#[cfg(test)]
mod tests {
    use super::error_code;

    #[test]
    fn error_codes() {
        assert_eq!(
            error_code(br#"{"error":"database_unavailable","detail":"x"}"#).as_deref(),
            Some("database_unavailable")
        );
        assert_eq!(error_code(b"<html>oops</html>"), None);
        assert_eq!(error_code(br#"{"error":"Some Text"}"#), None);
    }
}
