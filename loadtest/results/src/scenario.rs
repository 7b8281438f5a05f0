//! `scenario.json`: the rows of a scenario (`loadtest lab --scenario NAME`, `loadtest crossover`),
//! one typed row per run, as the lab writes them beside the scenario's page. The page's
//! conclusion and charts are computed from these rows, not from the live runs, so a committed
//! result (`docs/results/*-scenario.json`) is rendered again the same way: the lab computes the
//! rows (`loadtest/cli/src/scenario/`), the report draws them (`lab_report::scenario`).
//!
//! Like the results files, the rows change additively only (new fields `Option` or
//! `#[serde(default)]`), so an older `scenario.json` still loads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::MoneyRecord;

/// `hold-N`: the ramp's and the plateau's length, s (a capacity search's step; loadgen's
/// profile builds it, the capacity page describes it).
pub const HOLD_RAMP_S: f64 = 10.0;
pub const HOLD_S: f64 = 20.0;

/// `remotecall`: one transaction scope × payment latency × API.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemotecallPoint {
    pub api: String,
    pub payment_ms: u64,
    /// `request` (a connection held across the remote calls) or `short`.
    pub tx_scope: String,
    /// Completed ÷ time from first send to last answer, median over the repeats.
    pub req_per_s: f64,
    pub mean_ms: f64,
    pub max_ms: f64,
    pub errors: u64,
    pub sent: u64,
    pub harness_bound: Option<String>,
}

/// `db-latency`: one added database RTT × API, over the plateau.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbLatencyPoint {
    pub api: String,
    pub db_rtt_ms: f64,
    pub orders_per_s: f64,
    /// Connections in use over the constant phase's seconds: mean and max (`None`: not scraped).
    pub connections_mean: Option<f64>,
    pub connections_max: Option<f64>,
    pub p99_ms: f64,
    pub errors: u64,
    pub sent: u64,
    pub harness_bound: Option<String>,
}

/// `overload`: one API with shedding off or on, over the whole schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverloadPoint {
    pub api: String,
    pub shedding: String,
    /// Fresh 201s ÷ the schedule's length.
    pub ok_per_s: f64,
    pub ok_p99_ms: Option<f64>,
    /// 503 `overloaded` answers, and their p99.
    pub overloaded: u64,
    pub overloaded_p99_ms: Option<f64>,
    /// Requests the client gave up on (its timeout).
    pub timeouts: u64,
    pub sent: u64,
    pub harness_bound: Option<String>,
}

/// `faults`: one API through the fault plan; what the retrying clients saw and the money.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultsPoint {
    pub api: String,
    pub clients: Option<u64>,
    pub ended_created: Option<u64>,
    pub gave_up: Option<u64>,
    /// The money census (`None`: it was not counted — which the page says first).
    pub money: Option<MoneyRecord>,
    pub harness_bound: Option<String>,
}

/// An events row, the fields the conclusion reads.
#[derive(Debug, Clone, Deserialize)]
pub struct EventsPoint {
    pub api: String,
    pub mode: String,
    pub broker: String,
    pub crash: bool,
    pub req_per_s: f64,
    pub pool_timeouts: Option<u64>,
    pub events_lost: u64,
    #[serde(default)]
    pub broker_rtt_ms: u64,
}

/// One row of the scenario's table and of `scenario.json` (what names the run, then its rate,
/// latency and errors, first).
#[derive(Debug, Clone, Serialize)]
pub struct EventsRow {
    pub api: String,
    pub mode: String,
    pub broker: String,
    pub crash: bool,
    pub req_per_s: f64,
    pub mean_ms: f64,
    pub max_ms: f64,
    pub errors: u64,
    pub orders: u64,
    pub events_in_stream: u64,
    pub events_lost: u64,
    pub events_duplicated: u64,
    pub requests: u64,
    pub broker_rtt_ms: u64,
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Acquire timeouts the API counted (`None` after a crash: its counters restarted).
    pub pool_timeouts: Option<u64>,
    pub peak_connections_in_use: u64,
    pub events_orphaned: u64,
    pub outbox_backlog_peak: u64,
    /// From the end of the load until no outbox row was unsent.
    pub outbox_drain_s: Option<f64>,
    /// `true` when the API settled within the lab's wait.
    pub settled: bool,
}

