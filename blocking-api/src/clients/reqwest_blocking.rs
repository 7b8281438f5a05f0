//! `DEPS_CLIENT=reqwest-blocking`: one shared `reqwest::blocking::Client`, built by
//! `order_core::plumbing::deps_client::configure` (timeouts, keep-alive reuse, `DEPS_HTTP`, no
//! redirect followed), as reactive-api's async client is.
//!
//! Not the thread-per-request model's own client: reqwest::blocking runs one single-threaded
//! tokio runtime in a thread of its own, and every call is handed to that thread over a channel;
//! the request's thread only waits. The lab runs it to measure what that costs against ureq.

use anyhow::Context;
use order_core::plumbing::deps_client;
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

    /// The call's status and body; a 3xx, 4xx or 5xx is an answer, not an error.
    pub(super) fn send(&self, call: Call<'_>) -> Result<(u16, Vec<u8>), reqwest::Error> {
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
        let response = request.send()?;
        let status = response.status().as_u16();
        Ok((status, response.bytes()?.to_vec()))
    }
}
