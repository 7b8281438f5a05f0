//! # lab-results — the load lab's results schema
//!
//! Part of the lab (`loadtest/results`), shared by the generator, the report and the lab's binary.
//! The results schema: one [`RunResults`] per API per repeat, saved as `results-<label>-<n>.json`.
//!
//! This is the contract between the generator (which fills it), the report (which only reads it) and
//! anyone re-analysing a run later, so every field says what it counts and how it was measured.
//! It is versioned by [`SCHEMA_VERSION`]; changes are additive only (new fields are `Option` or carry
//! `#[serde(default)]`), so an older file still loads. `docs/results-format.md` describes it in prose.
//!
//! Beside the schema, how every reader of it writes a figure ([`numbers`]), so that a number reads
//! the same in the report, the scenarios and the bench. What a run means (verdicts, targets,
//! conclusions) is worked out by the command that ran it (`loadtest/cli`) or by the report
//! (`lab-report`, which also writes every table and chart); this crate is what they read.
//!
//! Counting rules, used everywhere below:
//! - `offered` = arrivals the profile scheduled; `sent` = requests actually started;
//!   `not_sent` = arrivals refused by the in-flight cap (`offered = sent + not_sent`).
//! - `completed` = requests that finished, whatever the outcome (an HTTP response of any status, a
//!   timeout, a connection error). `ok` = fresh `201`s; `errors` = every other outcome except
//!   `201_replayed` (an idempotent replay). After the drain, `sent = completed`.
//! - Latency is measured from the arrival's **intended** send time, not the actual one, so a late
//!   generator cannot hide queueing (no coordinated omission).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

pub mod api;
pub mod batching;
pub mod bench;
pub mod cost;
mod db_activity;
mod fate;
pub mod faults;
pub mod inject;
mod measures;
mod median;
mod money;
pub mod numbers;
mod overload;
pub mod scenario;
mod scenario_name;
pub mod settings;
mod shards;
pub mod threads;
mod versioned;
pub use api::ApiKind;
pub use db_activity::{DbActivity, StatementTimes};
pub use fate::{SecondArrivals, WindowFate, window_fate};
pub use measures::*;
pub use median::median;
pub use money::*;
pub use overload::*;
pub use scenario_name::ScenarioName;
pub use shards::*;
pub use threads::{CpuByRole, RoleCpu, ThreadRole};

/// Version of this schema. Bumped only for changes an old reader could misread.
///
/// 2: `shard`, `shards` and `histograms`. A results file may now be one shard of a run (1/N of
/// its load), which a version-1 reader would take for a whole run, so version-1 readers refuse it.
pub const SCHEMA_VERSION: u32 = 2;

/// Outcome kind of a fresh order (HTTP 201 without `Idempotent-Replayed`).
pub const OUTCOME_CREATED: &str = "201";
/// Outcome kind of an idempotent replay (HTTP 201 with `Idempotent-Replayed: true`).
pub const OUTCOME_REPLAYED: &str = "201_replayed";
/// Outcome kind of a request that hit the generator's request timeout.
pub const OUTCOME_TIMEOUT: &str = "timeout";
/// Outcome kind of a request whose connection could not be established.
pub const OUTCOME_CONNECT_ERROR: &str = "connect_error";
/// Outcome kind of any other transport failure (reset, broken pipe, unreadable body).
pub const OUTCOME_IO_ERROR: &str = "io_error";
/// Outcome kind of a retrying client that was still failing when its time ran out.
pub const OUTCOME_GAVE_UP: &str = "gave_up";

