//! The wire format of the three dependencies (seller, risk, payment) and how their answers are
//! read. Both APIs' `clients` modules only move bytes; what an answer *means* is decided here, once.

use serde::{Deserialize, Serialize};
use url::Url;

use crate::domain::contract::{PaymentMethod, ValidOrder};
use crate::domain::error::{ApiError, Dependency};

pub mod answer;

pub use answer::{AnswerFault, DEPS_ANSWER_MAX_BYTES};

// The dependencies' paths, the one copy: both APIs call them and mock-deps serves them.
pub const SELLER_PATH: &str = "/sellers/authorization";
pub const RISK_PATH: &str = "/risk-analysis/validate";
pub const PAY_PATH: &str = "/gateway/pay";
/// The gateway's reconciliation API: [`payment_path`] and [`void_path`] under it.
pub const PAYMENTS_PATH: &str = "/gateway/payments";
/// After [`payment_path`]: the void of that charge.
pub const VOID_SUFFIX: &str = "/void";

#[derive(Debug, Deserialize)]
struct SellerResponse {
    seller_id: String,
}

#[derive(Debug, Serialize)]
pub struct RiskRequest<'a> {
    pub seller_id: &'a str,
    pub reference_id: &'a str,
    pub amount: i64,
    pub tax_id: &'a str,
}

