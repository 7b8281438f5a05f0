//! The batching scenario's `scenario.json` as the lab writes it: one row per run with its
//! predicted ceiling, and the machine's flush cost the ceilings assume. The lab computes them
//! (`loadtest`'s batching scenario); its page (`lab_report::scenario::batching`) shows them; the
//! conclusion and chart read back the fields they need ([`crate::scenario::BatchPoint`]).

use serde::Serialize;

/// One row, as in `scenario.json`.
#[derive(Debug, Clone, Serialize)]
pub struct BatchRow {
    pub api: String,
    pub batch_max: usize,
    pub db_rtt_ms: f64,
    /// PostgreSQL's `commit_delay` during the run, µs (`null`: 0, its default).
    pub commit_delay_us: Option<u64>,
    /// `closed` (the saturating clients) or `open` (the unsaturated rate, `open_rate`).
    pub load: &'static str,
    pub open_rate: Option<u32>,
    pub orders_per_s: f64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub commits_per_s: Option<f64>,
    pub wal_syncs_per_s: Option<f64>,
    /// Mean orders per persist batch (`null` without a writer).
    pub mean_batch: Option<f64>,
    pub api_cpu_ms_per_order: Option<f64>,
    pub pg_cpu_ms_per_order: Option<f64>,
    /// API CPU over the run, share of its 1-CPU quota.
    pub api_cpu_share: Option<f64>,
    /// The whole machine's CPU over the run, share of all its cores.
    pub machine_cpu_share: Option<f64>,
    pub errors: u64,
    pub predicted: Ceiling,
    /// Why the row is more than 15 % off its ceiling.
    pub reason: Option<String>,
    /// The original's adds/s at as many updates per transaction.
    pub original_adds_per_s: Option<f64>,
}

/// The predicted ceiling of one row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ceiling {
    pub orders_per_s: f64,
    /// `pool` or `writer`: which bound is lower.
    pub bound: &'static str,
    /// The arithmetic, for the table.
    pub formula: String,
}

/// One 8 kB write and its flush, as `pg_test_fsync` timed it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FsyncFigure {
    /// The sync method (`fdatasync`: Linux's default `wal_sync_method`).
    pub method: String,
    pub ops_per_s: f64,
    pub usecs_per_op: f64,
    /// Where it wrote, and that file system's type.
    pub dir: String,
    pub fs_type: String,
    /// `pg_test_fsync`'s lines for one 8 kB write, as printed.
    pub excerpt: String,
}
