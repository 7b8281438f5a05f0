//! Calls to the seller, risk and payment services with one shared `reqwest::Client`.
//!
//! Mirrors blocking-api's `clients.rs`; what an answer means is decided in `order_core::domain::deps`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use order_core::domain::contract::ValidOrder;
use order_core::domain::deps::answer::{self, BoundedBody};
use order_core::domain::deps::{
    self, GatewayPayment, PayRequest, PayResult, Recommendation, RiskRequest,
};
use order_core::domain::error::{ApiError, Dependency};
use order_core::plumbing::deps_client::{self, Answer};
use order_core::plumbing::dns::DnsCache;
use order_core::plumbing::metrics::Metrics;
use order_core::plumbing::settings::CommonSettings;

pub struct Deps {
    http: reqwest::Client,
    base: reqwest::Url,
    /// The three per-order URLs, parsed once (not per call).
    seller_url: reqwest::Url,
    risk_url: reqwest::Url,
    pay_url: reqwest::Url,
    metrics: Arc<Metrics>,
}

impl Deps {
    /// One client for the process, built by `order_core::plumbing::deps_client::configure` (timeouts,
    /// keep-alive reuse, `DEPS_HTTP`, no redirect followed).
    pub fn new(settings: &CommonSettings, metrics: Arc<Metrics>) -> anyhow::Result<Self> {
        let dns = DnsCache::system();
        metrics.register(dns.collector());
        let builder = deps_client::configure(reqwest::Client::builder(), settings, &dns);
        let http = builder.build().context("building the HTTP client")?;
        let base = settings.deps_url.trim_end_matches('/').to_owned();
        Ok(Deps {
            http,
            seller_url: parse(&base, deps::SELLER_PATH)?,
            risk_url: parse(&base, deps::RISK_PATH)?,
            pay_url: parse(&base, deps::PAY_PATH)?,
            base: parse(&base, "")?,
            metrics,
        })
    }

    /// Step 1: resolves the seller token to a seller id, within `timeout` (at most
    /// `DEPS_TIMEOUT_MS`, less when the request's deadline is nearer).
    pub async fn authenticate(&self, token: &str, timeout: Duration) -> Result<String, ApiError> {
        let request = self
            .http
            .get(self.seller_url.clone())
            .timeout(timeout)
            .header("Authorization", token);
        self.call(Dependency::Seller, request, deps::seller_outcome)
            .await
    }

    /// Step 3: the risk analysis's recommendation, within `timeout` (as for `authenticate`).
    pub async fn risk(
        &self,
        seller_id: &str,
        order: &ValidOrder,
        timeout: Duration,
    ) -> Result<Recommendation, ApiError> {
        let request = self
            .http
            .post(self.risk_url.clone())
            .timeout(timeout)
            .json(&RiskRequest::new(seller_id, order));
        self.call(Dependency::Risk, request, deps::risk_outcome)
            .await
    }

    /// Step 4: the charge, under the charge's idempotency key (`seller:reference:attempt`, stored
    /// with the key in CHARGING), so a resumed attempt or a retry never charges twice.
    pub async fn pay(&self, gateway_key: &str, order: &ValidOrder) -> Result<PayResult, ApiError> {
        let request = self
            .http
            .post(self.pay_url.clone())
            .header("Idempotency-Key", gateway_key)
            .json(&PayRequest::new(order));
        self.call(Dependency::Payment, request, deps::pay_outcome)
            .await
    }

    /// Recovery: what the gateway knows of a charge (`None`: it never saw the key).
    pub async fn lookup_payment(
        &self,
        gateway_key: &str,
    ) -> Result<Option<GatewayPayment>, ApiError> {
        let url = deps::payment_url(&self.base, gateway_key);
        let request = self.http.get(url);
        self.call(Dependency::Payment, request, deps::lookup_outcome)
            .await
    }

    /// Recovery: voids a charge, or blocks a key the gateway never saw from ever charging.
    pub async fn void_payment(&self, gateway_key: &str) -> Result<GatewayPayment, ApiError> {
        let url = deps::void_url(&self.base, gateway_key);
        let request = self.http.post(url);
        self.call(Dependency::Payment, request, deps::void_outcome)
            .await
    }

    /// Sends `request` and ends the call with `outcome`, one of `deps`'s readers
    /// (`deps_client::settle`).
    async fn call<T>(
        &self,
        dependency: Dependency,
        request: reqwest::RequestBuilder,
        outcome: impl FnOnce(u16, &[u8]) -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        let start = Instant::now();
        let read = read(request).await;
        deps_client::settle(&self.metrics, dependency, start, read, outcome)
    }
}

/// The answer to `request`, its body read chunk by chunk and refused once past
/// `DEPS_ANSWER_MAX_BYTES` (at once, if its `Content-Length` says so). The request's timeout runs
/// to the body's last byte (reqwest's total timeout), so a dripped body ends with it.
async fn read(request: reqwest::RequestBuilder) -> anyhow::Result<Answer> {
    let mut response = request.send().await?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    answer::check_length(response.content_length())?;
    let mut body = BoundedBody::default();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => body.push(&chunk)?,
            Ok(None) => break,
            Err(e) => return Err(deps_client::body_failed(e.is_timeout(), e)),
        }
    }
    Ok(Answer {
        status,
        content_type,
        body: body.into_vec(),
    })
}

/// `DEPS_URL` + a path, as a URL.
fn parse(base: &str, path: &str) -> anyhow::Result<reqwest::Url> {
    reqwest::Url::parse(&format!("{base}{path}")).with_context(|| format!("DEPS_URL {base:?}"))
}
