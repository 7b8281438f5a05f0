//! `DEPS_CLIENT=ureq`, the default: one shared `ureq::Agent`, whose calls do their socket I/O on
//! the calling thread, as a servlet's blocking client does. HTTP/1.1 only (ureq has no HTTP/2).
//!
//! The rules of `order_core::plumbing::deps_client`, applied to ureq's own settings:
//! - every call bounded by `DEPS_TIMEOUT_MS` (ureq's global timeout: resolve, connect, send and
//!   the whole answer), or less where the caller passes the request's remaining deadline; the
//!   name lookup and the connect bounded by `DEPS_TIMEOUT_MS` on their own too;
//! - no redirect followed (`max_redirects(0)` returns the 3xx as it came), so a card body never
//!   goes to a host but `DEPS_URL`'s, and `order_core::domain::deps` reads the 3xx as today;
//! - a 4xx or 5xx is an answer, not an error (`http_status_as_error(false)`);
//! - the answer's body refused past `DEPS_ANSWER_MAX_BYTES` (ureq's body `limit`, and at once if
//!   its `Content-Length` says so); the global timeout runs while it is read, to its last byte;
//! - idle keep-alive connections kept `POOL_IDLE_TIMEOUT` for reuse;
//! - an `https` `DEPS_URL` over rustls, the platform's roots verified by rustls-platform-verifier
//!   (which reads `SSL_CERT_FILE`/`SSL_CERT_DIR` on Linux), on aws-lc-rs: reqwest's TLS, and the
//!   workspace's one TLS backend (the root Cargo.toml's `rustls` says why).

use std::sync::Arc;
use std::time::Duration;

use order_core::domain::deps::answer::{self, AnswerFault, DEPS_ANSWER_MAX_BYTES};
use order_core::plumbing::deps_client::{self, Answer, POOL_IDLE_TIMEOUT};
use order_core::plumbing::dns::{DnsCache, ResolveError};
use order_core::plumbing::settings::CommonSettings;
use ureq::tls::{RootCerts, TlsConfig};
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use super::{Call, Method};

/// ureq's resolver hook over the process's [`DnsCache`]: ureq asks it on every call, before it
/// looks in its pool, so a kept name costs a call a map look-up and no thread (ureq's own
/// resolver spawns one per call), and a name server that stalls holds up no call on an open
/// connection. A call that must wait for a lookup waits at most the call's remaining timeout.
#[derive(Debug)]
struct KeptNames(DnsCache);

impl Resolver for KeptNames {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        _config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let host = uri.host().ok_or(ureq::Error::HostNotFound)?;
        let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
            Some("https") => 443,
            _ => 80,
        });
        let addrs = self
            .0
            .resolve(host, port, *timeout.after)
            .map_err(|e| match e {
                ResolveError::TimedOut => ureq::Error::Timeout(timeout.reason),
                ResolveError::Failed(_) => ureq::Error::HostNotFound,
            })?;
        let mut kept = self.empty();
        for addr in addrs.iter() {
            if kept.try_push(*addr).is_err() {
                break;
            }
        }
        Ok(kept)
    }
}

pub(super) struct UreqClient(ureq::Agent);

/// The size of each connection's input and output buffer.
const BUFFER_BYTES: usize = 8 * 1024;

impl UreqClient {
    /// `callers`: how many threads may call at once. Every dependency is behind `DEPS_URL`, one
    /// host, and each caller holds at most one connection at a time, so up to `callers`
    /// connections are in use at once and all of them must fit in the idle pool when they come
    /// back. ureq's defaults (10 idle in all, 3 per host) would close all but 3 after each call
    /// and connect again on the next: a TCP handshake per call at any load above 3 in flight.
    pub(super) fn new(settings: &CommonSettings, callers: usize, dns: DnsCache) -> Self {
        let timeout = Some(settings.deps_timeout());
        let config = ureq::Agent::config_builder()
            .timeout_global(timeout)
            .timeout_resolve(timeout)
            .timeout_connect(timeout)
            .max_redirects(0)
            .http_status_as_error(false)
            .max_idle_connections(callers)
            .max_idle_connections_per_host(callers)
            .max_idle_age(POOL_IDLE_TIMEOUT)
            // Each connection keeps an input and an output buffer, written full of zeros when
            // it opens: ureq's 128 KiB each would be 256 KiB of RSS per kept connection, so per
            // request thread (1,000 threads, 250 MiB). The dependencies' answers and our
            // requests are under 2 KiB; a larger answer grows the input buffer as it needs
            // (up to `max_response_header_size` for the head). hyper starts at 8 KiB too.
            .input_buffer_size(BUFFER_BYTES)
            .output_buffer_size(BUFFER_BYTES)
            .tls_config(
                TlsConfig::builder()
                    .root_certs(RootCerts::PlatformVerifier)
                    .unversioned_rustls_crypto_provider(Arc::new(
                        rustls::crypto::aws_lc_rs::default_provider(),
                    ))
                    .build(),
            )
            .build();
        UreqClient(ureq::Agent::with_parts(
            config,
            DefaultConnector::new(),
            KeptNames(dns),
        ))
    }

    /// The call's answer; a 3xx, 4xx or 5xx is an answer, not an error.
    pub(super) fn send(&self, call: Call<'_>) -> anyhow::Result<Answer> {
        let url = call.url.as_str();
        let response = match call.method {
            Method::Get => {
                let request = with_headers(self.0.get(url), &call);
                within(request, call.timeout).call()
            }
            Method::Post => {
                let request = with_headers(self.0.post(url), &call);
                let request = within(request, call.timeout);
                match call.json {
                    Some(body) => request
                        .header("Content-Type", "application/json")
                        .send(body),
                    None => request.send_empty(),
                }
            }
        }?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(ureq::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut body = response.into_body();
        answer::check_length(body.content_length())?;
        let body = body
            .with_config()
            .limit(DEPS_ANSWER_MAX_BYTES as u64)
            .read_to_vec()
            .map_err(|e| match e {
                ureq::Error::BodyExceedsLimit(_) => AnswerFault::TooLarge.into(),
                ureq::Error::Timeout(_) => deps_client::body_failed(true, e),
                e => deps_client::body_failed(false, e),
            })?;
        Ok(Answer {
            status,
            content_type,
            body,
        })
    }
}

fn with_headers<B>(
    mut request: ureq::RequestBuilder<B>,
    call: &Call<'_>,
) -> ureq::RequestBuilder<B> {
    for (name, value) in call.headers {
        request = request.header(*name, *value);
    }
    request
}

/// The request bounded by `timeout` instead of the agent's `DEPS_TIMEOUT_MS`, when one is given.
fn within<B>(
    request: ureq::RequestBuilder<B>,
    timeout: Option<Duration>,
) -> ureq::RequestBuilder<B> {
    match timeout {
        Some(t) => request.config().timeout_global(Some(t)).build(),
        None => request,
    }
}
