//! The rows of the scenarios made of lab runs (`remotecall`, `db-latency`, `overload`, `faults`)
//! as their `scenario.json` holds them (`lab_results::scenario`), each computed from one run: the
//! figures their page's conclusion (`conclusions.rs`) and chart (`lab_report::scenario::charts`)
//! are drawn from. The markdown table keeps its own formatting (`lab_report::scenario::tables`,
//! `::overload`, `::faults`); these rows carry the numbers behind it, read the same way
//! (`lab_report::scenario::figures`), so a committed `scenario.json` rebuilds the page the same
//! way.

use serde_json::Value;

use lab_results::scenario::{DbLatencyPoint, FaultsPoint, OverloadPoint, RemotecallPoint};
use lab_results::{OUTCOME_OVERLOADED, OUTCOME_TIMEOUT, RunResults, Shedding};

use super::{LabRuns, Variant};
use lab_report::scenario::figures::{
    closed_rate, connections_in_use, median, plateau, rtt, schedule_s,
};

/// The rows of scenario `kind`, one per run in the table's order; `None` for a scenario without
/// typed rows (slow-dependency, and the soak, whose page compares windows of one run).
pub fn rows(kind: LabRuns, done: &[(Variant, Vec<RunResults>)]) -> Option<Value> {
    let first = || {
        done.iter()
            .filter_map(|(_, runs)| Some((runs.first()?, runs)))
    };
    let all = || done.iter().flat_map(|(_, runs)| runs);
    let value = match kind {
        LabRuns::Remotecall => serde_json::to_value(
            first()
                .map(|(r, runs)| remotecall(r, runs))
                .collect::<Vec<_>>(),
        ),
        LabRuns::DbLatency => {
            serde_json::to_value(first().map(|(r, _)| db_latency(r)).collect::<Vec<_>>())
        }
        LabRuns::Overload => serde_json::to_value(all().map(overload).collect::<Vec<_>>()),
        LabRuns::Faults => serde_json::to_value(all().map(faults).collect::<Vec<_>>()),
        LabRuns::SlowDependency | LabRuns::Soak => return None,
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
        ok_per_s: s.ok as f64 / schedule_s(r),
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
