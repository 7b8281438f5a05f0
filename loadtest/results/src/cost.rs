//! Cost per order that two machines agree on (`loadtest bench --instructions`): instructions the
//! API executes per order, counted by valgrind, and what PostgreSQL writes and reads per order,
//! from its own counters. Neither depends on the machine's speed or on its other tenants, so a
//! change in them is a change in the code, and the bench can hold them against a committed
//! [`CostBaseline`] (`loadtest/cli/src/bench/cost_gate.rs`).
//!
//! [`PgCounters`] also go into every `loadtest bench` window ([`crate::bench::WindowCounts`]).

use serde::{Deserialize, Serialize};

/// PostgreSQL's cumulative counters at one instant, or their change over a window: `pg_stat_wal`
/// (the whole cluster: WAL is one stream) and `pg_stat_database` of the orders' database.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PgCounters {
    /// WAL records written.
    pub wal_records: u64,
    /// Full-page images among them (a page's first change after a checkpoint).
    pub wal_fpi: u64,
    /// WAL bytes written.
    pub wal_bytes: u64,
    /// WAL flushes to disk (`pg_stat_wal.wal_sync`): commits that waited for their WAL, or the
    /// WAL writer's. Counted where `fsync` is on; 0 without it.
    #[serde(default)]
    pub wal_syncs: u64,
    /// Transactions committed (`xact_commit`; the lab's own statements count a handful).
    pub commits: u64,
    /// Transactions rolled back (`xact_rollback`).
    pub rollbacks: u64,
    /// Pages found in shared buffers (`blks_hit`) and read from the OS (`blks_read`).
    pub blocks_hit: u64,
    pub blocks_read: u64,
}

impl PgCounters {
    /// The change from `self` to `end` (a counter reset in between reads as 0, not negative).
    pub fn delta(&self, end: &PgCounters) -> PgCounters {
        PgCounters {
            wal_records: end.wal_records.saturating_sub(self.wal_records),
            wal_fpi: end.wal_fpi.saturating_sub(self.wal_fpi),
            wal_bytes: end.wal_bytes.saturating_sub(self.wal_bytes),
            wal_syncs: end.wal_syncs.saturating_sub(self.wal_syncs),
            commits: end.commits.saturating_sub(self.commits),
            rollbacks: end.rollbacks.saturating_sub(self.rollbacks),
            blocks_hit: end.blocks_hit.saturating_sub(self.blocks_hit),
            blocks_read: end.blocks_read.saturating_sub(self.blocks_read),
        }
    }

    /// Each counter ÷ `orders`; `None` for no order.
    pub fn per_order(&self, orders: u64) -> Option<PgPerOrder> {
        if orders == 0 {
            return None;
        }
        let each = |c: u64| c as f64 / orders as f64;
        Some(PgPerOrder {
            wal_records: each(self.wal_records),
            wal_fpi: each(self.wal_fpi),
            wal_bytes: each(self.wal_bytes),
            wal_syncs: each(self.wal_syncs),
            commits: each(self.commits),
            rollbacks: each(self.rollbacks),
            blocks_hit: each(self.blocks_hit),
            blocks_read: each(self.blocks_read),
        })
    }
}

/// [`PgCounters`] of a window ÷ its orders.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PgPerOrder {
    pub wal_records: f64,
    pub wal_fpi: f64,
    pub wal_bytes: f64,
    #[serde(default)]
    pub wal_syncs: f64,
    pub commits: f64,
    pub rollbacks: f64,
    pub blocks_hit: f64,
    pub blocks_read: f64,
}

/// How `loadtest bench --instructions` ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstructionSettings {
    /// Orders before the window (not counted): the pools' connections, caches, first pages.
    pub warmup_orders: u64,
    /// Orders in the window.
    pub orders: u64,
    /// Closed-loop clients.
    pub clients: u64,
    /// `valgrind --version`, and the tool (`callgrind`).
    pub valgrind: String,
    /// Whether this machine has hardware instruction counters (`perf stat -e instructions`), and
    /// what perf said when it has not.
    #[serde(default)]
    pub hardware_counters: String,
}

/// One API's instructions and PostgreSQL's counters over a window of a fixed number of orders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstructionCell {
    pub api: String,
    /// Orders persisted in the window (`count(*) FROM orders` at both ends).
    pub orders: u64,
    /// Wall-clock length of the window under valgrind, seconds (not a cost: valgrind is slow).
    pub window_s: f64,
    /// User-space instructions of the whole API process in the window (callgrind's total).
    pub instructions: u64,
    pub instructions_per_order: f64,
    /// The same instructions by where they were executed (each function's own instructions,
    /// grouped by crate or library; the groups add up to the total), largest first.
    pub groups: Vec<CostShare>,
    /// The functions with the most inclusive instructions (their own and their callees'; a
    /// caller and its callee both appear, so these overlap), largest first.
    pub frames: Vec<FrameCost>,
    /// PostgreSQL over the same window; `None` when it could not be read.
    pub postgres: Option<PgCounters>,
    pub postgres_per_order: Option<PgPerOrder>,
}

/// Instructions of one group per order, and its share of the total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostShare {
    pub name: String,
    pub per_order: f64,
    pub share: f64,
}

/// One function's instructions per order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameCost {
    pub name: String,
    /// The part of an order's path it belongs to (its crate, or its shared library).
    pub group: String,
    pub inclusive_per_order: f64,
    pub self_per_order: f64,
}

/// The committed reference (`docs/bench/baseline.json`) the bench's gate holds a run against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostBaseline {
    /// Why these are the figures (a new baseline is a deliberate commit that says why).
    pub why: String,
    /// The command that measured them, the commit and the date.
    pub command: String,
    pub commit: String,
    pub measured_at: String,
    pub apis: Vec<BaselineApi>,
}

/// One API's reference figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineApi {
    pub api: String,
    pub instructions_per_order: f64,
    pub wal_bytes_per_order: f64,
}

impl CostBaseline {
    /// The baseline a run's cells make.
    pub fn of(cells: &[InstructionCell], why: &str, command: &str, commit: &str, at: &str) -> Self {
        CostBaseline {
            why: why.to_owned(),
            command: command.to_owned(),
            commit: commit.to_owned(),
            measured_at: at.to_owned(),
            apis: cells
                .iter()
                .map(|c| BaselineApi {
                    api: c.api.clone(),
                    instructions_per_order: c.instructions_per_order,
                    wal_bytes_per_order: c.postgres_per_order.map_or(0.0, |p| p.wal_bytes),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
#[path = "cost_tests.rs"]
mod tests;
