//! What the scenarios found, computed from their rows as `scenario.json` holds them: the
//! conclusion at the top of their page and its chart — events and batching here, the scenarios
//! made of lab runs in `conclusions.rs`. Reading the rows back from
//! that JSON (not from the live structs) means the page of a committed result (docs/results/) is
//! rebuilt the same way, and the tests can render it from those files.

use serde_json::Value;

use super::{LabRuns, conclusions};
use lab_report::scenario::{apis, charts};
use lab_results::scenario::{
    BatchPoint, DbLatencyPoint, EventsPoint, FaultsPoint, OverloadPoint, RemotecallPoint, points,
};

/// `3.4–3.5` or `9.9`: the range of a figure over the APIs.
fn range(v: &[f64]) -> String {
    let (lo, hi) = v
        .iter()
        .fold((f64::INFINITY, 0f64), |(l, h), &x| (l.min(x), h.max(x)));
    let f = |x: f64| {
        if x >= 100.0 {
            format!("{x:.0}")
        } else {
            format!("{x:.1}")
        }
    };
    if f(lo) == f(hi) {
        f(lo)
    } else {
        format!("{}–{}", f(lo), f(hi))
    }
}

/// Slowed broker: each mode's req/s and pool timeouts; killed mid-run: which modes lost events.
pub fn events_conclusion(rows: &[EventsPoint]) -> Vec<String> {
    let modes = apis(rows.iter().map(|r| r.mode.as_str()));
    let mut out = Vec::new();
    let slowed: Vec<&EventsPoint> = rows
        .iter()
        .filter(|r| r.broker == "slowed" && !r.crash)
        .collect();
    if let Some(rtt) = slowed.first().map(|r| r.broker_rtt_ms) {
        let each: Vec<String> = modes
            .iter()
            .filter_map(|m| {
                let of: Vec<&&EventsPoint> = slowed.iter().filter(|r| r.mode == *m).collect();
                (!of.is_empty()).then_some(())?;
                let rps: Vec<f64> = of.iter().map(|r| r.req_per_s).collect();
                let timeouts: u64 = of.iter().filter_map(|r| r.pool_timeouts).sum();
                let t = if timeouts > 0 {
                    format!(" and {timeouts} pool timeouts")
                } else {
                    String::new()
                };
                Some(format!("{m} {} req/s{t}", range(&rps)))
            })
            .collect();
        out.push(format!(
            "With the broker slowed by {rtt} ms a round trip: {}.",
            each.join(", ")
        ));
    }
    let crashed: Vec<&EventsPoint> = rows.iter().filter(|r| r.crash).collect();
    if !crashed.is_empty() {
        let lost: Vec<String> = crashed
            .iter()
            .filter(|r| r.events_lost > 0)
            .map(|r| format!("{} lost {} events ({})", r.mode, r.events_lost, r.api))
            .collect();
        let safe: Vec<&str> = modes
            .iter()
            .copied()
            .filter(|m| {
                crashed
                    .iter()
                    .filter(|r| r.mode == *m)
                    .all(|r| r.events_lost == 0)
            })
            .collect();
        out.push(if lost.is_empty() {
            "Killed mid-run, no mode lost an event.".to_owned()
        } else {
            format!(
                "Killed mid-run, {}; {} lost none.",
                lost.join(", "),
                safe.join(" and ")
            )
        });
    }
    out
}

