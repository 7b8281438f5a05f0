//! The measured parts of [`RunResults`](super::RunResults): the per-second series, the summaries
//! and the end-of-run checks (see the counting rules in the parent module).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One second of the measured run. Counts are events *in* that second; gauges are sampled once at
/// its end. `None` = not measured (e.g. no PID known, no `/metrics`, gauge absent for this API).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SecondSample {
    /// Seconds since the start of the measured part (this sample covers `[t, t+1)`).
    pub t: u32,
    /// Phase the second belongs to (by its start), `drain` after the last arrival.
    pub phase: String,
    /// Arrivals scheduled in this second.
    pub offered: u64,
    /// Requests started in this second.
    pub sent: u64,
    /// Requests finished in this second (any outcome).
    pub completed: u64,
    /// Arrivals in this second refused by the in-flight cap.
    pub not_sent: u64,
    /// Finished requests by outcome kind: `201`, `201_replayed`, an error code (`invalid_request`,
    /// `database_unavailable`, …), `http_<status>` when the body had no code, `timeout`,
    /// `connect_error`, `io_error`. Sums to `completed`.
    pub outcomes: BTreeMap<String, u64>,
    /// Latency of the requests finished in this second (all outcomes), from intended send time.
    pub latency_ms: Option<LatencyPercentiles>,
    /// Generator lateness (actual − intended send time) of the requests sent in this second.
    pub lateness_ms: Option<Lateness>,
    /// The API process (`/proc` sampling).
    pub api_process: Option<ProcessSample>,
    /// Gauges scraped from the API's `/metrics` at the end of the second.
    pub api_metrics: Option<ApiMetrics>,
    /// The harness's own CPU use over this second.
    pub harness: HarnessSample,
    /// Requests open (sent, not finished) at the end of the second, as the generator counts them.
    #[serde(default)]
    pub in_flight: u64,
    /// The arrivals due in this second by when their answer came: `answered_after[k]` were
    /// answered (any outcome) in second `t + k`. What is left of `offered − not_sent` was never
    /// answered. Lets any window of seconds say exactly how many of its arrivals were answered
    /// after it (`lab_results::window_fate`). Empty in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answered_after: Vec<u64>,
}

/// Latency percentiles, ms, from an HdrHistogram (3 significant digits).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencyPercentiles {
    /// Number of values.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Maximum.
    pub max: f64,
}

/// Generator lateness, ms.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Lateness {
    /// 99th percentile.
    pub p99: f64,
    /// Maximum.
    pub max: f64,
}

/// The API process, from `/proc/<pid>`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ProcessSample {
    /// CPU used over the second, % of one core (100 = one core busy).
    pub cpu_percent: f64,
    /// Resident memory, bytes.
    pub rss_bytes: u64,
    /// OS threads.
    pub threads: u64,
    /// Open file descriptors.
    pub fds: u64,
    /// Runnable but waiting for a CPU over the second, % of one core summed over its threads
    /// (schedstat `run_delay`): the machine, or its own quota, kept it from running.
    #[serde(default)]
    pub cpu_wait_percent: Option<f64>,
}

/// Gauges from the API's `/metrics` (names in `docs/lab-interfaces.md`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ApiMetrics {
    /// `db_pool_connections_in_use`.
    pub db_pool_in_use: Option<f64>,
    /// `db_pool_waiting`.
    pub db_pool_waiting: Option<f64>,
    /// `db_pool_acquire_timeouts_total` (cumulative counter).
    pub db_pool_acquire_timeouts: Option<f64>,
    /// `blocking_pool_busy` (blocking-api only).
    pub blocking_pool_busy: Option<f64>,
    /// `blocking_pool_queued` (blocking-api only).
    pub blocking_pool_queued: Option<f64>,
    /// `http_requests_in_flight`.
    pub in_flight: Option<f64>,
    /// `db_transaction_duration_seconds_sum`, all kinds (cumulative): connection-held time.
    #[serde(default)]
    pub db_tx_seconds_sum: Option<f64>,
    /// `db_transaction_duration_seconds_count`, all kinds (cumulative).
    #[serde(default)]
    pub db_tx_count: Option<f64>,
    /// `cgroup_cpu_nr_throttled` (cumulative): CFS periods in which the API's cgroup hit its CPU
    /// quota. `None` where the API could not read its cgroup's `cpu.stat`.
    #[serde(default)]
    pub cgroup_throttled_periods: Option<f64>,
    /// `cgroup_cpu_throttled_seconds` (cumulative): time the API's threads were held back by it.
    #[serde(default)]
    pub cgroup_throttled_seconds: Option<f64>,
    /// `orders_shed_total` by its reason (cumulative); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusals: Option<Refusals>,
}