/// Everything measured in one run of one API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResults {
    /// Always [`SCHEMA_VERSION`] when written by this version.
    pub schema_version: u32,
    /// The API under test, e.g. `blocking-api` (the binary name, or the name given in `--targets`).
    pub api: String,
    /// Short label used in charts and tables, e.g. `blocking`.
    pub label: String,
    /// Base URL the generator sent requests to.
    pub target_url: String,
    /// Unique id of the lab invocation; also the prefix of every `reference_id` sent.
    pub run_id: String,
    /// 0-based index of this repeat (runs are interleaved: blocking 0, reactive 0, blocking 1, …).
    pub repeat_index: u32,
    /// Total repeats requested (`--repeat`).
    pub repeats: u32,
    /// UTC start of the measured part (after warm-up), RFC 3339.
    pub started_at: String,
    /// How the run was configured.
    pub config: RunConfig,
    /// Machine and build the run happened on.
    pub environment: Environment,
    /// One sample per second of the measured part, `t` = 0, 1, 2, … (includes the drain after the
    /// last arrival, until every request finished or timed out).
    pub seconds: Vec<SecondSample>,
    /// The run's timeline: things that happened during it (phase changes, injected latency
    /// changes, faults, …). Written as `events`, the name results files have always used.
    #[serde(rename = "events")]
    pub timeline: Vec<TimelineMark>,
    /// Summary of the constant-rate phase only (`None` for profiles without one).
    pub plateau: Option<Summary>,
    /// Summary of the whole measured run.
    pub summary: Summary,
    /// Little's-law ceiling for the blocking API (`None` for the reactive one).
    pub littles_law: Option<LittlesLaw>,
    /// `Some(reason)` when the harness (generator, mock-deps or PostgreSQL), not the API, was the
    /// limit at some point; the reason says which and when. `None` = no sign of it.
    pub harness_bound: Option<String>,
    /// End-of-run consistency checks (counts reconcile, an order per 201, no key charged twice).
    #[serde(default)]
    pub invariants: Vec<InvariantCheck>,
    /// For `stress`: the highest step rate (req/s) that held (≤ 1 % errors and p99 ≤ 10 s).
    #[serde(default)]
    pub knee_rps: Option<f64>,
    /// Goose's own report files written beside this one (file names, relative to the results file).
    #[serde(default)]
    pub goose_reports: Vec<String>,
    /// Seconds from the first arrival to the last response: the precise denominator of a short
    /// closed run's rate (`summary.duration_s` counts whole per-second buckets).
    #[serde(default)]
    pub elapsed_s: Option<f64>,
    /// The gateway's charges against the orders, counted after the run once every `CHARGING` key
    /// settled (`None`: not counted — no database or mock-deps known, see `invariants`).
    #[serde(default)]
    pub money: Option<MoneyRecord>,
    /// Retrying clients (`--retry-for-s`): attempts and how each client ended. With it, every
    /// request counted above is one logical client (its final answer, latency from its first
    /// attempt's intended time), not one HTTP request.
    #[serde(default)]
    pub retries: Option<RetryRecord>,
    /// Requests whose client gave up, and the orders made for them anyway (the lab only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_give_up: Option<AfterGiveUp>,
    /// PostgreSQL's commits and WAL flushes during the run (the lab only, with its database).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_activity: Option<DbActivity>,
    /// What became of the order events through a slowed broker (`--faults broker-ack=…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker: Option<faults::BrokerRecord>,
    /// The generator's share of the schedule and its start (`loadtest run`). With `count > 1`
    /// this file is one shard of a run: `loadtest merge` makes the run of it, `compare` refuses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRecord>,
    /// A merged run (`loadtest merge`): the shards it was added up from, by index.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardRecord>,
    /// Every histogram of the run, serialised (`loadtest run` and `merge`; not the lab's runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<HistogramSet>,
    /// The API process ended during the run without being asked to (the lab only; a kill the
    /// fault plan makes is not one). Its figures after `t_s` are a dead process's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_exit: Option<ApiExit>,
    /// The most memory the API's cgroup was charged over the run (v1
    /// `memory.max_usage_in_bytes`, v2 `memory.peak`; the process's warm-up included): what its
    /// memory limit is enforced against (the lab only, in a pod). RSS may exceed it: RSS counts
    /// the mapped pages of the binary and its libraries, which sit in the page cache charged to
    /// whichever group read them first (a reactive-api of 33 MiB RSS: 21 MiB anonymous, all
    /// charged to its group, and 12 MiB of file pages, 1.8 MiB of them charged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_memory_peak_bytes: Option<u64>,
    /// The API's CPU over the plateau by what its threads do (event loop, request threads, HTTP
    /// client, pools; exited threads apart), read once a second from each thread's counters
    /// (runs with the API's pid known and a constant phase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_by_role: Option<CpuByRole>,
}

