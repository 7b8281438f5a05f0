//! `loadtest bench`'s results file (`bench.json`): the capacity benchmark.
//!
//! One [`BenchResults`] per invocation: for each API alone in its CPU, a closed loop of clients at
//! each mock latency setting ([`BenchCell`]). A cell keeps the raw counters of its measured window
//! ([`WindowCounts`]: deltas of cumulative counters read at the window's two ends) and the figures
//! derived from them ([`PerOrder`], the memory figures, [`TargetCheck`]s); the derivations are the
//! pure functions below, so a reader can recompute every figure from the counters.
//!
//! Versioned like the results schema: [`BENCH_SCHEMA_VERSION`], changes additive only (new fields
//! `Option` or `#[serde(default)]`), a reader refuses a newer version.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

pub use crate::Pinning;
pub use crate::api::{BUSY_THREADS, IN_FLIGHT};
use crate::{ApiKind, Environment, Limits, MockLatencies};

/// Version of the bench schema. Bumped only for changes an old reader could misread.
pub const BENCH_SCHEMA_VERSION: u32 = 1;

/// The bench's CPU target for reactive-api, µs of API CPU per order (mocks at 0 ms, 1 CPU).
pub const TARGET_REACTIVE_CPU_US: f64 = 250.0;
/// The bench's CPU target for blocking-api, µs of API CPU per order (mocks at 0 ms, 1 CPU).
pub const TARGET_BLOCKING_CPU_US: f64 = 400.0;
/// The bench's target: SQL statements per order on the normal path.
pub const TARGET_STATEMENTS: f64 = 3.0;
/// The bench's memory target for reactive-api: RSS per in-flight order, bytes (32 KiB).
pub const TARGET_REACTIVE_RSS_PER_IN_FLIGHT: f64 = 32.0 * 1024.0;
/// A slope of RSS against busy work is only computed across at least this much difference in
/// busy threads / in-flight orders (below it, allocator noise dominates).
pub const MIN_BUSY_SPREAD: f64 = 50.0;

/// Everything one `loadtest bench` measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResults {
    /// Always [`BENCH_SCHEMA_VERSION`] when written by this version.
    pub schema_version: u32,
    /// UTC start of the bench, RFC 3339.
    pub started_at: String,
    /// The command line that ran it.
    pub command: String,
    /// Machine and build.
    pub environment: Environment,
    pub settings: BenchSettings,
    /// One per API per mock setting, in the order run.
    pub cells: Vec<BenchCell>,
    /// RSS against busy work, per API, across its cells (see [`memory_slope`]).
    #[serde(default)]
    pub memory_slopes: Vec<MemorySlope>,
    /// The bench's targets against these figures (see [`targets`]).
    #[serde(default)]
    pub targets: Vec<TargetCheck>,
    /// Caveats worth printing (contention, counters that could not be read…).
    #[serde(default)]
    pub notes: Vec<String>,
    /// `--instructions`: how the instruction windows ran (`None` for a CPU-time bench).
    #[serde(default)]
    pub instruction_settings: Option<crate::cost::InstructionSettings>,
    /// `--instructions`: one window of a fixed number of orders per API under callgrind.
    #[serde(default)]
    pub instructions: Vec<crate::cost::InstructionCell>,
}

/// How the bench ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchSettings {
    /// Closed-loop load before each measured window, seconds (not measured).
    pub warmup_s: f64,
    /// Length of each measured window, seconds.
    pub seconds: f64,
    /// The lab PostgreSQL's `fsync`/`synchronous_commit`/`full_page_writes` (`on`/`off`), or
    /// `external` for `--database-url`.
    pub db_durability: String,
    /// Round-trip time the latency proxy added between the API and PostgreSQL, ms (0: no proxy).
    pub db_rtt_ms: f64,
    /// Settings every API got (env var → value); `BLOCKING_THREADS` is blocking-api's only.
    pub api_settings: BTreeMap<String, String>,
    /// CPU affinity: `None` when nothing was pinned.
    pub pinning: Option<Pinning>,
}

