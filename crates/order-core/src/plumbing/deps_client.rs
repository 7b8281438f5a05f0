//! How both APIs build their one HTTP client to the dependencies: the settings are applied here,
//! once, to reqwest's async builder (reactive-api) and to its blocking one (blocking-api), so that
//! the two clients cannot differ in a timeout, a pool setting or the redirect rule.
//!
//! No dependency call follows a redirect. reqwest follows up to ten by default, and a 307 or 308
//! re-sends the method and the whole body — for the charge, the card number and CVV — to wherever
//! `Location` points. A 3xx is therefore an answer like any other status, read by
//! `order_core::domain::deps` (for the charge: an unknown outcome, see `deps::pay_outcome`), and a card body
//! is never sent to any host but `DEPS_URL`'s.
//!
//! An answer is untrusted input (`order_core::domain::deps::answer`): every client reads it into
//! an [`Answer`] bounded by `DEPS_ANSWER_MAX_BYTES`, within the call's total timeout (reqwest's
//! `timeout` and ureq's `timeout_global` both run from the connect to the body's last byte, not
//! per read), and ends the call with [`settle`], the same for all.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::redirect::Policy;

use crate::domain::deps::{self, AnswerFault, answer};
use crate::domain::error::{ApiError, Dependency};
use crate::plumbing::dns::{DnsCache, ReqwestResolver};
use crate::plumbing::metrics::Metrics;
use crate::plumbing::settings::{CommonSettings, DepsHttp};

/// How long an idle keep-alive connection to a dependency is kept for reuse.
pub const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// A dependency's answer as a client read it: its body whole and within
/// [`deps::DEPS_ANSWER_MAX_BYTES`].
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    /// The `Content-Type` header, if it is text.
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// The error of a body that stopped before its end: the call's total timeout, or anything else
/// (a close or reset mid-body, a `Content-Length` not met, a broken chunk) as cut short.
pub fn body_failed(timed_out: bool, cause: impl Into<anyhow::Error>) -> anyhow::Error {
    let fault = if timed_out {
        AnswerFault::TimedOut
    } else {
        AnswerFault::CutShort
    };
    cause.into().context(fault)
}

/// Ends one dependency call the same way in every client: a `200` that is not JSON refused,
/// the answer read for its meaning by `outcome` (one of `deps`'s readers), the call timed in
/// `dependency_request_duration_seconds`, and a refused answer counted in
/// `dependency_answers_refused_total` by dependency and reason and logged, once, here.
pub fn settle<T>(
    metrics: &Metrics,
    dependency: Dependency,
    start: Instant,
    read: anyhow::Result<Answer>,
    outcome: impl FnOnce(u16, &[u8]) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    let mut status = None;
    let result = read
        .and_then(|a| {
            answer::check_content_type(a.status, a.content_type.as_deref())?;
            Ok(a)
        })
        .map_err(|e| ApiError::dependency(dependency, e))
        .and_then(|a| {
            status = Some(a.status);
            outcome(a.status, &a.body)
        });
    let refused = match &result {
        Err(ApiError::DependencyUnavailable { cause, .. }) => {
            AnswerFault::of(cause).map(|fault| (fault, cause))
        }
        _ => None,
    };
    let ok = refused.is_none() && status.is_some_and(deps::call_worked);
    metrics.observe_dependency(dependency.as_str(), ok, start);
    if let Some((fault, cause)) = refused {
        metrics
            .dep_answers_refused
            .with_label_values(&[dependency.as_str(), fault.as_str()])
            .inc();
        tracing::warn!(%dependency, reason = fault.as_str(), error = ?cause, "dependency answer refused");
    }
    result
}

/// The builder methods [`configure`] needs, on both of reqwest's client builders.
pub trait DepsClientBuilder: Sized {
    fn timeout(self, timeout: Duration) -> Self;
    fn connect_timeout(self, timeout: Duration) -> Self;
    fn pool_idle_timeout(self, timeout: Duration) -> Self;
    fn redirect(self, policy: Policy) -> Self;
    fn http2_prior_knowledge(self) -> Self;
    fn dns_resolver(self, resolver: Arc<ReqwestResolver>) -> Self;
}