/// The orders an API refused or stopped before the charge, by the reason it counts them under
/// (`orders_shed_total{reason}`, cumulative), so that a step says which rule refused, not a guess.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Refusals {
    /// `overloaded`: no place within `QUEUE_TIMEOUT_MS` (or a queue that could not drain in time).
    pub overloaded: f64,
    /// `overloaded_loop_lag`: the event loop ran late past the lag rule's threshold.
    pub loop_lag: f64,
    /// `deadline_exceeded`: work that had not reached the charge by `REQUEST_DEADLINE_MS`.
    pub deadline: f64,
    /// `client_closed_request`: the client left before the reservation.
    pub client_gone: f64,
}

impl Refusals {
    /// The reasons as `/metrics` names them, with their counts.
    pub fn by_reason(&self) -> [(&'static str, f64); 4] {
        [
            ("overloaded", self.overloaded),
            ("overloaded_loop_lag", self.loop_lag),
            ("deadline_exceeded", self.deadline),
            ("client_closed_request", self.client_gone),
        ]
    }

    /// From `/metrics`' reason label; `false` for a reason this struct does not know.
    pub fn set(&mut self, reason: &str, count: f64) -> bool {
        let slot = match reason {
            "overloaded" => &mut self.overloaded,
            "overloaded_loop_lag" => &mut self.loop_lag,
            "deadline_exceeded" => &mut self.deadline,
            "client_closed_request" => &mut self.client_gone,
            _ => return false,
        };
        *slot = count;
        true
    }

    /// What was refused between `earlier` and `self` (counters only grow; a restarted API's
    /// reset reads as zero).
    pub fn since(&self, earlier: &Refusals) -> Refusals {
        let d = |a: f64, b: f64| (a - b).max(0.0);
        Refusals {
            overloaded: d(self.overloaded, earlier.overloaded),
            loop_lag: d(self.loop_lag, earlier.loop_lag),
            deadline: d(self.deadline, earlier.deadline),
            client_gone: d(self.client_gone, earlier.client_gone),
        }
    }

    pub fn plus(&self, other: &Refusals) -> Refusals {
        Refusals {
            overloaded: self.overloaded + other.overloaded,
            loop_lag: self.loop_lag + other.loop_lag,
            deadline: self.deadline + other.deadline,
            client_gone: self.client_gone + other.client_gone,
        }
    }

    pub fn total(&self) -> f64 {
        self.by_reason().iter().map(|(_, n)| n).sum()
    }
}

/// CPU of the harness over one second, % of one core.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct HarnessSample {
    /// The generator (this process).
    pub generator_cpu_percent: Option<f64>,
    /// mock-deps (when the lab started it).
    pub mock_deps_cpu_percent: Option<f64>,
    /// PostgreSQL, all its processes (when the lab started it): the sum of `postgres_jobs`.
    pub postgres_cpu_percent: Option<f64>,
    /// The whole machine, every process (other tenants included), from `/proc/stat`.
    #[serde(default)]
    pub machine_cpu_percent: Option<f64>,
    /// Of it, the time the machine's host took from it (`/proc/stat`'s steal: its CPUs ready to
    /// run while the hypervisor ran other tenants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_steal_percent: Option<f64>,
    /// The sampler's own thread (its `/proc` reads and `/metrics` scrapes), a part of
    /// `generator_cpu_percent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler_cpu_percent: Option<f64>,
    /// `postgres_cpu_percent` by the job of PostgreSQL's processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres_jobs: Option<PostgresJobs>,
}

/// PostgreSQL's CPU over one second by the job of its processes, % of one core (labkit's
/// `procstat::postgres_role` names them from their titles).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PostgresJobs {
    /// The sessions of the APIs' pools (and of the lab's own queries).
    pub backends: f64,
    pub wal_writer: f64,
    pub checkpointer: f64,
    pub background_writer: f64,
    /// The autovacuum launcher and its live workers.
    pub autovacuum: f64,
    /// The postmaster itself.
    pub postmaster: f64,
    /// Processes that exited within the second (an autovacuum worker's end, a closed session).
    pub exited: f64,
    /// Any other helper (logical replication launcher, archiver, …).
    pub other: f64,
}

