//! What to do when a request's idempotency key is already taken.
//!
//! Reservation is one `INSERT … ON CONFLICT DO UPDATE … WHERE <lease expired and same request>`
//! ([`crate::sql::RESERVE_KEY`]): PostgreSQL serialises concurrent attempts on the primary key, so
//! exactly one wins. A loser reads the row in the same transaction and [`decide`]s.

use crate::error::ApiError;
use crate::order::Outcome;

pub const STATE_IN_PROGRESS: &str = "IN_PROGRESS";
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
    Acquired { attempt: i32 },
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
        (STATE_IN_PROGRESS, ..) => Err(ApiError::RequestInProgress),
        (state, ..) => Err(ApiError::Internal(anyhow::anyhow!(
            "idempotency key in state {state} without a stored response"
        ))),
    }
}

/// How long a reservation stays valid before another attempt may take it over: longer than the
/// slowest a healthy attempt can take (three dependency calls and a few pool waits), so only a
/// crashed attempt is ever taken over.
pub fn lease_seconds(deps_timeout_ms: u64, db_pool_timeout_ms: u64) -> f64 {
    let worst_ms = 3 * deps_timeout_ms + 3 * db_pool_timeout_ms + 10_000;
    worst_ms as f64 / 1000.0
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
    fn lease_outlasts_a_slow_healthy_attempt() {
        assert!(lease_seconds(10_000, 5_000) > 30.0 + 5.0);
    }
}
