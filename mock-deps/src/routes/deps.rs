//! Two of the three mocked dependencies of `POST /orders` (SEEDS A): seller token check and risk
//! analysis (the payment gateway, which keeps state, is in `gateway`). Each handler: count, parse
//! (a malformed request is answered at once), wait the injected latency, maybe fail, then answer
//! by fixed business rules. Both are plain handler futures: when the client goes away, actix
//! drops them and the work stops, which is right for calls that change nothing.

use std::borrow::Cow;

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use crate::bad_answer;
use crate::fault::inject;
use crate::json;
use crate::state::State;
use crate::stats::Counters;

/// Risk analysis disapproves amounts above this many cents.
pub const RISK_MAX_AMOUNT_CENTS: i64 = 5_000_000;

/// `sk_<seller_id>`, optionally behind `Bearer `; the id is 1–32 chars of `[a-z0-9-/?%]` and must
/// not start with `revoked`. A seller id is the seller service's to choose: `/`, `?` and `%` are
/// allowed so that the APIs' handling of ids that mean something in a URL can be tested.
pub(crate) fn seller_id(authorization: Option<&str>) -> Option<&str> {
    let raw = authorization?.trim();
    let token = match raw.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("bearer ") => raw[7..].trim_start(),
        _ => raw,
    };
    let id = token.strip_prefix("sk_")?;
    let well_formed = (1..=32).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-/?%".contains(&b));
    (well_formed && !id.starts_with("revoked")).then_some(id)
}

pub(crate) async fn seller_authorization(
    req: HttpRequest,
    state: web::Data<State>,
) -> HttpResponse {
    let counters = &state.stats.seller;
    let _in_flight = counters.start();
    let cfg = state.config();
    let spoil = match inject(cfg.seller, cfg.hang_ms, counters).await {
        Ok(spoil) => spoil,
        Err(injected) => return injected,
    };
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let answer = match seller_id(authorization) {
        Some(id) => {
            Counters::bump(&counters.ok);
            // `id` is `[a-z0-9-/?%]` only: nothing to escape in JSON.
            json::owned(StatusCode::OK, format!(r#"{{"seller_id":"{id}"}}"#))
        }
        None => {
            Counters::bump(&counters.negative);
            json::unauthorized()
        }
    };
    bad_answer::maybe(spoil, answer)
}

/// Strings are borrowed from the body when they need no unescaping: no allocation per field.
#[derive(Deserialize)]
struct RiskRequest<'a> {
    #[serde(borrow)]
    #[allow(dead_code, reason = "required by the contract, not used by the rules")]
    seller_id: Cow<'a, str>,
    #[serde(borrow)]
    #[allow(dead_code, reason = "required by the contract, not used by the rules")]
    reference_id: Cow<'a, str>,
    amount: i64,
    #[serde(borrow)]
    tax_id: Cow<'a, str>,
}

/// A tax id whose digits are all zeros (separators such as `.`, `-`, `/` ignored).
pub(crate) fn all_zero_tax_id(tax_id: &str) -> bool {
    let mut digits = tax_id.chars().filter(char::is_ascii_digit).peekable();
    digits.peek().is_some() && digits.all(|c| c == '0')
}

pub(crate) async fn risk_validate(body: web::Bytes, state: web::Data<State>) -> HttpResponse {
    let counters = &state.stats.risk;
    let _in_flight = counters.start();
    let approve = match serde_json::from_slice::<RiskRequest>(&body) {
        Ok(r) => r.amount <= RISK_MAX_AMOUNT_CENTS && !all_zero_tax_id(&r.tax_id),
        Err(_) => {
            Counters::bump(&counters.bad_requests);
            return json::bad_request();
        }
    };
    // actix buffers a body in an 8 KiB allocation: free it before waiting, it is not needed.
    drop(body);
    let cfg = state.config();
    let spoil = match inject(cfg.risk, cfg.hang_ms, counters).await {
        Ok(spoil) => spoil,
        Err(injected) => return injected,
    };
    Counters::bump(&counters.ok);
    let answer = if approve {
        json::fixed(StatusCode::OK, r#"{"recommendation":"APPROVE"}"#)
    } else {
        Counters::bump(&counters.negative);
        json::fixed(StatusCode::OK, r#"{"recommendation":"DISAPPROVE"}"#)
    };
    bad_answer::maybe(spoil, answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seller_tokens() {
        assert_eq!(seller_id(Some("sk_shop-1")), Some("shop-1"));
        assert_eq!(seller_id(Some("Bearer sk_abc")), Some("abc"));
        assert_eq!(seller_id(Some("bearer  sk_abc ")), Some("abc"));
        assert_eq!(seller_id(Some("sk_shop/1?a%2f")), Some("shop/1?a%2f"));
        assert_eq!(
            seller_id(Some(&format!("sk_{}", "a".repeat(32)))),
            Some(&*"a".repeat(32))
        );
        for bad in [
            "",
            "sk_",
            "sk_Shop",
            "sk_a_b",
            "pk_abc",
            "Bearer",
            "Basic sk_abc",
            "sk_revoked",
            "sk_revoked-7",
            &format!("sk_{}", "a".repeat(33)),
        ] {
            assert_eq!(seller_id(Some(bad)), None, "{bad:?}");
        }
        assert_eq!(seller_id(None), None);
    }

    #[test]
    fn zero_tax_ids() {
        assert!(all_zero_tax_id("00000000000"));
        assert!(all_zero_tax_id("000.000.000-00"));
        assert!(!all_zero_tax_id("000.000.000-01"));
        assert!(!all_zero_tax_id(""));
        assert!(!all_zero_tax_id("--"));
    }
}
