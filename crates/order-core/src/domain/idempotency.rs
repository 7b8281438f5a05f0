//! What to do when a request's idempotency key is already taken.
//!
//! Reservation is one `INSERT … ON CONFLICT DO UPDATE … WHERE <lease expired and same request>`
//! ([`crate::domain::sql::RESERVE_KEY`]): PostgreSQL serialises concurrent attempts on the primary key, so
//! exactly one wins. A loser reads the row in the same transaction and [`decide`]s.

use crate::domain::error::ApiError;
use crate::domain::order::{Charging, Outcome, PendingOrder};
use crate::domain::request_hash::{StoredForm, stored_form};

pub const STATE_IN_PROGRESS: &str = "IN_PROGRESS";
/// Marked, and committed, before the gateway is called: the key may have a charge, so it is never
/// deleted; a failure from here on leaves it to a retry or to recovery.
pub const STATE_CHARGING: &str = "CHARGING";
pub const STATE_COMPLETED: &str = "COMPLETED";

/// One attempt at one idempotency key: the seller, the request's reference (the key), and the
/// attempt number that fences every write of this attempt. What the key's statements bind first,
/// in this order (`sql::MARK_CHARGING`, `COMPLETE_KEY`, `PERSIST_ORDER`, `RELEASE_KEY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRef<'a> {
    pub seller_id: &'a str,
    pub reference_id: &'a str,
    pub attempt: i32,
}

/// The row found for a key that could not be reserved.
#[derive(Debug, Clone)]
pub struct ExistingKey {
    pub request_hash: String,
    pub state: String,
    pub response_status: Option<i32>,
    pub response_body: Option<String>,
    pub order_id: Option<String>,
}

/// What a request that won its key will charge under.
#[derive(Debug)]
pub enum ChargePlan {
    /// A fresh attempt: if risk approves, a new charge under the key row's own id (`key_id`, a
    /// UUID the database made when the key was first reserved; see
    /// [`crate::domain::deps::payment_idempotency_key`]).
    Fresh { key_id: String },
    /// The takeover of a key already in `CHARGING`: resume that charge, under its stored key.
    /// Boxed: rare, and large next to the other variant.
    Resume(Box<Charging>),
}

/// The result of trying to reserve a key.
#[derive(Debug)]
pub enum Reservation {
    /// This request owns the key; `attempt` fences out an older attempt whose lease expired.
    Acquired { attempt: i32, plan: ChargePlan },
    /// The key belongs to another request, or to this one already finished or still running.
    Taken(ExistingKey),
    /// The key vanished between the insert and the read (a failed attempt released it): retry.
    Released,
}

/// Decides a request whose key is taken: replay the stored outcome, report it in progress, or
/// refuse a different request that reuses the key. `is_same_request` says whether the key's
/// stored hash is this request's (`ValidOrder::is_same_request`, which also knows the hash's
/// earlier form). A hash of a form only a newer release computes is neither: 503
/// `idempotency_key_newer_release` (`request_hash::stored_form`).
pub fn decide(
    existing: ExistingKey,
    is_same_request: impl Fn(&str) -> bool,
) -> Result<Outcome, ApiError> {
    if stored_form(&existing.request_hash) == StoredForm::Newer {
        return Err(ApiError::IdempotencyKeyNewerRelease);
    }
    if !is_same_request(&existing.request_hash) {
        return Err(ApiError::IdempotencyKeyReused);
    }
    match (
        existing.state.as_str(),
        existing.response_status,
        existing.response_body,
    ) {
        (STATE_COMPLETED, Some(status), Some(body)) => {
            let status = u16::try_from(status)
                .map_err(|_| ApiError::Internal(anyhow::anyhow!("stored status {status}")))?;
            Ok(Outcome::replay(status, body, existing.order_id))
        }
        (STATE_IN_PROGRESS | STATE_CHARGING, ..) => Err(ApiError::RequestInProgress),
        (state, ..) => Err(ApiError::Internal(anyhow::anyhow!(
            "idempotency key in state {state} without a stored response"
        ))),
    }
}

/// The row a won reservation returned (`sql::RESERVE_KEY`).
#[derive(Debug, Clone)]
pub struct WonKey {
    pub attempt: i32,
    pub key_id: String,
    pub state: String,
    pub gateway_key: Option<String>,
    pub pending_order: Option<String>,
}

/// Reads the row a won reservation returned: a fresh attempt, or the takeover of a `CHARGING`
/// key whose charge it resumes.
pub fn acquired(won: WonKey) -> Result<Reservation, ApiError> {
    let plan = match (won.state.as_str(), won.gateway_key, won.pending_order) {
        (STATE_CHARGING, Some(gateway_key), Some(pending)) => {
            // A pending order this release cannot read (a newer release's) is left to a release
            // that can: the retry is told to come back, and the key waits for recovery.
            let pending = PendingOrder::from_json(&pending).map_err(|e| {
                tracing::warn!(error = %e, gateway_key, "a retry cannot resume this charge");
                ApiError::RequestInProgress
            })?;
            ChargePlan::Resume(Box::new(Charging {
                gateway_key,
                pending,
            }))
        }
        (STATE_CHARGING, ..) => {
            return Err(ApiError::Internal(anyhow::anyhow!(
                "CHARGING key without its charge"
            )));
        }
        _ => ChargePlan::Fresh { key_id: won.key_id },
    };
    Ok(Reservation::Acquired {
        attempt: won.attempt,
        plan,
    })
}