/// Applies the dependency settings to `builder`: every call bounded by `DEPS_TIMEOUT_MS` (connect
/// and whole response), idle connections kept for reuse, `DEPS_HTTP`, no redirect followed, and
/// `DEPS_URL`'s host found through `dns` (`order_core::plumbing::dns`: looked up once and kept,
/// each lookup bounded by `DEPS_TIMEOUT_MS`).
pub fn configure<B: DepsClientBuilder>(builder: B, settings: &CommonSettings, dns: &DnsCache) -> B {
    let resolver = ReqwestResolver {
        cache: dns.clone(),
        timeout: settings.deps_timeout(),
    };
    let builder = builder
        .dns_resolver(Arc::new(resolver))
        .timeout(settings.deps_timeout())
        .connect_timeout(settings.deps_timeout())
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .redirect(Policy::none());
    match settings.deps_http {
        DepsHttp::Http1 => builder,
        DepsHttp::H2c => builder.http2_prior_knowledge(),
    }
}

impl DepsClientBuilder for reqwest::ClientBuilder {
    fn timeout(self, timeout: Duration) -> Self {
        reqwest::ClientBuilder::timeout(self, timeout)
    }
    fn connect_timeout(self, timeout: Duration) -> Self {
        reqwest::ClientBuilder::connect_timeout(self, timeout)
    }
    fn pool_idle_timeout(self, timeout: Duration) -> Self {
        reqwest::ClientBuilder::pool_idle_timeout(self, timeout)
    }
    fn redirect(self, policy: Policy) -> Self {
        reqwest::ClientBuilder::redirect(self, policy)
    }
    fn http2_prior_knowledge(self) -> Self {
        reqwest::ClientBuilder::http2_prior_knowledge(self)
    }
    fn dns_resolver(self, resolver: Arc<ReqwestResolver>) -> Self {
        reqwest::ClientBuilder::dns_resolver(self, resolver)
    }
}

impl DepsClientBuilder for reqwest::blocking::ClientBuilder {
    fn timeout(self, timeout: Duration) -> Self {
        reqwest::blocking::ClientBuilder::timeout(self, timeout)
    }
    fn connect_timeout(self, timeout: Duration) -> Self {
        reqwest::blocking::ClientBuilder::connect_timeout(self, timeout)
    }
    fn pool_idle_timeout(self, timeout: Duration) -> Self {
        reqwest::blocking::ClientBuilder::pool_idle_timeout(self, timeout)
    }
    fn redirect(self, policy: Policy) -> Self {
        reqwest::blocking::ClientBuilder::redirect(self, policy)
    }
    fn http2_prior_knowledge(self) -> Self {
        reqwest::blocking::ClientBuilder::http2_prior_knowledge(self)
    }
    fn dns_resolver(self, resolver: Arc<ReqwestResolver>) -> Self {
        reqwest::blocking::ClientBuilder::dns_resolver(self, resolver)
    }
}

/// Which blocking HTTP client blocking-api calls its dependencies with (`DEPS_CLIENT`, a setting
/// of blocking-api alone; reactive-api has one client). Its own type here, beside the rules both
/// clients follow, so that the lab states it typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DepsClient {
    /// ureq: each call's socket I/O on the request's own thread, as a servlet's blocking client
    /// does. No HTTP/2.
    #[default]
    Ureq,
    /// reqwest::blocking: each call handed over a channel to one runtime thread of the client's
    /// own, which does every call's I/O for the process.
    ReqwestBlocking,
}

impl DepsClient {
    pub fn as_str(self) -> &'static str {
        match self {
            DepsClient::Ureq => "ureq",
            DepsClient::ReqwestBlocking => "reqwest-blocking",
        }
    }
}
