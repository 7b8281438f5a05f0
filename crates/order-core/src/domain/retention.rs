//! What the retention sweep keeps and drops, for both APIs' sweeps (each API's `retention.rs`,
//! run after every recovery pass).
//!
//! - A completed key whose order exists keeps its row for ever — its request hash, state, status
//!   and order id: a replay of it must never charge again — and, for `KEY_RETENTION_DAYS` (30),
//!   its stored answer, the order document. After that the sweep drops the stored copy
//!   (`sql::EXPIRE_KEY_RESPONSES`): a replay, and `GET /orders/{id}`, are answered from the
//!   order's own rows, the same bytes (`sql::FIND_KEY`, `sql::FIND_ORDER`). What remains per key is
//!   the row without the document (about a fifth of it).
//! - A key completed without an order (402 `payment_declined`, 422 `risk_rejected` or
//!   `order_voided`) keeps its row and its short error body: both are what a replay answers, and
//!   nothing else holds them.
//! - A sent outbox event is deleted `OUTBOX_RETENTION_HOURS` (24) after it was sent
//!   (`sql::DELETE_SENT_OUTBOX`): JetStream holds it, and its duplicate window is minutes.
//!
//! Each statement takes at most [`SWEEP_BATCH`] rows (`FOR UPDATE SKIP LOCKED`, so a row held by
//! a request is left for later, and no lock outlives a short statement), and a pass runs at most
//! [`SWEEP_BATCHES_PER_PASS`] of them per kind: a backlog of expired rows (the first start after
//! an upgrade) is worked off over several passes instead of in one long one. A failure ends the
//! pass; the next recovery pass (`RECONCILE_INTERVAL_MS` later) tries again, so a database that is
//! down costs one failed statement per pass, nothing spins.

/// Rows one sweep statement touches at most.
pub const SWEEP_BATCH: i64 = 1000;
/// Sweep statements of one kind per pass at most.
pub const SWEEP_BATCHES_PER_PASS: usize = 10;

/// What a sweep statement works on: its metric label and the settings that bound its age.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swept {
    /// The stored order documents of completed keys.
    KeyResponses,
    /// Sent outbox events.
    OutboxEvents,
}

impl Swept {
    pub const ALL: [Swept; 2] = [Swept::KeyResponses, Swept::OutboxEvents];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Swept::KeyResponses => "key_responses",
            Swept::OutboxEvents => "outbox_events",
        }
    }

    /// The statement that sweeps one batch: `$1` the age in seconds (float8), `$2` the batch.
    pub fn statement(self) -> &'static str {
        match self {
            Swept::KeyResponses => crate::domain::sql::EXPIRE_KEY_RESPONSES,
            Swept::OutboxEvents => crate::domain::sql::DELETE_SENT_OUTBOX,
        }
    }

    /// How old a row must be to be swept (`None`: this kind is kept for ever).
    pub fn retention(
        self,
        settings: &crate::plumbing::settings::CommonSettings,
    ) -> Option<std::time::Duration> {
        match self {
            Swept::KeyResponses => settings.key_retention(),
            Swept::OutboxEvents => settings.events.outbox_retention(),
        }
    }
}

/// Whether a pass sweeps another batch: the last one was full, and the pass has batches left.
pub fn more(swept_in_batch: i64, batches_done: usize) -> bool {
    swept_in_batch >= SWEEP_BATCH && batches_done < SWEEP_BATCHES_PER_PASS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plumbing::settings::CommonSettings;

    #[test]
    fn zero_keeps_for_ever() {
        let mut s = CommonSettings::new("postgres://x", "http://y");
        assert_eq!(
            Swept::KeyResponses.retention(&s).map(|d| d.as_secs()),
            Some(30 * 86_400)
        );
        assert_eq!(
            Swept::OutboxEvents.retention(&s).map(|d| d.as_secs()),
            Some(24 * 3600)
        );
        s.key_retention_days = 0;
        s.events.outbox_retention_hours = 0;
        assert!(Swept::ALL.iter().all(|k| k.retention(&s).is_none()));
    }

    #[test]
    fn a_pass_is_bounded() {
        assert!(more(SWEEP_BATCH, 1));
        assert!(!more(SWEEP_BATCH - 1, 1));
        assert!(!more(SWEEP_BATCH, SWEEP_BATCHES_PER_PASS));
    }
}