/// How an API under test ended during its run, as the lab saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiExit {
    /// Seconds into the measured part when the process was first seen gone (polled every
    /// 200 ms, so up to that much after the fact).
    pub t_s: f64,
    /// Killed by the kernel for its cgroup's memory limit: the cgroup's `oom_kill` counter rose
    /// during the run and the process died of SIGKILL.
    pub oom_killed: bool,
    /// The signal that ended it (9 = SIGKILL), when a signal did.
    pub signal: Option<i32>,
    /// Its exit status, when it exited by itself.
    pub exit_code: Option<i32>,
    /// The cgroup's OOM kills over the run (`None`: no cgroup, or the kernel does not count them).
    pub oom_kills: Option<u64>,
    /// Started again after the load, with no load, so that its recovery could settle the keys it
    /// left `CHARGING` before the money was counted (as a restarted pod would).
    pub restarted_for_recovery: bool,
}

impl ApiExit {
    /// `killed for its memory limit at t = 43.2 s` / `killed by signal 11 at …` / `exited (status 1) at …`.
    pub fn describe(&self) -> String {
        let how = if self.oom_killed {
            "killed by the kernel for its memory limit (cgroup OOM kill)".to_owned()
        } else if let Some(sig) = self.signal {
            format!("killed by signal {sig}")
        } else {
            match self.exit_code {
                Some(code) => format!("exited by itself (status {code})"),
                None => "ended (how was not seen)".to_owned(),
            }
        };
        format!("{how} at t = {:.1} s", self.t_s)
    }
}

/// The run's configuration as actually applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// The load profile.
    pub profile: ProfileInfo,
    /// mock-deps latencies in force during the run, outside an `injection` (`None` when the lab
    /// could not read them).
    pub mock_latency_ms: Option<MockLatencies>,
    /// A dependency slowed for part of the run (`--inject`), times after `--duration-scale`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injection: Option<inject::Injection>,
    /// Faults injected during the run (`--faults`), times after `--duration-scale`; what happened
    /// and when is on the run's timeline (`RunResults::timeline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<faults::FaultPlan>,
    /// API settings by env var name (`DB_POOL_SIZE`, `BLOCKING_THREADS`, …) → value, sorted by name.
    /// Only what the lab set or knows; used by the report's fairness section.
    pub api_settings: BTreeMap<String, String>,
    /// Resource limits on the API process.
    pub limits: Limits,
    /// `DB_TX_SCOPE` of the API (`short` or `request`).
    pub tx_scope: String,
    /// Generator request timeout, ms (a request still unanswered then counts as `timeout`).
    pub request_timeout_ms: u64,
    /// Generator in-flight cap; an arrival finding this many requests open counts as `not_sent`.
    pub max_in_flight: u64,
    /// Share of requests re-sending an earlier `reference_id` (`--duplicate-ratio`).
    pub duplicate_ratio: f64,
    /// Number of distinct seller tokens (`sk_seller-NN`) requests are spread over.
    pub sellers: u32,
    /// Warm-up before the measured part, seconds (excluded from every figure).
    pub warmup_s: f64,
    /// `--shedding` of the lab run (`None`: not started by the lab). The admission settings in
    /// force are in `api_settings` (`MAX_IN_FLIGHT` as the API reported it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shedding: Option<Shedding>,
}

/// The load profile as run (after `--duration-scale`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileInfo {
    /// Profile name as given, e.g. `ramp-300`, `seed-gatling`, `closed-30-300`.
    pub name: String,
    /// `open` (fixed arrival schedule) or `closed` (C clients, each waits for its response).
    pub model: String,
    /// `--duration-scale` applied to every phase.
    pub duration_scale: f64,
    /// Phases in order.
    pub phases: Vec<PhaseInfo>,
    /// Arrivals the profile schedules in total (open model) or requests in total (closed model).
    pub planned_requests: u64,
}

/// One phase of a profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseInfo {
    /// `ramp-up`, `constant`, `ramp-down`, `idle`, `burst`, `step-<rate>`, `closed`.
    pub name: String,
    /// Start, seconds from the start of the measured part.
    pub start_s: f64,
    /// Length, seconds.
    pub duration_s: f64,
    /// Arrival rate at the start of the phase, req/s (linear in between; 0 for closed phases).
    pub from_rate: f64,
    /// Arrival rate at the end of the phase, req/s.
    pub to_rate: f64,
    /// Arrivals scheduled in this phase.
    pub arrivals: u64,
}

/// mock-deps latencies, ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MockLatencies {
    /// `GET /sellers/authorization`.
    pub seller: u64,
    /// `POST /risk-analysis/validate`.
    pub risk: u64,
    /// `POST /gateway/pay`.
    pub payment: u64,
}

