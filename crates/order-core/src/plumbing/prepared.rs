//! What two-phase asks of PostgreSQL before the API serves: prepared transactions.
//!
//! `EVENTS_MODE=two-phase` ends every order's transaction with `PREPARE TRANSACTION`
//! (`events::prepare_sql`). A server started with `max_prepared_transactions = 0` (PostgreSQL's
//! default, and that of most managed offerings) refuses every one of them — after the charge,
//! so every order would be charged, answered 503 and left for recovery to settle. Whether the
//! server allows them is one `SHOW` at start-up ([`require`]); the rule itself is a pure
//! function ([`check`]). The setting can only change with a server restart, so asking once is
//! enough.

use anyhow::{Context, bail};
use sqlx::Connection;

use crate::domain::sql;
use crate::plumbing::events_mode::EventsMode;

/// Whether a server whose `max_prepared_transactions` reads `setting` (as `SHOW` prints it) can
/// run `mode`: two-phase needs at least one prepared transaction; the other modes prepare none.
pub fn check(mode: EventsMode, setting: &str) -> anyhow::Result<()> {
    if mode != EventsMode::TwoPhase {
        return Ok(());
    }
    match setting.trim().parse::<u32>() {
        Ok(0) => bail!(
            "EVENTS_MODE=two-phase needs PostgreSQL's max_prepared_transactions above 0, and it \
             is 0: every order's PREPARE TRANSACTION would fail after its charge. Raise \
             max_prepared_transactions (to at least the API's DB_POOL_SIZE; the server must be \
             restarted) or choose another EVENTS_MODE"
        ),
        Ok(_) => Ok(()),
        Err(_) => bail!("PostgreSQL's max_prepared_transactions reads {setting:?}, not a number"),
    }
}

/// At start-up: reads `max_prepared_transactions` from the database at `database_url` and
/// applies [`check`] (two-phase only; the other modes ask nothing).
pub async fn require(
    database_url: &str,
    mode: EventsMode,
    connect_timeout: std::time::Duration,
) -> anyhow::Result<()> {
    if mode != EventsMode::TwoPhase {
        return Ok(());
    }
    let mut conn = crate::plumbing::migrate::connect_within(database_url, connect_timeout)
        .await
        .context("connecting to PostgreSQL to read max_prepared_transactions")?;
    let setting: String = sqlx::query_scalar(sql::MAX_PREPARED_TRANSACTIONS)
        .fetch_one(&mut conn)
        .await
        .context("reading max_prepared_transactions")?;
    conn.close().await.ok();
    check(mode, &setting)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_phase_needs_prepared_transactions() {
        let refused = check(EventsMode::TwoPhase, "0").unwrap_err().to_string();
        assert!(refused.contains("max_prepared_transactions"), "{refused}");
        assert!(check(EventsMode::TwoPhase, "64").is_ok());
        assert!(check(EventsMode::TwoPhase, "off").is_err());
    }

    #[test]
    fn the_other_modes_prepare_nothing() {
        for mode in [EventsMode::Off, EventsMode::AfterCommit, EventsMode::Outbox] {
            assert!(check(mode, "0").is_ok(), "{mode:?}");
        }
    }
}
