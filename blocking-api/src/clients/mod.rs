//! Calls to the seller, risk and payment services, on the request's own thread.
//!
//! Mirrors reactive-api's `clients.rs`; what an answer means is decided in `order_core::domain::deps`.
//! Each call blocks its thread until the answer or `DEPS_TIMEOUT_MS` (less where the request's
//! deadline is nearer). One client for the process, chosen by `DEPS_CLIENT`:
//!
//! - `ureq` (the default, [`ureq_client`]): the calling thread writes the request and reads the
//!   answer on its own socket, as a servlet's blocking client does; the model this crate measures.
//! - `reqwest-blocking` ([`reqwest_blocking`]): every call is handed over a channel to one runtime
//!   thread that reqwest::blocking runs for the process, which does every call's I/O. That one
//!   thread spent 35 % of blocking-api's CPU at 300 orders/s: a hidden event loop inside the
//!   thread-per-request model. Kept as a variant, to measure the two against each other, and
//!   because it speaks HTTP/2 (`DEPS_HTTP=h2c`), which ureq does not.
//!
//! Both follow the rules of `order_core::plumbing::deps_client`: no redirect followed (a 3xx is an
//! answer), a 4xx or 5xx is an answer too, connect bounded as the whole call is, and the answer
//! read as untrusted input (`order_core::domain::deps::answer`): its body bounded by
//! `DEPS_ANSWER_MAX_BYTES`, the whole of it by the call's timeout.

mod reqwest_blocking;
mod ureq_client;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use order_core::domain::contract::ValidOrder;
use order_core::domain::deps::{
    self, GatewayPayment, PayRequest, PayResult, Recommendation, RiskRequest,
};
use order_core::domain::error::{ApiError, Dependency};
use order_core::plumbing::deps_client::{self, DepsClient};
use order_core::plumbing::dns::DnsCache;
use order_core::plumbing::metrics::Metrics;
use order_core::plumbing::settings::{CommonSettings, DepsHttp};
use url::Url;

pub struct Deps {
    client: Client,
    base: Url,
    /// The three per-order URLs, parsed once (not per call).
    seller_url: Url,
    risk_url: Url,
    pay_url: Url,
    metrics: Arc<Metrics>,
}

/// The client `DEPS_CLIENT` names.
enum Client {
    Ureq(ureq_client::UreqClient),
    ReqwestBlocking(reqwest_blocking::ReqwestBlocking),
}

/// One dependency call, as either client sends it.
struct Call<'a> {
    method: Method,
    url: &'a Url,
    headers: &'a [(&'static str, &'a str)],
    /// A JSON body (`Content-Type: application/json`), or none.
    json: Option<Vec<u8>>,
    /// Less than `DEPS_TIMEOUT_MS` when the request's deadline is nearer; `None`: `DEPS_TIMEOUT_MS`.
    timeout: Option<Duration>,
}

#[derive(Clone, Copy)]
enum Method {
    Get,
    Post,
}

/// Whether `client` can call the dependencies as `settings` say: ureq speaks no HTTP/2, so it
/// refuses `DEPS_HTTP=h2c` (checked before anything is started, so the API refuses to start).
pub fn check(settings: &CommonSettings, client: DepsClient) -> anyhow::Result<()> {
    if client == DepsClient::Ureq && settings.deps_http == DepsHttp::H2c {
        anyhow::bail!(
            "DEPS_HTTP=h2c needs HTTP/2, which DEPS_CLIENT=ureq (the default) does not speak: \
             set DEPS_CLIENT=reqwest-blocking, or DEPS_HTTP=http1"
        );
    }
    Ok(())
}

