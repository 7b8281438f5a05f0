//! `loadtest bench`'s results file (`bench.json`): the cost-per-order benchmark.
//!
//! One [`BenchResults`] per invocation: for each API alone in its CPU, a closed loop of clients at
//! each mock latency setting ([`BenchCell`]). A cell keeps the raw counters of its measured window
//! ([`WindowCounts`]: deltas of cumulative counters read at the window's two ends) and the figures
//! derived from them ([`PerOrder`], the memory figures, [`TargetCheck`]s). The derivations and the
//! targets belong to the bench that measures them (`loadtest/cli/src/bench/analysis.rs`), pure
//! functions of these counters, so a reader can recompute every figure from the file.
//!
//! Versioned like the results schema: [`BENCH_SCHEMA_VERSION`], changes additive only (new fields
//! `Option` or `#[serde(default)]`), a reader refuses a newer version.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

pub use crate::Pinning;
pub use crate::api::{BUSY_THREADS, IN_FLIGHT};
use crate::{Environment, Limits, MockLatencies};

/// Version of the bench schema. Bumped only for changes an old reader could misread.
pub const BENCH_SCHEMA_VERSION: u32 = 1;

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
    /// Derived from `window` (divided by its orders); `None` when no order completed.
    pub per_order: Option<PerOrder>,
    /// Orders persisted per second of the window.
    pub orders_per_s: f64,
    /// API CPU time ÷ window length: the share of its one CPU the API used (1.0 = saturated).
    pub api_cpu_share: f64,
    pub memory: MemoryFigures,
    /// pg_stat_statements over the window, by calls (the bench's own queries left out).
    #[serde(default)]
    pub statements: Vec<StatementCalls>,
    /// The statements an order runs: each statement's calls per order rounded, summed. Free of the
    /// window's edges, which shift `window.sql_statements ÷ orders` by the statements of the orders
    /// in flight at either end.
    #[serde(default)]
    pub order_path_statements: Option<u64>,
    /// What the generator's clients got over the whole loop (warm-up and drain included), by
    /// outcome kind (`201`, `timeout`, an API error code…).
    #[serde(default)]
    pub outcomes: BTreeMap<String, u64>,
    /// Why this cell's rate is not the API's CPU capacity, when it is not (the API used less than
    /// 90 % of its CPU; the likely bound named).
    pub bound: Option<String>,
    /// The API's CPU over the window by what its threads do, read once a second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_by_role: Option<crate::CpuByRole>,
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

impl crate::versioned::Versioned for BenchResults {
    const WHAT: &'static str = "bench file";
    const READS_UP_TO: u32 = BENCH_SCHEMA_VERSION;

    fn schema_version(&self) -> u32 {
        self.schema_version
    }
}