/// One API at one mock setting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchCell {
    /// `blocking-api` or `reactive-api`.
    pub api: String,
    /// Mock setting name: `0ms` or `seed`.
    pub mocks: String,
    pub mock_latency_ms: MockLatencies,
    /// Closed-loop clients (each sends its next order when the previous one returns).
    pub clients: u64,
    /// Limits on the API process, as read back from the kernel.
    pub limits: Limits,
    /// Raw counters over the measured window.
    pub window: WindowCounts,
    /// Derived from `window` ([`PerOrder::from_window`]); `None` when no order completed.
    pub per_order: Option<PerOrder>,
    /// Orders persisted per second of the window.
    pub orders_per_s: f64,
    /// API CPU time ÷ window length: the share of its one CPU the API used (1.0 = saturated).
    pub api_cpu_share: f64,
    pub memory: MemoryFigures,
    /// pg_stat_statements over the window, by calls (the bench's own queries left out).
    #[serde(default)]
    pub statements: Vec<StatementCalls>,
    /// The statements an order runs: [`order_path_statements`] of `statements`. Free of the
    /// window's edges, which shift `window.sql_statements ÷ orders` by the statements of the orders
    /// in flight at either end.
    #[serde(default)]
    pub order_path_statements: Option<u64>,
    /// What the generator's clients got over the whole loop (warm-up and drain included), by
    /// outcome kind (`201`, `timeout`, an API error code…).
    #[serde(default)]
    pub outcomes: BTreeMap<String, u64>,
    /// Why this cell's rate is not the API's CPU capacity, when it is not (see [`bound_reason`]).
    pub bound: Option<String>,
}

/// Deltas of cumulative counters between the window's start and end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowCounts {
    /// Window length, seconds (monotonic clock).
    pub seconds: f64,
    /// Orders persisted (`count(*) FROM orders` at both ends).
    pub orders: u64,
    /// API CPU in user and kernel mode, seconds (`/proc/PID/stat` utime, stime).
    pub api_user_s: f64,
    pub api_system_s: f64,
    /// Time the API's threads were runnable but waiting for a CPU, seconds (schedstat run_delay):
    /// with the API pinned alone on its CPU, other tenants of that CPU.
    #[serde(default)]
    pub api_cpu_wait_s: Option<f64>,
    /// Context switches of the API's threads (summed over `/proc/PID/task/*/status`; a thread
    /// that exited during the window takes its count with it).
    pub api_voluntary_switches: u64,
    pub api_involuntary_switches: u64,
    /// Statements PostgreSQL executed for the APIs (pg_stat_statements calls, this database,
    /// the bench's own left out); `None` when pg_stat_statements is not available.
    pub sql_statements: Option<u64>,
    /// Requests mock-deps received (seller + risk + payment + payment look-ups).
    pub http_calls: Option<u64>,
    /// CPU of each harness part, seconds; `None` when not measured (not started by the bench).
    /// The generator is the `loadtest` process: the closed loop plus the bench's own sampling.
    pub generator_cpu_s: Option<f64>,
    pub mock_deps_cpu_s: Option<f64>,
    /// The postmaster and every backend (exited ones through the postmaster's cutime).
    pub postgres_cpu_s: Option<f64>,
    pub latency_proxy_cpu_s: Option<f64>,
    /// Busy CPU time of the whole machine, all CPUs (`/proc/stat`), seconds.
    pub machine_busy_s: Option<f64>,
    /// PostgreSQL's WAL, commits and buffer counters over the window (`None`: not read). Its
    /// backends publish their counts at most once a second, so each end may miss up to a second
    /// of them; under a steady load the two ends' shortfalls about cancel.
    #[serde(default)]
    pub postgres: Option<crate::cost::PgCounters>,
}

impl WindowCounts {
    /// API CPU, user + system, seconds.
    pub fn api_cpu_s(&self) -> f64 {
        self.api_user_s + self.api_system_s
    }

    /// Orders per second of the window (0 for an empty window).
    pub fn orders_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.orders as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// API CPU ÷ window length.
    pub fn api_cpu_share(&self) -> f64 {
        if self.seconds > 0.0 {
            self.api_cpu_s() / self.seconds
        } else {
            0.0
        }
    }

    /// Harness CPU (every part measured), seconds.
    pub fn harness_cpu_s(&self) -> f64 {
        [
            self.generator_cpu_s,
            self.mock_deps_cpu_s,
            self.postgres_cpu_s,
            self.latency_proxy_cpu_s,
        ]
        .iter()
        .flatten()
        .sum()
    }

    /// Busy CPU of the machine not accounted to the API or a measured harness part: other
    /// tenants, the kernel's own threads, and any harness part that was not measured.
    pub fn other_cpu_s(&self) -> Option<f64> {
        self.machine_busy_s
            .map(|m| (m - self.api_cpu_s() - self.harness_cpu_s()).max(0.0))
    }
}

