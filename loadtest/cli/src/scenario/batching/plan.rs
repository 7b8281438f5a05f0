//! The batching scenario's plan: its grid of runs and the settings every run shares, read by the
//! runner (`mod.rs`) and by the rows computed from the runs (`rows.rs`).

use lab_results::{MockLatencies, Shedding};

use super::fsync::FsyncFigure;
use crate::lab_args::{Durability, LabArgs};
use crate::scenario::Variant;

pub const BATCH_MAX: [usize; 5] = [1, 2, 10, 100, 1000];
pub const RTT_MS: [f64; 2] = [0.0, 6.5];
/// Closed-model clients: enough to keep the API saturated at every cell (well above what the
/// pool and the CPU can serve at once), and below blocking-api's 200 threads.
pub const CLIENTS: u64 = 128;
/// Seconds measured per run, before `--duration-scale`.
pub const CELL_S: u64 = 12;
/// `PERSIST_BATCH_WAIT_MS` of every batching run.
pub const WAIT_MS: u64 = 5;
/// `DB_POOL_SIZE` of every run.
pub const POOL: u32 = 10;
/// Warm-up of each run, seconds at 10 orders/s (before `--duration-scale`).
pub const WARMUP_S: f64 = 3.0;
/// PostgreSQL's `commit_siblings` for the commit-delay runs (its default).
pub const COMMIT_SIBLINGS: u32 = 5;
/// Orders/s of the unsaturated runs (open model) that show what batching costs one order when the
/// API is not queueing: batch 1 against [`LOW_RATE_BATCH`].
pub const LOW_RATE: u32 = 50;
pub const LOW_RATE_BATCH: usize = 100;

/// One run of the scenario: its lab arguments, PostgreSQL's `commit_delay` (µs) during it, and the
/// open model's rate for the unsaturated runs (`None`: the closed model).
#[derive(Debug, Clone)]
pub struct Cell {
    pub variant: Variant,
    pub commit_delay_us: Option<u64>,
    pub open_rate: Option<u32>,
}

/// The runs: every batch size × RTT for each API (APIs interleaved, so drift hits both alike);
/// then batch 1 with `commit_delay` for each API; then, unsaturated ([`LOW_RATE`]/s), batch 1 and
/// [`LOW_RATE_BATCH`] for each API.
pub fn cells(base: &LabArgs, commit_delay_us: u64) -> Vec<Cell> {
    let mut out = Vec::new();
    let cell = |api: &str, batch: usize, rtt: f64, delay: Option<u64>, rate: Option<u32>| {
        let mut args = base.clone();
        args.harness.apis = vec![api.to_owned()];
        args.load.profile = match rate {
            Some(rate) => format!("constant-{rate}-{CELL_S}"),
            None => format!("closed-{CLIENTS}-for-{CELL_S}"),
        };
        args.latency = MockLatencies {
            seller: 0,
            risk: 0,
            payment: 0,
        };
        args.harness.db_pool_size = POOL;
        args.harness.db_rtt_ms = rtt;
        args.harness.db_durability = Durability::On;
        args.shedding = Shedding::Off;
        args.persist_batch_max = batch;
        args.persist_batch_wait_ms = WAIT_MS;
        args.warmup_s = WARMUP_S;
        let mut slug = format!("{api}-batch{batch}-rtt{rtt}");
        if delay.is_some() {
            slug.push_str("-commit-delay");
        }
        if let Some(rate) = rate {
            slug.push_str(&format!("-open{rate}"));
        }
        Cell {
            variant: Variant { slug, args },
            commit_delay_us: delay,
            open_rate: rate,
        }
    };
    for rtt in RTT_MS {
        for batch in BATCH_MAX {
            for api in &base.harness.apis {
                out.push(cell(api, batch, rtt, None, None));
            }
        }
    }
    for api in &base.harness.apis {
        out.push(cell(api, 1, 0.0, Some(commit_delay_us), None));
    }
    for batch in [1, LOW_RATE_BATCH] {
        for api in &base.harness.apis {
            out.push(cell(api, batch, 0.0, None, Some(LOW_RATE)));
        }
    }
    out
}

/// PostgreSQL's advice for `commit_delay`: half the flush time of one 8 kB write, from
/// `pg_test_fsync` (1000 µs when it could not be measured).
pub fn commit_delay_us(fsync: Option<&FsyncFigure>) -> u64 {
    fsync.map_or(1000, |f| (f.usecs_per_op / 2.0).round().max(1.0) as u64)
}

/// What the database ran with, as it says itself.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ServerSettings(pub Vec<(String, String)>);
