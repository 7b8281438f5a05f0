//! The page of `loadtest crossover`: several capacity searches, each at its own dependency
//! latency, in one table — critical path, objective, each API's capacity and what stopped it —
//! with one chart of capacity against the critical path. Formatted from the searches' own
//! `scenario.json` rows (`lab_results::scenario::CapacityFile`); which API served more at each
//! critical path is the lab's conclusion.

use lab_results::scenario::{CapacityFile, CapacityPoint, StepPoint, StoppedBy};

use super::capacity_table::capacity_sentence;
use super::{ScenarioTable, capacity_charts};

/// The rows (one per search), the notes and the chart; the conclusion is the lab's.
pub fn table(files: &[CapacityFile]) -> ScenarioTable {
    let mut rows = Vec::new();
    let mut harness_bound = Vec::new();
    for f in files {
        for c in &f.capacities {
            rows.push(row(f, c));
            harness_bound.push(c.stopped_by == StoppedBy::Harness);
        }
    }
    ScenarioTable {
        title: "Crossover: capacity against the dependencies' critical path".to_owned(),
        intro: "Each row is one capacity search (`loadtest lab --scenario capacity`) at the \
                dependency latencies of its critical path, in the pod given; capacity is the \
                highest rate that met that search's objective and the lowest that missed it. At \
                the highest rate met: the most orders in flight in a second (blocking-api holds a \
                thread for each), RSS per order in flight (the slope of RSS on the orders in \
                flight over the ramp and the plateau; — when they spanned fewer than 50, too few \
                for a slope) and the API's CPU per order."
            .to_owned(),
        // What the page is read for first, so that a phone shows it without scrolling
        // sideways: which API, how much, what stopped it; the conditions of the cell last.
        columns: [
            "critical path",
            "API",
            "capacity /s",
            "stopped by",
            "threads",
            "in flight at capacity",
            "RSS per order in flight",
            "CPU-ms per order",
            "objective",
            "pod",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        harness_bound,
        key_column: Some("stopped by".to_owned()),
        charts: vec![capacity_charts::crossover(files)],
        notes: files
            .iter()
            .flat_map(|f| f.capacities.iter().map(move |c| (f, c)))
            .map(|(f, c)| format!("{} ms: {}", f.critical_path_ms, capacity_sentence(c)).into())
            .collect(),
        ..ScenarioTable::default()
    }
}

fn row(f: &CapacityFile, c: &CapacityPoint) -> Vec<String> {
    let at = at_capacity(c);
    let dash = || "—".to_owned();
    vec![
        format!("{} ms", f.critical_path_ms),
        c.api.clone(),
        capacity_text(c),
        c.stopped_by.as_str().to_owned(),
        at.and_then(|s| s.blocking_threads)
            .or(c.blocking_threads)
            .map_or_else(dash, |t| t.to_string()),
        at.and_then(|s| s.peak_in_flight)
            .map_or_else(dash, |n| n.to_string()),
        at.and_then(|s| s.rss_per_in_flight_kib)
            .map_or_else(dash, |k| format!("{k:.0} KiB")),
        at.and_then(|s| s.cpu_s_per_1000)
            .map_or_else(dash, |c| format!("{c:.2}")),
        f.objective.clone(),
        f.limits
            .as_ref()
            .map_or("1 CPU core, 1024 MiB".to_owned(), |l| l.pod()),
    ]
}

/// The step run at the capacity found (the last, where a step was run twice).
pub fn at_capacity(c: &CapacityPoint) -> Option<&StepPoint> {
    let rate = c.capacity_rps?;
    c.steps
        .iter()
        .rev()
        .find(|s| s.met_objective && s.rate_rps == rate)
}

/// `250–262` (met, missed), `250 ± 25` (a file without the lowest rate missed), `≥ 400` (the
/// search's top or a harness-bound stop), or `none met`.
fn capacity_text(c: &CapacityPoint) -> String {
    match (c.capacity_rps, c.stopped_by) {
        (None, _) => "none met".to_owned(),
        (Some(r), _) if c.is_lower_bound() => format!("≥ {r:.0}"),
        (Some(r), _) if c.lowest_missed_rps.is_some() => {
            format!("{r:.0}–{:.0}", c.lowest_missed_rps.unwrap_or(r))
        }
        (Some(r), _) => format!("{r:.0} ± {:.0}", c.resolution_rps),
    }
}

/// A capacity in a sentence: `250 ± 25/s`, `≥ 400/s`, `none met`.
pub fn rate_text(c: &CapacityPoint) -> String {
    match c.capacity_rps {
        None => "none met".to_owned(),
        Some(_) => format!("{}/s", capacity_text(c)),
    }
}