impl MockLatencies {
    /// The sequential critical path of one order, ms.
    pub fn critical_path_ms(&self) -> u64 {
        self.seller + self.risk + self.payment
    }
}

/// Limits on the API process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// `true` only if the limits below were verified to be in force on the API process.
    pub limits_enforced: bool,
    /// CPU limit in cores (quota ÷ period) when enforced.
    pub cpu_cores: Option<f64>,
    /// The CFS period the quota is counted over, µs, as read back (absent in older files, whose
    /// runs used the kernel's 100 ms, and without a CPU limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_period_us: Option<u64>,
    /// The CFS burst, µs, as read back: quota left unused in earlier periods that the API may
    /// spend at once (`Some(0)`: none; absent in older files and where the kernel has no burst).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_burst_us: Option<u64>,
    /// Memory limit in bytes when enforced.
    pub memory_bytes: Option<u64>,
    /// How: `cgroup v2`, `cgroup v1`, `docker compose`, `none`.
    pub mechanism: String,
    /// Human note, e.g. why limits are NOT enforced.
    pub note: String,
    /// The CPUs the API and the harness were pinned to; `None`: not pinned (the note says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinning: Option<Pinning>,
}

impl Limits {
    /// The pod as run, for a conditions or limits line: `0.125 CPU (period 10 ms), 128 MiB`,
    /// `0.125 CPU (period 100 ms, burst 12.5 ms), 128 MiB` with a burst; `1 CPU core, 1024 MiB`
    /// from a file without the period; `no CPU limit, no memory limit`.
    pub fn pod(&self) -> String {
        let burst = match self.cpu_burst_us {
            Some(b) if b > 0 => format!(", burst {} ms", b as f64 / 1e3),
            _ => String::new(),
        };
        let cpu = match (self.cpu_cores, self.cpu_period_us) {
            (Some(c), Some(p)) => {
                format!("{} (period {} ms{burst})", numbers::cpus(c), p as f64 / 1e3)
            }
            (Some(c), None) => numbers::cpus(c),
            (None, _) => "no CPU limit".to_owned(),
        };
        let memory = self.memory_bytes.map_or("no memory limit".to_owned(), |b| {
            format!("{:.0} MiB", b as f64 / numbers::MIB)
        });
        format!("{cpu}, {memory}")
    }

    /// Where the API ran, for a report's limits line.
    pub fn placement(&self) -> String {
        match &self.pinning {
            Some(p) => format!(
                "API alone on CPU {:?}, harness on CPU {:?}",
                p.api_cpus, p.harness_cpus
            ),
            None => "API not pinned: it shares the CPUs with the harness".to_owned(),
        }
    }
}

/// Which CPUs the API and the harness were pinned to (`sched_setaffinity`, every thread).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pinning {
    pub api_cpus: Vec<usize>,
    /// The load generator (the lab's process), mock-deps, PostgreSQL, NATS, the latency proxy.
    pub harness_cpus: Vec<usize>,
}

/// Where the run happened.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Environment {
    /// Logical CPUs visible to the lab.
    pub cores: u32,
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// OS name (`PRETTY_NAME` of `/etc/os-release`).
    #[serde(default)]
    pub os: String,
    /// Total memory, bytes.
    #[serde(default)]
    pub memory_bytes: u64,
    /// `rustc --version` of the toolchain that built the lab.
    pub rustc: String,
    /// Git commit of the workspace (`unknown` outside a checkout), `-dirty` when modified.
    pub git_sha: String,
    /// Build profile of the APIs (`release` or `debug`).
    #[serde(default)]
    pub build_profile: String,
}

impl RunResults {
    /// Reads a results file, refusing a newer schema it would misread.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        crate::versioned::load(path.as_ref())
    }

    /// Writes the results as pretty JSON (creating parent folders).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        crate::versioned::save(self, path.as_ref())
    }

    /// `true` for one shard of a run (`--shard I/N` with N > 1), not a run of its own.
    pub fn is_partial(&self) -> bool {
        self.shard.as_ref().is_some_and(|s| s.count > 1)
    }

    /// `true` when every invariant that could be checked held.
    pub fn invariants_hold(&self) -> bool {
        self.invariants.iter().all(|c| c.ok != Some(false))
    }
}

impl crate::versioned::Versioned for RunResults {
    const WHAT: &'static str = "results file";
    const READS_UP_TO: u32 = SCHEMA_VERSION;

    fn schema_version(&self) -> u32 {
        self.schema_version
    }
}
