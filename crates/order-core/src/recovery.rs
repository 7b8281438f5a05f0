//! What recovery does with a key left in `CHARGING` — decided once, here, for both APIs' loops.
//!
//! A key is left in `CHARGING` when anything failed after it was marked (the gateway call, the
//! persist, the process itself). Its lease expires; then a client's retry resumes it, or the
//! recovery loop claims it (`sql::CLAIM_CHARGING`, `FOR UPDATE SKIP LOCKED`, so several instances
//! never settle the same key), asks the gateway what became of the charge, and settles it with
//! [`decide`]: every charge ends as exactly one order or one void.

use crate::deps::{GatewayPayment, PayResult, PayStatus};
use crate::error::ApiError;
use crate::order::{Outcome, PendingOrder};

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
            Err(_) => Settle::VoidAndRefuse("the stored pending order is unreadable"),
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
                "number": "1", "state": "S", "city": "c", "locality": "l", "zip_code": "z"}}})
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
            Settle::VoidAndRefuse(_)
        ));
    }

    #[test]
    fn the_terminal_outcome_is_a_replayable_refusal() {
        let out = voided_outcome();
        assert_eq!(out.status, 422);
        assert!(out.body.contains("order_voided"), "{}", out.body);
    }
}