/// A batching row, the fields the conclusion and the chart read.
#[derive(Debug, Clone, Deserialize)]
pub struct BatchPoint {
    pub api: String,
    pub batch_max: usize,
    pub db_rtt_ms: f64,
    pub commit_delay_us: Option<u64>,
    pub load: String,
    pub orders_per_s: f64,
    pub reason: Option<String>,
    pub predicted: Predicted,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Predicted {
    pub bound: String,
    pub orders_per_s: f64,
}

impl BatchPoint {
    pub fn harness_bound(&self) -> bool {
        self.reason
            .as_deref()
            .is_some_and(|r| r.starts_with("harness-bound"))
    }
    /// A saturating (closed-model) run without `commit_delay`: the batch-size sweep.
    pub fn swept(&self) -> bool {
        self.load == "closed" && self.commit_delay_us.is_none()
    }
}

/// The rows of a `scenario.json` (`[...]`, or `{"rows": [...]}`).
pub fn points<T: for<'de> Deserialize<'de>>(json: &Value) -> serde_json::Result<Vec<T>> {
    let rows = json.get("rows").unwrap_or(json);
    serde_json::from_value(rows.clone())
}

/// The resource that stopped an API (`scenario.json`'s `stopped_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoppedBy {
    Threads,
    InFlightCap,
    Cpu,
    Memory,
    DbPool,
    Postgres,
    Harness,
    /// The API died mid-run, not for its memory.
    Crashed,
    /// No rule held: the objective was missed without a saturated resource in sight.
    Unidentified,
    /// The search's top rate still met the objective.
    None,
}

impl StoppedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            StoppedBy::Threads => "threads",
            StoppedBy::InFlightCap => "in_flight_cap",
            StoppedBy::Cpu => "cpu",
            StoppedBy::Memory => "memory",
            StoppedBy::DbPool => "db_pool",
            StoppedBy::Postgres => "postgres",
            StoppedBy::Harness => "harness",
            StoppedBy::Crashed => "crashed",
            StoppedBy::Unidentified => "unidentified",
            StoppedBy::None => "none",
        }
    }
}

/// A cause with what was measured against what threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cause {
    pub stopped_by: StoppedBy,
    /// The figure the rule read, in `unit`.
    pub measured: Option<f64>,
    /// The rule's threshold, in `unit`.
    pub threshold: Option<f64>,
    pub unit: String,
    /// The sentence for the page.
    pub evidence: String,
}

impl Cause {
    /// A cause with the figure its rule read and the rule's threshold.
    pub fn new(
        by: StoppedBy,
        measured: f64,
        threshold: f64,
        unit: &str,
        evidence: String,
    ) -> Cause {
        Cause {
            stopped_by: by,
            measured: Some(measured),
            threshold: Some(threshold),
            unit: unit.to_owned(),
            evidence,
        }
    }
}

/// One lab run of either scenario, as `scenario.json` holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepPoint {
    pub api: String,
    /// `BLOCKING_THREADS` (blocking-api only).
    pub blocking_threads: Option<u32>,
    pub allocator: Option<String>,
    pub rate_rps: f64,
    pub met_objective: bool,
    pub harness_bound: Option<String>,
    /// Over the plateau: fresh orders per second, 2xx share of the arrivals, p99 of every answer.
    pub orders_rps: f64,
    pub ok_share_pct: f64,
    pub p99_ms: f64,
    pub peak_rss_mib: Option<f64>,
    pub peak_threads: Option<u64>,
    /// RSS above the idle process (the run's first sample) per thread above its first count.
    pub rss_per_thread_kib: Option<f64>,
    /// The API's CPU-seconds per 1,000 orders over the plateau (files before 2026-12-07: over
    /// the whole run, start-up, ramp and settling included, divided by all its orders).
    pub cpu_s_per_1000: Option<f64>,
    pub money_balanced: Option<bool>,
    /// How the API died mid-run, if it did.
    pub died: Option<String>,
    /// What stopped it, for a step that missed the objective.
    pub cause: Option<Cause>,
    /// The API's CPU over the plateau by thread role (the run's `cpu_by_role`), and the
    /// plateau's fresh orders, which it is divided by to be per order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_by_role: Option<crate::CpuByRole>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plateau_orders: Option<u64>,
    /// Orders in flight (the generator's open requests), the most in any second before the
    /// drain: the threads or tasks the API held at this rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_in_flight: Option<u64>,
    /// RSS per order in flight, KiB: the least-squares slope of RSS on the orders in flight over
    /// the ramp and the plateau (`bench --memory`'s estimator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_per_in_flight_kib: Option<f64>,
    /// The orders the API refused over the plateau by the reason it counted them under, and
    /// each plateau second's (the rise of `orders_shed_total{reason}` over that second); absent
    /// in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<crate::Refusals>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused_per_second: Vec<crate::Refusals>,
    /// How much the orders in flight rose over the judged plateau, %: the mean of its second
    /// half against its first's. Near 0 in steady state; a queue still filling reads tens of %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight_rise_pct: Option<f64>,
    /// blocking-api: how long an order held its thread over the plateau, ms (Little's law on the
    /// pool: its mean busy threads ÷ the orders served per second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_hold_ms: Option<f64>,
    /// The most memory the API's cgroup was charged, MiB: what the pod's limit counts (the
    /// run's `cgroup_memory_peak_bytes`; absent in older files and outside a pod).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_peak_mib: Option<f64>,
    /// How fast the machine was: the fastest of five runs of a fixed piece of work on the API's
    /// CPU right after the step, ms (`labkit::probe`). The same work every time: a step whose
    /// probe took longer ran on a slower machine. Absent in files before 2026-12-07 evening.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_ms: Option<f64>,
}

