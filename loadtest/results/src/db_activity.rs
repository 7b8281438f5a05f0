//! What PostgreSQL itself counted during the measured run (experiment E, group commit): its
//! commits and WAL flushes, and — from the API's `/metrics` — how the API batched its persists.

use serde::{Deserialize, Serialize};

/// Counter differences over the measured run: read from PostgreSQL just before the first request
/// and again once the API has stopped (its sessions publish their last statistics as they end),
/// divided by `window_s`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbActivity {
    /// The measured run's length, s (first request to last response): the rates' denominator.
    pub window_s: f64,
    /// `pg_stat_database.xact_commit` of the API's database: transactions committed.
    pub xact_commit: f64,
    /// `pg_stat_wal.wal_sync` (whole cluster): WAL flushes to disk (`fdatasync` etc.). Fewer than
    /// commits when one flush covered several (the server's own group commit, or batching).
    pub wal_sync: f64,
    /// `pg_stat_wal.wal_write` (whole cluster): WAL buffer writes.
    pub wal_write: f64,
    /// The API's persist batches (`persist_batch_orders_count`); `None` without a batch writer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persist_batches: Option<f64>,
    /// Orders in those batches (`persist_batch_orders_sum`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persist_batch_orders: Option<f64>,
    /// Batches the database refused and that were written one by one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persist_batch_fallbacks: Option<f64>,
    /// pg_stat_statements over the run (the API's database): the batch writer's statements
    /// (`WITH b AS (…`) and all the others; `None` without the extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statements: Option<StatementTimes>,
    /// How it was measured, or what could not be.
    pub detail: String,
}

/// Calls and PostgreSQL's execution time (parse, plan and commit excluded) of two groups of
/// statements over the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementTimes {
    pub batch_calls: f64,
    pub batch_exec_ms: f64,
    pub other_calls: f64,
    pub other_exec_ms: f64,
}

impl StatementTimes {
    /// Mean execution of a batch writer's statement, ms.
    pub fn mean_batch_ms(&self) -> Option<f64> {
        (self.batch_calls > 0.0).then(|| self.batch_exec_ms / self.batch_calls)
    }

    /// Mean execution of every other statement, ms.
    pub fn mean_other_ms(&self) -> Option<f64> {
        (self.other_calls > 0.0).then(|| self.other_exec_ms / self.other_calls)
    }
}

impl DbActivity {
    /// Commits per second over the run.
    pub fn commits_per_s(&self) -> f64 {
        self.xact_commit / self.window_s
    }

    /// WAL flushes per second over the run.
    pub fn wal_syncs_per_s(&self) -> f64 {
        self.wal_sync / self.window_s
    }

    /// Mean orders per persist batch, when the API batched.
    pub fn mean_batch(&self) -> Option<f64> {
        match (self.persist_batch_orders, self.persist_batches) {
            (Some(orders), Some(batches)) if batches > 0.0 => Some(orders / batches),
            _ => None,
        }
    }
}
