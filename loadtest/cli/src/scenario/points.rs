//! The rows of the scenarios as their `scenario.json` holds them: one typed row per run, the
//! figures their page's conclusion and chart are computed from (`findings.rs`, `conclusions.rs`,
//! `findings_charts.rs`, which all import them from here) — the scenarios made of lab runs
//! (`remotecall`, `db-latency`, `overload`, `faults`) and the fields of events' and batching's rows
//! the conclusion reads. The markdown table keeps
//! its own formatting (`tables.rs`, `overload.rs`, `faults_table.rs`); these rows carry the numbers
//! behind it, so a committed `scenario.json` rebuilds the page the same way.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use lab_results::{MoneyRecord, OUTCOME_OVERLOADED, OUTCOME_TIMEOUT, RunResults, Shedding};

use super::Variant;
use super::tables::{closed_rate, connections_in_use, median, plateau, rtt};

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

/// The rows of scenario `name`, one per run in the table's order; `None` for a scenario without
/// typed rows (slow-dependency).
pub fn rows(name: &str, done: &[(Variant, Vec<RunResults>)]) -> Option<Value> {
    let first = || {
        done.iter()
            .filter_map(|(_, runs)| Some((runs.first()?, runs)))
    };
    let all = || done.iter().flat_map(|(_, runs)| runs);
    let value = match name {
        "remotecall" => serde_json::to_value(
            first()
                .map(|(r, runs)| remotecall(r, runs))
                .collect::<Vec<_>>(),
        ),
        "db-latency" => {
            serde_json::to_value(first().map(|(r, _)| db_latency(r)).collect::<Vec<_>>())
        }
        "overload" => serde_json::to_value(all().map(overload).collect::<Vec<_>>()),
        "faults" => serde_json::to_value(all().map(faults).collect::<Vec<_>>()),
        _ => return None,
    };
    Some(value.expect("plain structs serialise"))
}

fn remotecall(r: &RunResults, runs: &[RunResults]) -> RemotecallPoint {
    RemotecallPoint {
        api: r.api.clone(),
        payment_ms: r.config.mock_latency_ms.map_or(0, |l| l.payment),
        tx_scope: r.config.tx_scope.as_str().to_owned(),
        req_per_s: median(runs, closed_rate),
        mean_ms: median(runs, |r| r.summary.latency_ms.mean),
        max_ms: median(runs, |r| r.summary.latency_ms.max),
        errors: r.summary.errors,
        sent: r.summary.sent,
        harness_bound: r.harness_bound.clone(),
    }
}

fn db_latency(r: &RunResults) -> DbLatencyPoint {
    let p = plateau(r);
    let in_use = connections_in_use(r);
    DbLatencyPoint {
        api: r.api.clone(),
        db_rtt_ms: rtt(r),
        orders_per_s: p.ok_throughput_rps,
        connections_mean: in_use.map(|c| c.0),
        connections_max: in_use.map(|c| c.1),
        p99_ms: p.latency_ms.p99,
        errors: p.errors,
        sent: p.sent,
        harness_bound: r.harness_bound.clone(),
    }
}

fn overload(r: &RunResults) -> OverloadPoint {
    let s = &r.summary;
    let kind = |k: &str| s.errors_by_kind.get(k).copied().unwrap_or(0);
    OverloadPoint {
        api: r.api.clone(),
        shedding: r.config.shedding.map_or("—", Shedding::as_str).to_owned(),
        ok_per_s: s.ok as f64 / super::overload::schedule_s(r),
        ok_p99_ms: s.ok_latency_ms.map(|l| l.p99),
        overloaded: kind(OUTCOME_OVERLOADED),
        overloaded_p99_ms: s.overloaded_latency_ms.map(|l| l.p99),
        timeouts: kind(OUTCOME_TIMEOUT),
        sent: s.sent,
        harness_bound: r.harness_bound.clone(),
    }
}

fn faults(r: &RunResults) -> FaultsPoint {
    let retries = r.retries.as_ref();
    FaultsPoint {
        api: r.api.clone(),
        clients: retries.map(|x| x.clients),
        ended_created: retries.map(|x| x.ended_created),
        gave_up: retries.map(|x| x.ended_gave_up),
        money: r.money.clone(),
        harness_bound: r.harness_bound.clone(),
    }
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
    pub(super) fn swept(&self) -> bool {
        self.load == "closed" && self.commit_delay_us.is_none()
    }
}

/// The rows of a `scenario.json` (`[...]`, or `{"rows": [...]}`).
pub fn points<T: for<'de> Deserialize<'de>>(json: &Value) -> serde_json::Result<Vec<T>> {
    let rows = json.get("rows").unwrap_or(json);
    serde_json::from_value(rows.clone())
}

/// APIs in the order they first appear.
pub(super) fn apis<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for n in names {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}