/// The window's counters divided by its orders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerOrder {
    /// API CPU µs per order, user + system, and each.
    pub api_cpu_us: f64,
    pub api_user_us: f64,
    pub api_system_us: f64,
    /// API context switches per order, voluntary + involuntary, and each.
    pub context_switches: f64,
    pub voluntary_switches: f64,
    pub involuntary_switches: f64,
    pub sql_statements: Option<f64>,
    pub http_calls: Option<f64>,
    pub generator_cpu_us: Option<f64>,
    pub mock_deps_cpu_us: Option<f64>,
    pub postgres_cpu_us: Option<f64>,
    pub latency_proxy_cpu_us: Option<f64>,
    /// Every measured harness part together.
    pub harness_cpu_us: f64,
    /// [`WindowCounts::other_cpu_s`] per order.
    pub other_cpu_us: Option<f64>,
    /// [`WindowCounts::postgres`] per order.
    #[serde(default)]
    pub postgres: Option<crate::cost::PgPerOrder>,
}

impl PerOrder {
    /// `None` when the window has no order.
    pub fn from_window(w: &WindowCounts) -> Option<PerOrder> {
        if w.orders == 0 {
            return None;
        }
        let n = w.orders as f64;
        let us = |s: f64| s * 1e6 / n;
        let each = |c: u64| c as f64 / n;
        Some(PerOrder {
            api_cpu_us: us(w.api_cpu_s()),
            api_user_us: us(w.api_user_s),
            api_system_us: us(w.api_system_s),
            context_switches: each(w.api_voluntary_switches + w.api_involuntary_switches),
            voluntary_switches: each(w.api_voluntary_switches),
            involuntary_switches: each(w.api_involuntary_switches),
            sql_statements: w.sql_statements.map(each),
            http_calls: w.http_calls.map(each),
            generator_cpu_us: w.generator_cpu_s.map(us),
            mock_deps_cpu_us: w.mock_deps_cpu_s.map(us),
            postgres_cpu_us: w.postgres_cpu_s.map(us),
            latency_proxy_cpu_us: w.latency_proxy_cpu_s.map(us),
            harness_cpu_us: us(w.harness_cpu_s()),
            other_cpu_us: w.other_cpu_s().map(us),
            postgres: w.postgres.and_then(|p| p.per_order(w.orders)),
        })
    }
}

/// Memory of the API process in one cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryFigures {
    /// RSS once the API answered `/ready`, before any order (bytes).
    pub idle_rss_bytes: u64,
    /// Peak RSS of the process (`VmHWM`) at the window's end: its lifetime, warm-up included.
    pub peak_rss_bytes: u64,
    /// Mean RSS over the window's samples.
    pub window_mean_rss_bytes: u64,
    /// Mean thread count over the window's samples.
    pub window_mean_threads: f64,
    /// What "busy" counts for this API: `busy blocking threads` (`blocking_pool_busy`) or
    /// `orders in flight` (`http_requests_in_flight`), from its `/metrics`.
    pub busy_kind: String,
    /// Mean of that gauge over the window's samples; `None` when `/metrics` did not say.
    pub window_mean_busy: Option<f64>,
    /// (mean RSS − idle RSS) ÷ mean busy: an upper bound on what one busy unit costs, since the
    /// growth also holds pool connections, buffers and allocator arenas made at first use.
    pub rss_growth_per_busy_bytes: Option<f64>,
    /// Samples taken in the window.
    pub samples: u64,
    /// Thread stacks at the window's end (anonymous mappings of Rust's default 2 MiB stack in
    /// `/proc/PID/smaps`) and the RSS they hold together: what a thread's stack really costs.
    #[serde(default)]
    pub thread_stacks: Option<u64>,
    #[serde(default)]
    pub thread_stack_rss_bytes: Option<u64>,
}

impl MemoryFigures {
    /// [`MemoryFigures::rss_growth_per_busy_bytes`] from the other fields; `None` with less
    /// than one busy unit on average.
    pub fn growth_per_busy(&self) -> Option<f64> {
        let busy = self.window_mean_busy.filter(|b| *b >= 1.0)?;
        Some((self.window_mean_rss_bytes as f64 - self.idle_rss_bytes as f64) / busy)
    }
}

/// RSS against busy work for one API, between two of its cells: the slope cancels what every
/// cell pays alike (binary, runtime, pool connections once opened).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemorySlope {
    pub api: String,
    pub busy_kind: String,
    /// Mock settings of the cell with less and more busy work.
    pub from_mocks: String,
    pub to_mocks: String,
    pub from_busy: f64,
    pub to_busy: f64,
    pub from_rss_bytes: u64,
    pub to_rss_bytes: u64,
    /// ΔRSS ÷ Δbusy, bytes.
    pub bytes_per_busy: f64,
}