/// One API (and thread count) searched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityPoint {
    pub api: String,
    pub blocking_threads: Option<u32>,
    pub allocator: Option<String>,
    /// The highest rate that met the objective (`None`: not even the lowest tried).
    pub capacity_rps: Option<f64>,
    pub resolution_rps: f64,
    /// The first rate that did not, and what stopped the API there.
    pub first_failing_rps: Option<f64>,
    /// The lowest rate that missed the objective with the API the limit (not harness-bound): the
    /// capacity lies in [`capacity_rps`, this]. Absent in older files and when none missed.
    ///
    /// [`capacity_rps`]: CapacityPoint::capacity_rps
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lowest_missed_rps: Option<f64>,
    /// What the search narrowed to, `5 % of the rate found` or `25/s` (`--resolution`); absent in
    /// older files, whose searches stepped on a fixed grid of `resolution_rps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    pub stopped_by: StoppedBy,
    pub evidence: Option<Cause>,
    pub steps: Vec<StepPoint>,
    /// Why this API's search no longer counts while the file's other searches do (a default of
    /// that API changed after it): kept for history, left out of the crossover's ranges. The
    /// file's own `superseded` sets aside every search in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded: Option<String>,
}

impl CapacityPoint {
    /// A capacity that is only a lower bound: the rig stopped the search first, or its top rate
    /// still met the objective.
    pub fn is_lower_bound(&self) -> bool {
        matches!(self.stopped_by, StoppedBy::Harness | StoppedBy::None)
    }

    /// The run that decided `rate` in the search: its last (a rate measured again is decided by
    /// its second run; the first stays in `steps` with what it showed).
    pub fn deciding_step(&self, rate: f64) -> Option<&StepPoint> {
        self.steps.iter().rfind(|s| s.rate_rps == rate)
    }

    /// blocking-api's thread count when every step ran with the same one; `None` for an API
    /// without a thread pool, and for a search whose threads were sized for each rate
    /// (`--blocking-threads auto`).
    pub fn fixed_threads(&self) -> Option<u32> {
        let mut counts = self.steps.iter().filter_map(|s| s.blocking_threads);
        match counts.next() {
            None => self.blocking_threads,
            Some(first) => counts.all(|t| t == first).then_some(first),
        }
    }

    /// How blocking-api's threads were set, for a name: `200 threads`, `threads sized per rate`
    /// (`--blocking-threads auto`: Little's law × 1.2 before 2026-12-07, Erlang B on the measured
    /// hold since); `None` for an API without a thread pool.
    pub fn threads_text(&self) -> Option<String> {
        match (self.fixed_threads(), self.blocking_threads) {
            (Some(t), _) => Some(format!("{t} threads")),
            (None, Some(_)) => Some("threads sized per rate".to_owned()),
            (None, None) => None,
        }
    }
}

/// The two scenarios that write a [`CapacityFile`], for a reader that draws them differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapacityScenario {
    /// `capacity`: each API's capacity found by search (the file's `capacities`).
    Capacity,
    /// `threads`: blocking-api's thread count swept (the file's `sweep`).
    Threads,
}

impl CapacityFile {
    /// The scenario that wrote the file, as the page tells them apart: `threads` is the sweep,
    /// `capacity` (and any other name a hand-made file might carry) the search.
    pub fn written_by(&self) -> CapacityScenario {
        match self.scenario {
            crate::ScenarioName::Threads => CapacityScenario::Threads,
            _ => CapacityScenario::Capacity,
        }
    }
}

/// What the scenario writes to `scenario.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityFile {
    /// `capacity` or `threads`.
    pub scenario: crate::ScenarioName,
    pub objective: String,
    pub critical_path_ms: u64,
    /// Each API's pod as run (the first step's limits, read back from the kernel); absent in
    /// older files, whose runs all had 1 CPU and 1 GiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<crate::Limits>,
    pub capacities: Vec<CapacityPoint>,
    /// `threads`: every run of the sweep.
    pub sweep: Vec<StepPoint>,
    /// Why a committed search no longer counts (settings that a later search changed): kept
    /// for history, left out of the crossover's ranges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded: Option<String>,
    /// The settings that set this search apart from another of the same pod and critical path
    /// (`PG_DURABILITY`, `MAX_LOOP_LAG_MS`, `BLOCKING_THREADS`: `auto` or a count), read from
    /// its steps' runs: a crossover puts only searches that share them in one cell. Absent in
    /// older files, which `loadtest crossover` reads them back for from their steps' results.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cell_settings: BTreeMap<String, String>,
}