/// A request whose card has expired since it was first sent: the stored outcome when its key
/// completed; `request_in_progress` (409) when its key is `CHARGING` — a charge was asked for
/// while the card was valid, and the retry (or recovery) will finish it, so a terminal 400 now
/// would tell the client "no order" while recovery goes on to make one; else `expired`.
pub fn decide_expired(
    existing: Option<ExistingKey>,
    is_same_request: impl Fn(&str) -> bool,
    expired: ApiError,
) -> Result<Outcome, ApiError> {
    match existing {
        Some(e) if stored_form(&e.request_hash) == StoredForm::Newer => {
            Err(ApiError::IdempotencyKeyNewerRelease)
        }
        Some(e) if is_same_request(&e.request_hash) => match e.state.as_str() {
            STATE_CHARGING => Err(ApiError::RequestInProgress),
            // Compared once above: the earlier form's hash costs a serialisation.
            _ => decide(e, |_| true).or(Err(expired)),
        },
        _ => Err(expired),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(hash: &str, state: &str, status: Option<i32>) -> ExistingKey {
        ExistingKey {
            request_hash: hash.into(),
            state: state.into(),
            response_status: status,
            response_body: status.map(|_| "{\"x\":1}".into()),
            order_id: Some("ORDER_1".into()),
        }
    }

    /// The comparison of a request whose stored hash is `hash`.
    fn same(hash: &'static str) -> impl Fn(&str) -> bool {
        move |stored| stored == hash
    }

    #[test]
    fn other_body_is_refused_whatever_the_state() {
        for state in [STATE_IN_PROGRESS, STATE_COMPLETED] {
            let err = decide(row("a", state, Some(201)), same("b")).unwrap_err();
            assert!(matches!(err, ApiError::IdempotencyKeyReused), "{state}");
        }
    }

    #[test]
    fn a_hash_of_a_newer_form_is_neither_replayed_nor_refused_as_another_body() {
        let hash = "3:00ff";
        for state in [STATE_IN_PROGRESS, STATE_CHARGING, STATE_COMPLETED] {
            // Even a comparison that would say "the same" is not asked.
            let err = decide(row(hash, state, Some(201)), |_| true).unwrap_err();
            assert!(
                matches!(err, ApiError::IdempotencyKeyNewerRelease),
                "{state}"
            );
            let err = decide_expired(
                Some(row(hash, state, Some(201))),
                |_| true,
                ApiError::NotFound,
            )
            .unwrap_err();
            assert!(
                matches!(err, ApiError::IdempotencyKeyNewerRelease),
                "{state}"
            );
        }
    }

    #[test]
    fn completed_is_replayed_verbatim() {
        let out = decide(row("a", STATE_COMPLETED, Some(402)), same("a")).unwrap();
        assert_eq!(
            (out.status, out.body.as_str(), out.replayed),
            (402, "{\"x\":1}", true)
        );
    }

    #[test]
    fn running_is_in_progress() {
        let err = decide(row("a", STATE_IN_PROGRESS, None), same("a")).unwrap_err();
        assert!(matches!(err, ApiError::RequestInProgress));
    }

    #[test]
    fn charging_is_in_progress_for_a_concurrent_retry() {
        let err = decide(row("a", STATE_CHARGING, None), same("a")).unwrap_err();
        assert!(matches!(err, ApiError::RequestInProgress));
    }

    fn won(state: &str, gateway_key: Option<&str>, pending: Option<&str>) -> WonKey {
        WonKey {
            attempt: 2,
            key_id: "id-1".into(),
            state: state.into(),
            gateway_key: gateway_key.map(Into::into),
            pending_order: pending.map(Into::into),
        }
    }

    #[test]
    fn a_charging_takeover_resumes_its_charge() {
        let fresh = acquired(won(STATE_IN_PROGRESS, None, None)).unwrap();
        assert!(matches!(
            fresh,
            Reservation::Acquired { attempt: 2, plan: ChargePlan::Fresh { key_id } } if key_id == "id-1"
        ));
        assert!(acquired(won(STATE_CHARGING, Some("k"), None)).is_err());
        assert!(matches!(
            acquired(won(STATE_CHARGING, Some("k"), Some("{"))),
            Err(ApiError::RequestInProgress)
        ));
    }

    #[test]
    fn an_expired_card_is_refused_unless_its_key_has_a_charge_or_an_outcome() {
        let expired = || ApiError::invalid("card", "expired");
        let charging = decide_expired(Some(row("a", STATE_CHARGING, None)), same("a"), expired());
        assert!(matches!(charging, Err(ApiError::RequestInProgress)));
        let done = decide_expired(
            Some(row("a", STATE_COMPLETED, Some(201))),
            same("a"),
            expired(),
        );
        assert_eq!(done.unwrap().status, 201);
        for existing in [
            None,
            Some(row("a", STATE_IN_PROGRESS, None)),
            Some(row("b", STATE_CHARGING, None)),
        ] {
            let refused = decide_expired(existing, same("a"), expired());
            assert!(matches!(refused, Err(ApiError::InvalidRequest { .. })));
        }
    }
}
