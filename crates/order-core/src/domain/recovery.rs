//! What recovery does with a key left in `CHARGING` — decided once, here, for both APIs' loops.
//!
//! A key is left in `CHARGING` when anything failed after it was marked (the gateway call, the
//! persist, the process itself). Its lease expires; then a client's retry resumes it, or the
//! recovery loop claims it (`sql::CLAIM_CHARGING`, `FOR UPDATE SKIP LOCKED`, so several instances
//! never settle the same key), asks the gateway what became of the charge, and settles it with
//! [`decide`]: every charge ends as exactly one order or one void.
//!
//! Four rules keep recovery from turning a good charge into a void:
//! - a charge whose pending order this release cannot read (a field it does not know, written by
//!   a newer release, or one it misses) is never voided for it: the key is left `CHARGING`, put
//!   off like any other ([`Settle::Unreadable`]), counted in `recovery_unreadable_deferred` and
//!   logged once by name, until a release that can read it completes it;
//! - it voids only what is known to be unmakeable: the gateway's answer says so ([`decide`]), or
//!   the database refused the order's rows for good (`db_failure::is_refusal`); any other failure
//!   leaves the key `CHARGING`, put off for a growing [`backoff`];
//! - immediately before a void it re-asserts its claim (`sql::REASSERT_CLAIM`: still its attempt,
//!   still `CHARGING`, no order under this payment key) and skips the key when that fails;
//! - it checks the void's answer ([`void_took_effect`]): a void that did not take effect leaves
//!   the key `CHARGING` for the next pass, never a stored `order_voided` over a live charge.

use crate::domain::deps::{GatewayPayment, PayResult, PayStatus};
use crate::domain::error::ApiError;
use crate::domain::idempotency::KeyRef;
use crate::domain::order::{Outcome, PendingOrder};

/// Keys claimed per statement; a pass claims until fewer come back.
pub const CLAIM_BATCH: i64 = 100;

/// Pauses between persist attempts on a fresh connection after a database failure (a restart,
/// a dropped connection): about a third of a second in all before the key is left to recovery.
pub const PERSIST_RETRY_DELAYS_MS: [u64; 3] = [50, 100, 200];
/// No retry starts once this much time has passed since the first persist attempt began.
pub const PERSIST_RETRY_BUDGET: std::time::Duration = std::time::Duration::from_millis(500);

/// A key claimed by recovery, as stored.
#[derive(Debug, Clone)]
pub struct ClaimedKey {
    pub seller_id: String,
    pub reference_id: String,
    pub attempt: i32,
    pub gateway_key: String,
    pub amount: i64,
    pub pending_order: String,
    /// How often recovery has put this key off already (it sets the next [`backoff`]).
    pub deferrals: i32,
}

impl ClaimedKey {
    /// The claimed attempt at the key, as the key's statements bind it.
    pub fn key_ref(&self) -> KeyRef<'_> {
        KeyRef {
            seller_id: &self.seller_id,
            reference_id: &self.reference_id,
            attempt: self.attempt,
        }
    }
}

/// The first pause after a key is put off; each further deferral doubles it, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: std::time::Duration = std::time::Duration::from_secs(1);
/// The longest a key is put off: an outage that ends is noticed within a minute.
pub const MAX_BACKOFF: std::time::Duration = std::time::Duration::from_secs(60);

/// How long recovery leaves a key alone after its `deferrals`-th deferral (counted from 0):
/// 1 s, 2 s, 4 s … capped at a minute. With 150 keys that cannot be settled, a pass tries each
/// once and ends; the next tries them again only when their pause has passed.
pub fn backoff(deferrals: i32) -> std::time::Duration {
    let doublings = deferrals.clamp(0, 16) as u32;
    FIRST_BACKOFF
        .saturating_mul(1 << doublings)
        .min(MAX_BACKOFF)
}

/// Whether the gateway's answer to a void shows the key voided. Anything else (a charge still
/// live, an unknown status) means the void did not take effect.
pub fn void_took_effect(after: &GatewayPayment) -> bool {
    after.status == "VOIDED"
}

/// What to do with a claimed key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settle {
    /// Charged: create the order and complete the key with the 201 the client would have had.
    Persist(Box<PendingOrder>, PayResult),
    /// The gateway declined: complete the key with the 402 the client would have had.
    Decline,
    /// The gateway never saw the key: void it there first (a late request under it must never
    /// charge), then release the key so the client may retry.
    VoidThenRelease,
    /// Voided before any charge (an earlier pass stopped after its void): release the key.
    Release,
    /// Charged, but the order can no longer be made: void the charge, complete the key with a
    /// terminal `order_voided`.
    VoidAndRefuse(&'static str),
    /// Already voided after a charge: complete the key with the terminal `order_voided`.
    Refuse,
    /// Charged, but this release cannot read the pending order (why): leave the key `CHARGING`
    /// for a release that can, put off for its back-off.
    Unreadable(String),
}

