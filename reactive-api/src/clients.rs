//! Calls to the seller, risk and payment services with one shared `reqwest::Client`.
//!
//! Mirrors blocking-api's `clients.rs`; what an answer means is decided in `order_core::domain::deps`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use order_core::domain::contract::ValidOrder;
use order_core::domain::deps::{
    self, GatewayPayment, PayRequest, PayResult, Recommendation, RiskRequest,
};
use order_core::domain::error::{ApiError, Dependency};
use order_core::plumbing::deps_client;
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
        let (status, body) = self.call(Dependency::Seller, request).await?;
        deps::seller_outcome(status, &body)
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
        let (status, body) = self.call(Dependency::Risk, request).await?;
        deps::risk_outcome(status, &body)
    }

    /// Step 4: the charge, under the charge's idempotency key (`seller:reference:attempt`, stored
    /// with the key in CHARGING), so a resumed attempt or a retry never charges twice.
    pub async fn pay(&self, gateway_key: &str, order: &ValidOrder) -> Result<PayResult, ApiError> {
        let request = self
            .http
            .post(self.pay_url.clone())
            .header("Idempotency-Key", gateway_key)
            .json(&PayRequest::new(order));
        let (status, body) = self.call(Dependency::Payment, request).await?;
        deps::pay_outcome(status, &body)
    }

    /// Recovery: what the gateway knows of a charge (`None`: it never saw the key).
    pub async fn lookup_payment(
        &self,
        gateway_key: &str,
    ) -> Result<Option<GatewayPayment>, ApiError> {
        let url = deps::payment_url(&self.base, gateway_key);
        let (status, body) = self.call(Dependency::Payment, self.http.get(url)).await?;
        deps::lookup_outcome(status, &body)
    }

    /// Recovery: voids a charge, or blocks a key the gateway never saw from ever charging.
    pub async fn void_payment(&self, gateway_key: &str) -> Result<GatewayPayment, ApiError> {
        let url = deps::void_url(&self.base, gateway_key);
        let (status, body) = self.call(Dependency::Payment, self.http.post(url)).await?;
        deps::void_outcome(status, &body)
    }

    async fn call(
        &self,
        dependency: Dependency,
        request: reqwest::RequestBuilder,
    ) -> Result<(u16, Vec<u8>), ApiError> {
        let start = Instant::now();
        let result = async {
            let response = request.send().await?;
            let status = response.status().as_u16();
            Ok::<_, reqwest::Error>((status, response.bytes().await?.to_vec()))
        }
        .await;
        let ok = matches!(&result, Ok((status, _)) if deps::call_worked(*status));
        self.metrics
            .observe_dependency(dependency.as_str(), ok, start);
        result.map_err(|e| ApiError::dependency(dependency, e))
    }
}

/// `DEPS_URL` + a path, as a URL.
fn parse(base: &str, path: &str) -> anyhow::Result<reqwest::Url> {
    reqwest::Url::parse(&format!("{base}{path}")).with_context(|| format!("DEPS_URL {base:?}"))
}