impl Deps {
    /// One client for the process. `callers`: how many threads may call at once (the request
    /// threads and the background loops), which sizes ureq's pool of kept-alive connections.
    pub fn new(
        settings: &CommonSettings,
        client: DepsClient,
        callers: usize,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<Self> {
        check(settings, client)?;
        // `DEPS_URL`'s host, looked up once and kept (`order_core::plumbing::dns`): ureq would
        // look it up on every call, on a thread spawned for it.
        let dns = DnsCache::system();
        metrics.register(dns.collector());
        let client = match client {
            DepsClient::Ureq => Client::Ureq(ureq_client::UreqClient::new(settings, callers, dns)),
            DepsClient::ReqwestBlocking => {
                Client::ReqwestBlocking(reqwest_blocking::ReqwestBlocking::new(settings, &dns)?)
            }
        };
        let base = settings.deps_url.trim_end_matches('/').to_owned();
        Ok(Deps {
            client,
            seller_url: parse(&base, deps::SELLER_PATH)?,
            risk_url: parse(&base, deps::RISK_PATH)?,
            pay_url: parse(&base, deps::PAY_PATH)?,
            base: parse(&base, "")?,
            metrics,
        })
    }

    /// Step 1: resolves the seller token to a seller id, within `timeout` (at most
    /// `DEPS_TIMEOUT_MS`, less when the request's deadline is nearer).
    pub fn authenticate(&self, token: &str, timeout: Duration) -> Result<String, ApiError> {
        let call = Call {
            method: Method::Get,
            url: &self.seller_url,
            headers: &[("Authorization", token)],
            json: None,
            timeout: Some(timeout),
        };
        self.call(Dependency::Seller, call, deps::seller_outcome)
    }

    /// Step 3: the risk analysis's recommendation, within `timeout` (as for `authenticate`).
    pub fn risk(
        &self,
        seller_id: &str,
        order: &ValidOrder,
        timeout: Duration,
    ) -> Result<Recommendation, ApiError> {
        let call = Call {
            method: Method::Post,
            url: &self.risk_url,
            headers: &[],
            json: Some(json(Dependency::Risk, &RiskRequest::new(seller_id, order))?),
            timeout: Some(timeout),
        };
        self.call(Dependency::Risk, call, deps::risk_outcome)
    }

    /// Step 4: the charge, under the charge's idempotency key (`seller:reference:attempt`, stored
    /// with the key in CHARGING), so a resumed attempt or a retry never charges twice.
    pub fn pay(&self, gateway_key: &str, order: &ValidOrder) -> Result<PayResult, ApiError> {
        let call = Call {
            method: Method::Post,
            url: &self.pay_url,
            headers: &[("Idempotency-Key", gateway_key)],
            json: Some(json(Dependency::Payment, &PayRequest::new(order))?),
            timeout: None,
        };
        self.call(Dependency::Payment, call, deps::pay_outcome)
    }

    /// Recovery: what the gateway knows of a charge (`None`: it never saw the key).
    pub fn lookup_payment(&self, gateway_key: &str) -> Result<Option<GatewayPayment>, ApiError> {
        let url = deps::payment_url(&self.base, gateway_key);
        let call = bare(Method::Get, &url);
        self.call(Dependency::Payment, call, deps::lookup_outcome)
    }

    /// Recovery: voids a charge, or blocks a key the gateway never saw from ever charging.
    pub fn void_payment(&self, gateway_key: &str) -> Result<GatewayPayment, ApiError> {
        let url = deps::void_url(&self.base, gateway_key);
        let call = bare(Method::Post, &url);
        self.call(Dependency::Payment, call, deps::void_outcome)
    }

    /// Sends `call` with the client `DEPS_CLIENT` names and ends it with `outcome`, one of
    /// `deps`'s readers (`deps_client::settle`).
    fn call<T>(
        &self,
        dependency: Dependency,
        call: Call<'_>,
        outcome: impl FnOnce(u16, &[u8]) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let start = Instant::now();
        let read = match &self.client {
            Client::Ureq(c) => c.send(call),
            Client::ReqwestBlocking(c) => c.send(call),
        };
        deps_client::settle(&self.metrics, dependency, start, read, outcome)
    }
}

/// A call with no header, no body and `DEPS_TIMEOUT_MS`.
fn bare(method: Method, url: &Url) -> Call<'_> {
    Call {
        method,
        url,
        headers: &[],
        json: None,
        timeout: None,
    }
}

/// A request body as JSON (serialising the contract's own types does not fail; if it did, the
/// call would not be made and the dependency is named).
fn json(dependency: Dependency, body: &impl serde::Serialize) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(body).map_err(|e| ApiError::dependency(dependency, e))
}

/// `DEPS_URL` + a path, as a URL.
fn parse(base: &str, path: &str) -> anyhow::Result<Url> {
    Url::parse(&format!("{base}{path}")).with_context(|| format!("DEPS_URL {base:?}"))
}