/// Batching: each API's best batch size against no batching, per database RTT, then what limited
/// the best row.
pub fn batching_conclusion(rows: &[BatchPoint]) -> Vec<String> {
    let swept: Vec<&BatchPoint> = rows.iter().filter(|r| r.swept()).collect();
    let mut rtts: Vec<f64> = swept.iter().map(|r| r.db_rtt_ms).collect();
    rtts.sort_by(|a, b| b.total_cmp(a));
    rtts.dedup();
    let (mut gains, mut limits) = (Vec::new(), Vec::new());
    for api in apis(swept.iter().map(|r| r.api.as_str())) {
        let mut each = Vec::new();
        for &rtt in &rtts {
            let of: Vec<&&BatchPoint> = swept
                .iter()
                .filter(|r| r.api == api && r.db_rtt_ms == rtt)
                .collect();
            let Some(base) = of.iter().find(|r| r.batch_max == 1) else {
                continue;
            };
            let Some(best) = of
                .iter()
                .max_by(|a, b| a.orders_per_s.total_cmp(&b.orders_per_s))
            else {
                continue;
            };
            each.push(format!(
                "{:.2}× at {rtt} ms RTT ({:.0} → {:.0}, batch {})",
                best.orders_per_s / base.orders_per_s,
                base.orders_per_s,
                best.orders_per_s,
                best.batch_max
            ));
            limits.push(if best.harness_bound() {
                format!("{api} at {rtt} ms was harness-bound")
            } else {
                format!(
                    "{api} at {rtt} ms reached {:.0} % of its {} ceiling ({:.0}/s)",
                    100.0 * best.orders_per_s / best.predicted.orders_per_s,
                    best.predicted.bound,
                    best.predicted.orders_per_s
                )
            });
        }
        if !each.is_empty() {
            gains.push(format!("{api}'s {}", each.join(", ")));
        }
    }
    if gains.is_empty() {
        return Vec::new();
    }
    vec![
        format!("Batching the final persist raised {}.", gains.join("; ")),
        format!("At its best batch size, {}.", limits.join("; ")),
    ]
}

/// Sets the conclusion and the chart of the events scenario's table from its `scenario.json`.
pub fn apply_events(table: &mut super::ScenarioTable, json: &Value) -> serde_json::Result<()> {
    let rows: Vec<EventsPoint> = points(json)?;
    table.conclusion = events_conclusion(&rows);
    table.charts.push(charts::events(&rows));
    Ok(())
}

/// Sets the conclusion, the chart and the harness-bound marks of the batching scenario's table
/// from its `scenario.json`.
pub fn apply_batching(table: &mut super::ScenarioTable, json: &Value) -> serde_json::Result<()> {
    let rows: Vec<BatchPoint> = points(json)?;
    table.conclusion = batching_conclusion(&rows);
    table.charts.push(charts::batching(&rows));
    table.harness_bound = rows.iter().map(BatchPoint::harness_bound).collect();
    Ok(())
}

/// Sets the conclusion, the chart and the harness-bound marks of a table of lab runs from its
/// `scenario.json`, for every one that writes one (all but slow-dependency and the soak); the
/// rows of the JSON are the rows of the table, in order.
pub fn apply(
    table: &mut super::ScenarioTable,
    kind: LabRuns,
    json: &Value,
) -> serde_json::Result<()> {
    match kind {
        LabRuns::Remotecall => {
            let rows: Vec<RemotecallPoint> = points(json)?;
            table.conclusion = conclusions::remotecall(&rows);
            table.charts.push(charts::remotecall(&rows));
            table.harness_bound = rows.iter().map(|r| r.harness_bound.is_some()).collect();
        }
        LabRuns::DbLatency => {
            let rows: Vec<DbLatencyPoint> = points(json)?;
            table.conclusion = conclusions::db_latency(&rows);
            table.charts.push(charts::db_latency(&rows));
            table.harness_bound = rows.iter().map(|r| r.harness_bound.is_some()).collect();
        }
        LabRuns::Overload => {
            let rows: Vec<OverloadPoint> = points(json)?;
            table.conclusion = conclusions::overload(&rows);
            table.charts.push(charts::overload(&rows));
            table.harness_bound = rows.iter().map(|r| r.harness_bound.is_some()).collect();
        }
        LabRuns::Faults => {
            let rows: Vec<FaultsPoint> = points(json)?;
            table.conclusion = conclusions::faults(&rows);
            table.charts.push(charts::faults(&rows));
            table.harness_bound = rows.iter().map(|r| r.harness_bound.is_some()).collect();
        }
        LabRuns::SlowDependency | LabRuns::Soak => {}
    }
    Ok(())
}

#[cfg(test)]
#[path = "findings_tests.rs"]
mod tests;