impl<'a> RiskRequest<'a> {
    pub fn new(seller_id: &'a str, order: &'a ValidOrder) -> Self {
        RiskRequest {
            seller_id,
            reference_id: &order.request.reference_id,
            amount: order.request.payment.amount,
            tax_id: &order.request.customer.tax_id,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Recommendation {
    Approve,
    Disapprove,
}

#[derive(Debug, Deserialize)]
struct RiskResponse {
    recommendation: Recommendation,
}

/// The charge sent to the gateway. The card travels to the gateway and nowhere else.
#[derive(Debug, Serialize)]
pub struct PayRequest<'a> {
    pub amount: i64,
    pub installments: i64,
    pub payment_method: &'a PaymentMethod,
}

impl<'a> PayRequest<'a> {
    pub fn new(order: &'a ValidOrder) -> Self {
        let payment = &order.request.payment;
        PayRequest {
            amount: payment.amount,
            installments: payment.payment_method.installments,
            payment_method: &payment.payment_method,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PayStatus {
    Success,
    Declined,
}

/// The gateway's answer to a charge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayResult {
    pub code: String,
    #[serde(rename = "message")]
    pub status: PayStatus,
}

/// The `Idempotency-Key` of a charge: `<seller_id>:<reference_id>:<key_id>:<attempt>`, where
/// `key_id` is the idempotency key row's own UUID (made by the database when the key is first
/// reserved, kept across attempts) and `attempt` the attempt that marked the key `CHARGING`.
/// Retries and recovery reuse the stored key, so one charge has one key however often it is asked
/// for; only a key that recovery found uncharged and voided at the gateway is ever followed by
/// another. The row's id makes the key unique for ever: a database restored from a backup, or a
/// second database behind the same gateway, re-issues `seller:reference:1` for a new order, and
/// the gateway would answer it with an old charge; it never re-issues a UUID.
pub fn payment_idempotency_key(
    seller_id: &str,
    reference_id: &str,
    key_id: &str,
    attempt: i32,
) -> String {
    format!("{seller_id}:{reference_id}:{key_id}:{attempt}")
}

/// `GET` this URL (under `DEPS_URL`, `base`) for what the gateway knows of a charge:
/// [`PAYMENTS_PATH`]`/<key>`, the key percent-encoded as one path segment. It begins with the
/// seller id, which is the seller service's to choose and may hold `/`, `?` or `%`: pasted into the
/// path as it is, it would name another path (or start a query).
pub fn payment_url(base: &Url, gateway_key: &str) -> Url {
    let mut url = base.clone();
    url.path_segments_mut()
        .expect("DEPS_URL is an http(s) URL")
        .pop_if_empty()
        .extend(PAYMENTS_PATH.split('/').filter(|s| !s.is_empty()))
        .push(gateway_key);
    url
}

/// `POST` this URL to void a charge (or to block a key the gateway never saw): [`payment_url`]
/// then [`VOID_SUFFIX`].
pub fn void_url(base: &Url, gateway_key: &str) -> Url {
    let mut url = payment_url(base, gateway_key);
    url.path_segments_mut()
        .expect("DEPS_URL is an http(s) URL")
        .push(VOID_SUFFIX.trim_start_matches('/'));
    url
}

/// What the gateway knows of one idempotency key.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GatewayPayment {
    /// `SUCCESS`, `DECLINED` or `VOIDED`.
    pub status: String,
    pub amount: i64,
    #[serde(default)]
    pub code: String,
    /// Money was taken at some point (a voided charge included).
    pub charged: bool,
}

/// Reads the gateway's answer about a key: 200 describes it, 404 means it never saw the key.
pub fn lookup_outcome(status: u16, body: &[u8]) -> Result<Option<GatewayPayment>, ApiError> {
    match status {
        200 => parse(Dependency::Payment, body).map(Some),
        404 => Ok(None),
        other => Err(unexpected(Dependency::Payment, format!("status {other}"))),
    }
}

/// Reads the answer to a void: the key as it is after the void.
pub fn void_outcome(status: u16, body: &[u8]) -> Result<GatewayPayment, ApiError> {
    match status {
        200 => parse(Dependency::Payment, body),
        other => Err(unexpected(Dependency::Payment, format!("status {other}"))),
    }
}

/// Reads the seller service's answer: 200 names the seller, 401 refuses the token.
pub fn seller_outcome(status: u16, body: &[u8]) -> Result<String, ApiError> {
    match status {
        200 => {
            let parsed: SellerResponse = parse(Dependency::Seller, body)?;
            let id = parsed.seller_id;
            if id.is_empty() || id.len() > 64 {
                return Err(unexpected(Dependency::Seller, "seller_id out of range"));
            }
            Ok(id)
        }
        401 | 403 => Err(ApiError::Unauthorized),
        other => Err(unexpected(Dependency::Seller, format!("status {other}"))),
    }
}

pub fn risk_outcome(status: u16, body: &[u8]) -> Result<Recommendation, ApiError> {
    match status {
        200 => Ok(parse::<RiskResponse>(Dependency::Risk, body)?.recommendation),
        other => Err(unexpected(Dependency::Risk, format!("status {other}"))),
    }
}

/// Reads the gateway's answer to a charge: 200 is its verdict. Any other status — a 5xx, a 3xx
/// (never followed, see `deps_client`) — leaves the charge's outcome unknown: the error keeps the
/// key `CHARGING`, and the client's retry or recovery asks the gateway under the same key.
pub fn pay_outcome(status: u16, body: &[u8]) -> Result<PayResult, ApiError> {
    match status {
        200 => parse(Dependency::Payment, body),
        300..=399 => Err(unexpected(
            Dependency::Payment,
            format!("redirect (status {status}), not followed: the charge's outcome is unknown"),
        )),
        other => Err(unexpected(Dependency::Payment, format!("status {other}"))),
    }
}

/// Whether a dependency's status counts as a call that worked in the metrics
/// (`dependency_request_duration_seconds{outcome="ok"}`): a 2xx, or a 4xx verdict of its own (a
/// decline, an unknown key). A 5xx failed, and so did a 3xx: no call follows it (`deps_client`),
/// and the outcome readers above take it as a failed call (for the charge, an unknown outcome).
pub fn call_worked(status: u16) -> bool {
    matches!(status, 200..=299 | 400..=499)
}

fn parse<T: serde::de::DeserializeOwned>(dep: Dependency, body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::dependency(dep, anyhow::Error::new(e).context(AnswerFault::Malformed))
    })
}

fn unexpected(dep: Dependency, what: impl std::fmt::Display) -> ApiError {
    ApiError::dependency(dep, anyhow::anyhow!("unexpected answer: {what}"))
}

/// Extracts the seller token from an `Authorization` header: the raw token, or `Bearer <token>`.
pub fn token_from_header(value: Option<&str>) -> Result<String, ApiError> {
    let raw = value.map(str::trim).unwrap_or_default();
    let token = match raw.split_once(' ') {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest.trim(),
        _ => raw,
    };
    let ok = !token.is_empty() && token.len() <= 128 && token.bytes().all(|b| b.is_ascii_graphic());
    ok.then(|| token.to_owned()).ok_or(ApiError::Unauthorized)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gateway_key_is_one_encoded_path_segment() {
        let key = "shop/1?a%2f#b:ref-1:1";
        let encoded = "shop%2F1%3Fa%252f%23b:ref-1:1";
        for base in ["http://deps:9090", "http://deps:9090/"] {
            let base = Url::parse(base).unwrap();
            assert_eq!(
                payment_url(&base, key).as_str(),
                format!("http://deps:9090/gateway/payments/{encoded}")
            );
            assert_eq!(
                void_url(&base, key).as_str(),
                format!("http://deps:9090/gateway/payments/{encoded}/void")
            );
        }
        let under_a_prefix = Url::parse("http://deps/mock/").unwrap();
        assert_eq!(
            payment_url(&under_a_prefix, "acme:r:1").as_str(),
            "http://deps/mock/gateway/payments/acme:r:1"
        );
    }
}
