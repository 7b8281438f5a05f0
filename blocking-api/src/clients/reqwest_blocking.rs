//! `DEPS_CLIENT=reqwest-blocking`: one shared `reqwest::blocking::Client`, built by
//! `order_core::plumbing::deps_client::configure` (timeouts, keep-alive reuse, `DEPS_HTTP`, no
//! redirect followed), as reactive-api's async client is.
//!
//! Not the thread-per-request model's own client: reqwest::blocking runs one single-threaded
//! tokio runtime in a thread of its own, and every call is handed to that thread over a channel;
//! the request's thread only waits. The lab runs it to measure what that costs against ureq.

use std::io::Read;

use anyhow::Context;
use order_core::domain::deps::answer::{self, BoundedBody};
use order_core::plumbing::deps_client::{self, Answer};
use order_core::plumbing::dns::DnsCache;
use order_core::plumbing::settings::CommonSettings;

use super::{Call, Method};

pub(super) struct ReqwestBlocking(reqwest::blocking::Client);

impl ReqwestBlocking {
    pub(super) fn new(settings: &CommonSettings, dns: &DnsCache) -> anyhow::Result<Self> {
        let builder = deps_client::configure(reqwest::blocking::Client::builder(), settings, dns);
        // The blocking client owns a runtime of its own, which may not be built on an async
        // thread: build it on a plain one.
        let http = std::thread::spawn(move || builder.build())
            .join()
            .map_err(|_| anyhow::anyhow!("building the HTTP client panicked"))?
            .context("building the HTTP client")?;
        Ok(ReqwestBlocking(http))
    }

    /// The call's answer; a 3xx, 4xx or 5xx is an answer, not an error. Its body is read as
    /// reactive-api reads it: in pieces, refused once past `DEPS_ANSWER_MAX_BYTES` (at once if
    /// its `Content-Length` says so), within the call's total timeout (which reqwest::blocking
    /// hands to the async body it reads from, so it runs to the last byte, not per read).
    pub(super) fn send(&self, call: Call<'_>) -> anyhow::Result<Answer> {
        let url = call.url.clone();
        let mut request = match call.method {
            Method::Get => self.0.get(url),
            Method::Post => self.0.post(url),
        };
        for (name, value) in call.headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = call.json {
            request = request
                .header("Content-Type", "application/json")
                .body(body);
        }
        if let Some(timeout) = call.timeout {
            request = request.timeout(timeout);
        }
        let mut response = request.send()?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        answer::check_length(response.content_length())?;
        let mut body = BoundedBody::default();
        let mut piece = [0u8; 8 * 1024];
        loop {
            match response.read(&mut piece) {
                Ok(0) => break,
                Ok(n) => body.push(&piece[..n])?,
                Err(e) => return Err(deps_client::body_failed(timed_out(&e), e)),
            }
        }
        Ok(Answer {
            status,
            content_type,
            body: body.into_vec(),
        })
    }
}

/// Whether a read of reqwest::blocking's body ended on the call's timeout: reqwest hands its own
/// error inside the `io::Error`.
fn timed_out(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|inner| inner.downcast_ref::<reqwest::Error>())
            .is_some_and(reqwest::Error::is_timeout)
}