/// Decides from the gateway's view of the key (`None`: it never saw it).
pub fn decide(key: &ClaimedKey, found: Option<&GatewayPayment>) -> Settle {
    let Some(found) = found else {
        return Settle::VoidThenRelease;
    };
    match (found.status.as_str(), found.charged) {
        ("SUCCESS", _) if found.amount != key.amount => {
            Settle::VoidAndRefuse("the gateway charged another amount")
        }
        ("SUCCESS", _) => match PendingOrder::from_json(&key.pending_order) {
            Ok(pending) => Settle::Persist(
                Box::new(pending),
                PayResult {
                    code: found.code.clone(),
                    status: PayStatus::Success,
                },
            ),
            // The reason, not the API error's public message.
            Err(ApiError::Internal(cause)) => Settle::Unreadable(format!("{cause:#}")),
            Err(e) => Settle::Unreadable(e.to_string()),
        },
        ("DECLINED", _) => Settle::Decline,
        ("VOIDED", false) => Settle::Release,
        ("VOIDED", true) => Settle::Refuse,
        _ => Settle::VoidAndRefuse("the gateway answered an unknown status"),
    }
}

/// The terminal outcome stored when a charge was voided instead of becoming an order.
pub fn voided_outcome() -> Outcome {
    Outcome::refused(&ApiError::OrderVoided)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(pending_order: &str) -> ClaimedKey {
        ClaimedKey {
            seller_id: "acme".into(),
            reference_id: "r".into(),
            attempt: 2,
            gateway_key: "acme:r:1".into(),
            amount: 500,
            pending_order: pending_order.into(),
            deferrals: 0,
        }
    }

    fn seen(status: &str, amount: i64, charged: bool) -> GatewayPayment {
        GatewayPayment {
            status: status.into(),
            amount,
            code: "c".into(),
            charged,
        }
    }

    fn pending() -> String {
        serde_json::json!({"id": "ORDER_1", "reference_id": "r", "seller_id": "acme",
            "amount": 500, "installments": 1, "method": "DEBIT_CARD", "card_last4": "1111",
            "items": [{"name": "x", "quantity": 1, "value": 500}],
            "customer": {"full_name": "A", "tax_id": "12345678901", "address": {"street": "s",
                "number": "1", "state": "S", "city": "c", "locality": "l", "zip_code": "z",
                "complement": null}}})
        .to_string()
    }

    #[test]
    fn every_gateway_answer_has_one_action() {
        let k = key(&pending());
        assert_eq!(decide(&k, None), Settle::VoidThenRelease);
        assert!(matches!(
            decide(&k, Some(&seen("SUCCESS", 500, true))),
            Settle::Persist(p, pay) if p.id == "ORDER_1" && pay.code == "c"
        ));
        assert_eq!(
            decide(&k, Some(&seen("DECLINED", 500, false))),
            Settle::Decline
        );
        assert_eq!(decide(&k, Some(&seen("VOIDED", 0, false))), Settle::Release);
        assert_eq!(decide(&k, Some(&seen("VOIDED", 500, true))), Settle::Refuse);
        assert!(matches!(
            decide(&k, Some(&seen("SUCCESS", 501, true))),
            Settle::VoidAndRefuse(_)
        ));
        assert!(matches!(
            decide(&key("{broken"), Some(&seen("SUCCESS", 500, true))),
            Settle::Unreadable(_)
        ));
        let newer = pending().replace("\"card_last4\"", "\"gift_wrap\":true,\"card_last4\"");
        assert!(matches!(
            decide(&key(&newer), Some(&seen("SUCCESS", 500, true))),
            Settle::Unreadable(why) if why.contains("does not know")
        ));
        // A key the gateway never charged needs no pending order: voided and released.
        assert_eq!(decide(&key(&newer), None), Settle::VoidThenRelease);
    }

    #[test]
    fn backoff_doubles_from_a_second_up_to_a_minute() {
        let secs: Vec<u64> = [0, 1, 2, 5, 6, 7, 1000, -3]
            .into_iter()
            .map(|d| backoff(d).as_secs())
            .collect();
        assert_eq!(secs, [1, 2, 4, 32, 60, 60, 60, 1]);
    }

    #[test]
    fn only_a_voided_answer_is_a_void() {
        assert!(void_took_effect(&seen("VOIDED", 500, true)));
        assert!(!void_took_effect(&seen("SUCCESS", 500, true)));
        assert!(!void_took_effect(&seen("PENDING", 500, false)));
    }

    #[test]
    fn the_terminal_outcome_is_a_replayable_refusal() {
        let out = voided_outcome();
        assert_eq!(out.status, 422);
        assert!(out.body.contains("order_voided"), "{}", out.body);
    }
}
