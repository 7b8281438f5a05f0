//! When a pooled database connection must be tested before it is lent again — the same rule for
//! both APIs' pools (reactive-api's `connections.rs` on deadpool, blocking-api's on r2d2).
//!
//! Neither pool tests a connection on every checkout or return: that is one more round trip per
//! statement, and at 6.5 ms from the database it doubled how long each statement kept its
//! connection (sqlx's own pool did it, which is why reactive-api left it). But a connection whose
//! server is gone (PostgreSQL restarted, a failover, a reset socket) must not be lent again and
//! again: diesel never reports such a connection broken, so blocking-api's pool kept every dead
//! one and failed each order on it, for ever.
//!
//! The rule: every failure that may have lost its connection is counted, process-wide
//! ([`note_possible_loss`], from each API's `db_error`). Each pooled connection remembers the
//! count at which it was last known good ([`mark`]); one that has not been tested since the latest
//! failure ([`needs_test`]) is pinged when it is next taken, and replaced if that fails. After a
//! failure each pooled connection pays one round trip, once; the dead ones fail no order. The
//! count is process-wide: a failure in one pool makes another pool's connections test themselves
//! too, which costs a ping and nothing else.

use std::sync::atomic::{AtomicU64, Ordering};

static LOST: AtomicU64 = AtomicU64::new(0);

/// A failure that may have lost its connection happened.
pub fn note_possible_loss() {
    LOST.fetch_add(1, Ordering::AcqRel);
}

/// What a connection known good now remembers (read before testing it, so that a failure
/// during the test is not forgotten).
pub fn mark() -> u64 {
    LOST.load(Ordering::Acquire)
}

/// Whether a connection known good at `mark` must be tested before it is lent.
pub fn needs_test(mark: u64) -> bool {
    LOST.load(Ordering::Acquire) != mark
}

/// Whether a SQLSTATE may come with a lost connection: a connection exception (class 08), or the
/// server shutting down or not yet accepting sessions (57P01–57P03). A statement or lock timeout
/// leaves its connection usable.
pub fn sqlstate_may_lose(code: &str) -> bool {
    code.starts_with("08") || code.starts_with("57P0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_is_tested_once_after_each_failure() {
        let good = mark();
        assert!(!needs_test(good));
        note_possible_loss();
        assert!(needs_test(good));
        let retested = mark();
        assert!(!needs_test(retested));
    }

    #[test]
    fn timeouts_do_not_lose_connections_and_shutdowns_may() {
        assert!(sqlstate_may_lose("57P01"));
        assert!(sqlstate_may_lose("08006"));
        assert!(!sqlstate_may_lose("57014"));
        assert!(!sqlstate_may_lose("55P03"));
    }
}
