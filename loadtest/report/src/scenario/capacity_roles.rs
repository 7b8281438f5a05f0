//! The capacity and threads pages' CPU per order by thread role: a stacked bar per API at its
//! capacity (the highest rate that met the objective, else the last rate tried), or per run of
//! the threads sweep, beside the table's CPU-s per 1,000 orders. Drawn from `scenario.json`'s
//! rows alone (their `cpu_by_role` and plateau orders).

use lab_results::scenario::{CapacityFile, CapacityScenario, StepPoint};

use super::ScenarioChart;
use crate::thread_roles::{bar, bars_svg, per_order};

/// The chart; `None` when no row carries a split.
pub fn chart(file: &CapacityFile) -> Option<ScenarioChart> {
    let steps: Vec<&StepPoint> = match file.written_by() {
        CapacityScenario::Capacity => file
            .capacities
            .iter()
            .filter_map(|c| {
                let at_capacity = c
                    .steps
                    .iter()
                    .find(|s| s.met_objective && Some(s.rate_rps) == c.capacity_rps);
                at_capacity.or(c.steps.last())
            })
            .collect(),
        CapacityScenario::Threads => file.sweep.iter().collect(),
    };
    let bars: Vec<_> = steps
        .into_iter()
        .filter_map(|s| {
            let rows = per_order(s.cpu_by_role.as_ref()?, s.plateau_orders?)?;
            Some(bar(label(s), &rows))
        })
        .collect();
    if bars.is_empty() {
        return None;
    }
    Some(ScenarioChart {
        title: "CPU per order by thread role".to_owned(),
        caption: "CPU-ms per order over the plateau, by what each thread does (read from \
                  /proc/PID/task once a second; exited/unseen: the process's CPU less the \
                  threads'). Each part's figure is in its tooltip."
            .to_owned(),
        svg: bars_svg(&bars),
    })
}

/// `blocking-api, 200 threads, at 75/s`.
fn label(s: &StepPoint) -> String {
    match s.blocking_threads {
        Some(t) => format!("{}, {t} threads, at {:.0}/s", s.api, s.rate_rps),
        None => format!("{} at {:.0}/s", s.api, s.rate_rps),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step(api: &str, threads: Option<u32>, rate: f64, met: bool, split: bool) -> StepPoint {
        let cpu = json!({"from_s": 10.0, "to_s": 30.0, "snapshots": 21, "roles": [
            {"role": "event_loop", "threads": 1, "user_s": 0.3, "system_s": 0.1,
             "voluntary": 100, "involuntary": 5},
            {"role": "request_threads", "threads": 200, "user_s": 1.2, "system_s": 0.4,
             "voluntary": 9000, "involuntary": 50},
        ]});
        serde_json::from_value(json!({
            "api": api, "blocking_threads": threads, "rate_rps": rate, "met_objective": met,
            "orders_rps": rate, "ok_share_pct": 100.0, "p99_ms": 2300.0,
            "cpu_by_role": if split { cpu } else { json!(null) },
            "plateau_orders": 1000,
        }))
        .unwrap()
    }

    #[test]
    fn a_bar_per_api_at_its_capacity_with_the_roles_per_order() {
        let file: CapacityFile = serde_json::from_value(json!({
            "scenario": "capacity", "objective": "p99 ≤ 2.53 s", "critical_path_ms": 2200,
            "capacities": [{
                "api": "blocking-api", "blocking_threads": 200, "capacity_rps": 75.0,
                "resolution_rps": 25.0, "first_failing_rps": 100.0, "stopped_by": "threads",
                "steps": [step("blocking-api", Some(200), 50.0, true, true),
                          step("blocking-api", Some(200), 75.0, true, true),
                          step("blocking-api", Some(200), 100.0, false, true)],
            }],
            "sweep": [],
        }))
        .unwrap();
        let chart = chart(&file).expect("a chart");
        // One bar: the step at the capacity, 1.6 CPU-s of request threads over 1,000 orders.
        assert_eq!(
            chart.svg.matches("text-anchor=\"end\"").count(),
            1,
            "{}",
            chart.svg
        );
        assert!(
            chart
                .svg
                .contains(">blocking-api, 200 threads, at 75/s</text>")
        );
        assert!(
            chart
                .svg
                .contains("<title>request threads: 1.600 ms</title>")
        );
        assert!(chart.svg.contains("<title>event loop: 0.400 ms</title>"));
        assert!(chart.svg.contains(">2.000 ms</text>"));
    }

    #[test]
    fn no_chart_without_a_split() {
        let file = CapacityFile {
            superseded: None,
            scenario: lab_results::ScenarioName::Threads,
            objective: String::new(),
            critical_path_ms: 2200,
            capacities: Vec::new(),
            sweep: vec![step("reactive-api", None, 300.0, true, false)],
            limits: None,
            cell_settings: Default::default(),
        };
        assert!(chart(&file).is_none());
    }
}
