//! PostgreSQL's share of an order from its own counters: WAL records, full-page images, bytes and
//! flushes (`pg_stat_wal`, the cluster's one WAL stream), commits and buffer hits and reads
//! (`pg_stat_database`, the orders' database), read at a window's two ends.
//!
//! Backends publish these counters when a transaction ends, but at most once a second, and an
//! idle backend up to 10 s later (PostgreSQL 15's `PGSTAT_IDLE_INTERVAL`); a backend that exits
//! publishes at once. Where a window must be exact, wait [`PUBLISH_DELAY`] before its start and
//! read its end once the API's backends are gone ([`wait_for_backends_gone`]).

use std::time::Duration;

use anyhow::{Context, Result};
use lab_results::cost::PgCounters;

/// Long enough for every idle backend to have published its counters (10 s in PostgreSQL 15).
pub const PUBLISH_DELAY: Duration = Duration::from_millis(10_500);

/// The counters now (the bench's own statement is marked so pg_stat_statements leaves it out).
pub async fn read(conn: &mut sqlx::PgConnection) -> Result<PgCounters> {
    // A fresh snapshot: with stats_fetch_consistency = cache a transaction reuses its first one.
    let sql =
        "SELECT /* loadtest bench */ w.wal_records, w.wal_fpi, w.wal_bytes::bigint, w.wal_sync,
                      d.xact_commit, d.xact_rollback, d.blks_hit, d.blks_read
                 FROM pg_stat_wal w, pg_stat_database d
                WHERE d.datname = current_database()";
    #[allow(clippy::type_complexity)]
    let (records, fpi, bytes, syncs, commits, rollbacks, hit, read): (
        i64,
        i64,
        i64,
        i64,
        i64,
        i64,
        i64,
        i64,
    ) = sqlx::query_as(sql)
        .fetch_one(conn)
        .await
        .context("reading pg_stat_wal and pg_stat_database")?;
    let u = |v: i64| u64::try_from(v).unwrap_or(0);
    Ok(PgCounters {
        wal_records: u(records),
        wal_fpi: u(fpi),
        wal_bytes: u(bytes),
        wal_syncs: u(syncs),
        commits: u(commits),
        rollbacks: u(rollbacks),
        blocks_hit: u(hit),
        blocks_read: u(read),
    })
}

/// Waits until no client session but this one is connected to the database (the API's backends
/// have exited, and so published their counters); `false` after `timeout`.
pub async fn wait_for_backends_gone(conn: &mut sqlx::PgConnection, timeout: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let others: Result<(i64,), _> = sqlx::query_as(
            "SELECT /* loadtest bench */ count(*) FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid()
                AND backend_type = 'client backend'",
        )
        .fetch_one(&mut *conn)
        .await;
        if matches!(others, Ok((0,))) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
