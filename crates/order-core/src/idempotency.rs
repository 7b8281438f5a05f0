//! What to do when a request's idempotency key is already taken.
//!
//! Reservation is one `INSERT … ON CONFLICT DO UPDATE … WHERE <lease expired and same request>`
//! ([`crate::sql::RESERVE_KEY`]): PostgreSQL serialises concurrent attempts on the primary key, so
//! exactly one wins. A loser reads the row in the same transaction and [`decide`]s.

use crate::error::ApiError;
use crate::order::{Charging, Outcome, PendingOrder};

pub const STATE_IN_PROGRESS: &str = "IN_PROGRESS";
/// Marked, and committed, before the gateway is called: the key may have a charge, so it is never
/// deleted; a failure from here on leaves it to a retry or to recovery.
pub const STATE_CHARGING: &str = "CHARGING";
pub const STATE_COMPLETED: &str = "COMPLETED";

/// The row found for a key that could not be reserved.
#[derive(Debug, Clone)]
pub struct ExistingKey {
    pub request_hash: String,
    pub state: String,
    pub response_status: Option<i32>,
    pub response_body: Option<String>,
    pub order_id: Option<String>,
}

/// The result of trying to reserve a key.
#[derive(Debug)]
pub enum Reservation {
    /// This request owns the key; `attempt` fences out an older attempt whose lease expired.
    /// `charging` is set when it took over a key already in `CHARGING`: it resumes that charge.
    Acquired {
        attempt: i32,
        /// Boxed: rare, and large next to the other variants.
        charging: Option<Box<Charging>>,
    },
    /// The key belongs to another request, or to this one already finished or still running.
    Taken(ExistingKey),
    /// The key vanished between the insert and the read (a failed attempt released it): retry.
    Released,
}

/// Decides a request whose key is taken: replay the stored outcome, report it in progress, or
/// refuse a different request that reuses the key.
pub fn decide(existing: ExistingKey, request_hash: &str) -> Result<Outcome, ApiError> {
    if existing.request_hash != request_hash {
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

/// Reads the row a won reservation returned: a fresh attempt, or the takeover of a `CHARGING`
/// key whose charge it resumes.
pub fn acquired(
    attempt: i32,
    state: &str,
    gateway_key: Option<String>,
    pending_order: Option<String>,
) -> Result<Reservation, ApiError> {
    let charging = match (state, gateway_key, pending_order) {
        (STATE_CHARGING, Some(gateway_key), Some(pending)) => Some(Box::new(Charging {
            gateway_key,
            pending: PendingOrder::from_json(&pending)?,
        })),
        (STATE_CHARGING, ..) => {
            return Err(ApiError::Internal(anyhow::anyhow!(
                "CHARGING key without its charge"
            )));
        }
        _ => None,
    };
    Ok(Reservation::Acquired { attempt, charging })
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

    #[test]
    fn other_body_is_refused_whatever_the_state() {
        for state in [STATE_IN_PROGRESS, STATE_COMPLETED] {
            let err = decide(row("a", state, Some(201)), "b").unwrap_err();
            assert!(matches!(err, ApiError::IdempotencyKeyReused), "{state}");
        }
    }

    #[test]
    fn completed_is_replayed_verbatim() {
        let out = decide(row("a", STATE_COMPLETED, Some(402)), "a").unwrap();
        assert_eq!(
            (out.status, out.body.as_str(), out.replayed),
            (402, "{\"x\":1}", true)
        );
    }

    #[test]
    fn running_is_in_progress() {
        let err = decide(row("a", STATE_IN_PROGRESS, None), "a").unwrap_err();
        assert!(matches!(err, ApiError::RequestInProgress));
    }

    #[test]
    fn charging_is_in_progress_for_a_concurrent_retry() {
        let err = decide(row("a", STATE_CHARGING, None), "a").unwrap_err();
        assert!(matches!(err, ApiError::RequestInProgress));
    }

    #[test]
    fn a_charging_takeover_resumes_its_charge() {
        let fresh = acquired(1, STATE_IN_PROGRESS, None, None).unwrap();
        assert!(matches!(
            fresh,
            Reservation::Acquired {
                attempt: 1,
                charging: None
            }
        ));
        assert!(acquired(2, STATE_CHARGING, Some("k".into()), None).is_err());
        assert!(acquired(2, STATE_CHARGING, Some("k".into()), Some("{".into())).is_err());
    }
}