/// One unit of a busy kind, for names: `busy thread`, `in-flight order`.
pub fn busy_unit(kind: &str) -> &str {
    match kind {
        BUSY_THREADS => "busy thread",
        IN_FLIGHT => "in-flight order",
        other => other,
    }
}

/// The slope between two cells of the same API, from the one with less busy work to the one
/// with more; `None` when either lacks a busy figure or they differ by less than
/// [`MIN_BUSY_SPREAD`].
pub fn memory_slope(a: &BenchCell, b: &BenchCell) -> Option<MemorySlope> {
    if a.api != b.api {
        return None;
    }
    let (ba, bb) = (a.memory.window_mean_busy?, b.memory.window_mean_busy?);
    let (lo, hi, lo_busy, hi_busy) = if ba <= bb {
        (a, b, ba, bb)
    } else {
        (b, a, bb, ba)
    };
    if hi_busy - lo_busy < MIN_BUSY_SPREAD {
        return None;
    }
    let (r0, r1) = (
        lo.memory.window_mean_rss_bytes,
        hi.memory.window_mean_rss_bytes,
    );
    Some(MemorySlope {
        api: a.api.clone(),
        busy_kind: a.memory.busy_kind.clone(),
        from_mocks: lo.mocks.clone(),
        to_mocks: hi.mocks.clone(),
        from_busy: lo_busy,
        to_busy: hi_busy,
        from_rss_bytes: r0,
        to_rss_bytes: r1,
        bytes_per_busy: (r1 as f64 - r0 as f64) / (hi_busy - lo_busy),
    })
}

/// Every API's slope between its least and its most busy cell.
pub fn memory_slopes(cells: &[BenchCell]) -> Vec<MemorySlope> {
    let mut apis: Vec<&str> = cells.iter().map(|c| c.api.as_str()).collect();
    apis.dedup();
    apis.iter()
        .filter_map(|api| {
            let mine: Vec<&BenchCell> = cells
                .iter()
                .filter(|c| c.api == *api && c.memory.window_mean_busy.is_some())
                .collect();
            let busy = |c: &&BenchCell| c.memory.window_mean_busy.unwrap_or(0.0);
            let lo = mine.iter().min_by(|a, b| busy(a).total_cmp(&busy(b)))?;
            let hi = mine.iter().max_by(|a, b| busy(a).total_cmp(&busy(b)))?;
            memory_slope(lo, hi)
        })
        .collect()
}

/// One pg_stat_statements entry over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementCalls {
    /// The normalised statement text, whitespace collapsed.
    pub query: String,
    pub calls: u64,
    /// Calls ÷ orders of the window.
    pub per_order: f64,
    /// Mean execution time, ms.
    pub mean_ms: f64,
}

/// The statements one order runs: for each statement, its calls per order rounded to a whole
/// number, summed (a statement an order runs once counts 1 whether the window caught 0.98 or 1.02
/// of it per order; the recovery loop's rare statements count 0). `None` without statements.
pub fn order_path_statements(statements: &[StatementCalls]) -> Option<u64> {
    if statements.is_empty() {
        return None;
    }
    Some(
        statements
            .iter()
            .map(|s| s.per_order.round().max(0.0) as u64)
            .sum(),
    )
}

/// What [`bound_reason`] weighs besides the window's counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoundContext {
    /// Closed-loop clients.
    pub clients: u64,
    /// Mean of the API's busy gauge over the window.
    pub busy: Option<f64>,
    /// blocking-api's BLOCKING_THREADS (`None` for reactive-api).
    pub pool: Option<u64>,
    /// CPUs of the machine.
    pub cores: f64,
    /// CPUs the harness was pinned to (`None`: not pinned, it shares all of them).
    pub harness_cpus: Option<f64>,
}