impl PostgresJobs {
    /// From a job → CPU-seconds map (`procstat::TreeParts::cpu_since`) over `seconds`.
    pub fn from_seconds(jobs: &BTreeMap<&str, f64>, seconds: f64) -> PostgresJobs {
        let mut out = PostgresJobs::default();
        for (job, cpu) in jobs {
            let slot = match *job {
                "backends" => &mut out.backends,
                "walwriter" => &mut out.wal_writer,
                "checkpointer" => &mut out.checkpointer,
                "background writer" => &mut out.background_writer,
                "autovacuum launcher" | "autovacuum worker" => &mut out.autovacuum,
                "postmaster" => &mut out.postmaster,
                "exited" => &mut out.exited,
                _ => &mut out.other,
            };
            *slot += 100.0 * cpu / seconds;
        }
        out
    }

    /// Every job together: PostgreSQL's CPU.
    pub fn total(&self) -> f64 {
        self.named().iter().map(|(_, v)| v).sum()
    }

    /// Each job with its name as a report writes it, in a fixed order.
    pub fn named(&self) -> [(&'static str, f64); 8] {
        [
            ("backends", self.backends),
            ("WAL writer", self.wal_writer),
            ("checkpointer", self.checkpointer),
            ("background writer", self.background_writer),
            ("autovacuum", self.autovacuum),
            ("postmaster", self.postmaster),
            ("exited processes", self.exited),
            ("other", self.other),
        ]
    }
}

/// A mark on a run's timeline: something that happened at `t` seconds — a phase change, an
/// injected fault — as opposed to an order event the APIs publish. Held in
/// [`RunResults::timeline`](crate::RunResults::timeline), the results file's `events`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineMark {
    /// Seconds since the start of the measured part.
    pub t: f64,
    /// What happened, e.g. `phase constant (300/s)`.
    pub label: String,
}

/// Totals and percentiles over a span of the run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Length of the span, seconds (whole run: measured part including the drain).
    pub duration_s: f64,
    /// Arrivals scheduled.
    pub offered: u64,
    /// Requests started.
    pub sent: u64,
    /// Requests finished, any outcome.
    pub completed: u64,
    /// Arrivals refused by the in-flight cap.
    pub not_sent: u64,
    /// Fresh orders (`201`).
    pub ok: u64,
    /// Idempotent replays (`201_replayed`).
    pub replayed: u64,
    /// Every other outcome (HTTP errors and transport failures).
    pub errors: u64,
    /// `errors` by kind.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Latency of every finished request, from the full-span histogram (not averaged per second).
    pub latency_ms: LatencyPercentiles,
    /// Latency of the `201`s only.
    pub ok_latency_ms: Option<LatencyPercentiles>,
    /// Latency of the `overloaded` 503s only: how fast a refused request learns it was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overloaded_latency_ms: Option<LatencyPercentiles>,
    /// `completed ÷ duration_s`.
    pub throughput_rps: f64,
    /// `ok ÷ duration_s` — orders per second.
    pub ok_throughput_rps: f64,
    /// `offered ÷ duration_s`.
    pub offered_rps: f64,
    /// CPU-seconds the API process used over the span.
    pub api_cpu_seconds: Option<f64>,
    /// `api_cpu_seconds × 1000 ÷ ok` — the cost of 1,000 orders.
    pub cpu_seconds_per_1000_ok: Option<f64>,
    /// Peak resident memory of the API, bytes.
    pub peak_rss_bytes: Option<u64>,
    /// Peak OS threads of the API.
    pub peak_threads: Option<u64>,
    /// Peak open file descriptors of the API.
    pub peak_fds: Option<u64>,
    /// Generator lateness over the span.
    pub lateness_ms: Lateness,
}

/// Little's law for the blocking API: with `threads` threads each held for the critical path, the
/// sustainable throughput is at most `threads ÷ critical_path`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LittlesLaw {
    /// `BLOCKING_THREADS`.
    pub threads: u64,
    /// Sum of the mock latencies, ms (seller + risk + payment).
    pub critical_path_ms: f64,
    /// `threads ÷ (critical_path_ms / 1000)`, req/s.
    pub bound_rps: f64,
    /// Fresh orders per second during the plateau (constant phase), if the profile has one.
    pub measured_plateau_rps: Option<f64>,
    /// Set when a dependency was slowed (`--inject`) during the plateau: what the bound is computed
    /// from then (the slowed critical path when the slowdown covered the whole plateau).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One end-of-run check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvariantCheck {
    /// e.g. `offered = sent + not_sent`, `db orders = 201s`, `no key charged twice`.
    pub name: String,
    /// `Some(true)` held, `Some(false)` violated, `None` could not be checked.
    pub ok: Option<bool>,
    /// The numbers compared, or why it could not be checked.
    pub detail: String,
}