/// Why a cell's rate is not the API's CPU capacity: the API used less than 90 % of its CPU.
/// Names the likely bound, first that applies: blocking-api's thread pool (its mean busy threads
/// ≥ 90 % of BLOCKING_THREADS), the harness's own CPUs (pinned, and ≥ 85 % busy with the harness), the
/// whole machine (≥ 90 % busy: harness and other tenants), else the clients and the time an order
/// spends outside the API. `None` when the API was saturated.
pub fn bound_reason(w: &WindowCounts, ctx: &BoundContext) -> Option<String> {
    let share = w.api_cpu_share();
    if share >= 0.9 || w.seconds <= 0.0 {
        return None;
    }
    let per_s = |x: f64| x / w.seconds;
    let machine = w.machine_busy_s.map(per_s);
    let harness = per_s(w.harness_cpu_s());
    let pool_full = match (ctx.busy, ctx.pool) {
        // A client's turnaround between two orders leaves a thread idle for a moment.
        (Some(b), Some(p)) => b >= 0.9 * p as f64,
        _ => false,
    };
    let why = if pool_full {
        format!(
            "its {} blocking threads were all busy: the thread pool and the dependencies' latency \
             bound the rate",
            ctx.pool.unwrap_or(0)
        )
    } else if let Some(h) = ctx.harness_cpus.filter(|h| harness >= 0.85 * h) {
        format!(
            "the harness (PostgreSQL, mock-deps, generator) used {harness:.2} of its {h} CPU(s): it \
             bounds the rate"
        )
    } else if machine.is_some_and(|m| m >= 0.9 * ctx.cores) {
        format!(
            "the machine was busy ({:.1} of its {} CPUs): the harness and other tenants bound the \
             rate",
            machine.unwrap_or(0.0),
            ctx.cores
        )
    } else {
        format!(
            "{} clients and the time an order waits outside the API bound the rate",
            ctx.clients
        )
    };
    Some(format!("API at {:.0} % of its CPU: {why}", share * 100.0))
}

/// One of the bench's targets against a measured figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetCheck {
    /// What is checked, e.g. `reactive-api CPU per order (mocks 0 ms)`.
    pub name: String,
    /// The measured value (`None`: not measured in this bench).
    pub measured: Option<f64>,
    /// The limit it must not exceed (`None`: no number set, reported only).
    pub limit: Option<f64>,
    /// `µs`, `statements`, `bytes`.
    pub unit: String,
    /// `None` when either side is missing.
    pub met: Option<bool>,
}

fn check(name: String, measured: Option<f64>, limit: Option<f64>, unit: &str) -> TargetCheck {
    let met = match (measured, limit) {
        (Some(m), Some(l)) => Some(m <= l),
        _ => None,
    };
    TargetCheck {
        name,
        measured,
        limit,
        unit: unit.to_owned(),
        met,
    }
}

/// The bench's targets against the cells: CPU per order at 0 ms (reactive ≤ 250 µs, blocking ≤
/// 400 µs), statements per order in every cell (≤ 3, [`BenchCell::order_path_statements`]), reactive RSS per in-flight order (≤ 32 KiB)
/// and blocking RSS per busy thread (reported, no number set), from the memory slopes.
pub fn targets(cells: &[BenchCell], slopes: &[MemorySlope]) -> Vec<TargetCheck> {
    let mut out = Vec::new();
    for (kind, limit) in [
        (ApiKind::Reactive, TARGET_REACTIVE_CPU_US),
        (ApiKind::Blocking, TARGET_BLOCKING_CPU_US),
    ] {
        let api = kind.name();
        for c in cells.iter().filter(|c| c.api == api && c.mocks == "0ms") {
            let m = c.per_order.as_ref().map(|p| p.api_cpu_us);
            out.push(check(
                format!("{api} CPU per order (mocks 0 ms)"),
                m,
                Some(limit),
                "µs",
            ));
        }
    }
    for c in cells {
        let m = c.order_path_statements.map(|n| n as f64);
        out.push(check(
            format!("{} SQL statements per order (mocks {})", c.api, c.mocks),
            m,
            Some(TARGET_STATEMENTS),
            "statements",
        ));
    }
    for s in slopes {
        let limit = (ApiKind::of(&s.api) == Some(ApiKind::Reactive))
            .then_some(TARGET_REACTIVE_RSS_PER_IN_FLIGHT);
        out.push(check(
            format!(
                "{} RSS per {} (slope {} → {})",
                s.api,
                busy_unit(&s.busy_kind),
                s.from_mocks,
                s.to_mocks
            ),
            Some(s.bytes_per_busy),
            limit,
            "bytes",
        ));
    }
    out
}

impl BenchResults {
    /// Reads a bench file, refusing a newer schema it would misread.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        crate::versioned::load(path.as_ref())
    }

    /// Writes the results as pretty JSON (creating parent folders).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        crate::versioned::save(self, path.as_ref())
    }

    /// The cell of `api` at mock setting `mocks`.
    pub fn cell(&self, api: &str, mocks: &str) -> Option<&BenchCell> {
        self.cells.iter().find(|c| c.api == api && c.mocks == mocks)
    }
}

#[cfg(test)]
#[path = "bench_tests.rs"]
mod tests;

impl crate::versioned::Versioned for BenchResults {
    const WHAT: &'static str = "bench file";
    const READS_UP_TO: u32 = BENCH_SCHEMA_VERSION;

    fn schema_version(&self) -> u32 {
        self.schema_version
    }
}
