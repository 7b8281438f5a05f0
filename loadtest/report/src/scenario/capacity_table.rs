//! The page of `--scenario capacity` and `--scenario threads`, drawn from their `scenario.json`
//! alone: one row per lab run, led by what was measured, the sentences the rows bear out and the
//! charts (the lab's `scenario/capacity/` runs the search and writes the page).

use lab_results::numbers::{fixed, ms_or_s};
use lab_results::scenario::{
    CapacityFile, CapacityPoint, CapacityScenario, HOLD_RAMP_S, HOLD_S, StepPoint, StoppedBy,
};

use super::capacity_charts as charts;
use super::{Evidence, Note, ScenarioTable};

/// Rates a cluster user might plan for (the pods arithmetic on the page).
const PLANNED_RATES: &[f64] = &[300.0, 750.0, 3000.0];

/// The page's table, conclusion and charts.
pub fn table(file: &CapacityFile) -> ScenarioTable {
    let scenario = file.written_by();
    let steps: Vec<&StepPoint> = match scenario {
        CapacityScenario::Capacity => file.capacities.iter().flat_map(|c| &c.steps).collect(),
        CapacityScenario::Threads => file.sweep.iter().collect(),
    };
    let rows = steps.iter().copied().map(row).collect();
    let harness_bound = steps.iter().map(|s| s.harness_bound.is_some()).collect();
    let (title, intro, conclusion) = match scenario {
        CapacityScenario::Capacity => (
            "Capacity: the highest rate each API serves within the objective",
            capacity_intro(file),
            file.capacities.iter().map(capacity_sentence).collect(),
        ),
        CapacityScenario::Threads => (
            "Threads: blocking-api's pool against Little's law",
            format!(
                "blocking-api at BLOCKING_THREADS 200 … 4,000 (DB pool unchanged) at 300/s and \
                 750/s, reactive-api beside it at the same rates; profile hold-R (10 s ramp, 20 s \
                 at the rate). Objective: {}. Little's law asks for rate × critical path ({} ms) \
                 threads busy.",
                file.objective, file.critical_path_ms
            ),
            sweep_sentences(file),
        ),
    };
    let mut notes = vec![
        "p99 and the 2xx share are over the plateau (20 s at the rate), latency from each \
         arrival's intended send time; RSS per thread is (RSS at the peak thread count − RSS of \
         the first sample) ÷ the threads the load added."
            .to_owned(),
    ];
    if scenario == CapacityScenario::Capacity {
        notes.extend(pods(file));
    }
    ScenarioTable {
        title: title.into(),
        intro,
        // What stopped a missed step, the reason a reader opens the page, beside whether it met
        // the objective: in the columns above the fold, one word (the evidence under the table).
        columns: [
            "API",
            "threads",
            "rate /s",
            "met",
            "stopped by",
            "orders/s",
            "2xx",
            "p99",
            "peak RSS (MiB)",
            "peak threads",
            "RSS per thread (KiB)",
            "CPU-s per 1,000",
            "money",
            "allocator",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        evidence: Some(Evidence {
            heading: "What stopped each step that missed the objective".to_owned(),
            items: steps.iter().filter_map(|s| stopped_by(s).1).collect(),
        }),
        notes: notes.into_iter().map(Note::from).collect(),
        conclusion,
        harness_bound,
        main_columns: 9,
        key_column: Some("stopped by".to_owned()),
        charts: match scenario {
            CapacityScenario::Capacity => vec![charts::capacities(file)],
            CapacityScenario::Threads => {
                vec![charts::threads_orders(file), charts::threads_rss(file)]
            }
        }
        .into_iter()
        .chain(super::capacity_roles::chart(file))
        .collect(),
        ..ScenarioTable::default()
    }
}

/// How the capacity search ran, the pod included when the file records it.
fn capacity_intro(file: &CapacityFile) -> String {
    let narrowing = match file.capacities.iter().find_map(|c| c.resolution.as_deref()) {
        Some(r) => format!(
            "doubling from 100/s while a step meets the objective (halving while it misses), \
             then bisecting (geometric midpoint) until the highest rate that met it and the \
             lowest that missed it are within {r}"
        ),
        None => "doubling from 100/s until a step misses the objective, then halving the gap \
                 to a resolution of 25/s"
            .to_owned(),
    };
    let pod = file.limits.as_ref().map_or(String::new(), |l| {
        format!(" Each API in a pod of {} ({}).", l.pod(), l.mechanism)
    });
    format!(
        "Each API searched on its own: open-model steps of a 10 s ramp, then the rate held{}, \
         {narrowing}. Objective: {}. Critical path of the dependencies {} ms. Each step is a full \
         lab run with its money check.{pod}",
        judged_window(file),
        file.objective,
        file.critical_path_ms
    )
}

/// Which seconds of a step were judged, from the steps' own record (`cpu_by_role`'s window):
/// ` and judged from 20 s to 40 s (held 10 s first for the orders in flight to settle; profile
/// hold-R-S)`, or the older steps' ` 20 s and judged from the ramp's end (profile hold-R)`.
fn judged_window(file: &CapacityFile) -> String {
    let steps = file.capacities.iter().flat_map(|c| &c.steps);
    let window = steps
        .chain(&file.sweep)
        .find_map(|s| s.cpu_by_role.as_ref().map(|c| (c.from_s, c.to_s)));
    // `--duration-scale` scales the ramp and the judged plateau alike, not the settling hold:
    // the plateau's length says the scale.
    let ramp = |from: f64, to: f64| HOLD_RAMP_S * (to - from) / HOLD_S;
    match window {
        Some((from, to)) if from > ramp(from, to) + 0.5 => format!(
            " and judged from {from:.0} s to {to:.0} s (held {:.0} s first for the orders in \
             flight to settle; profile hold-R-S)",
            from - ramp(from, to)
        ),
        _ => format!(" {HOLD_S:.0} s and judged from the ramp's end (profile hold-R)"),
    }
}

/// What stopped a step: one word for its cell, and the sentence with the measurement that says
/// so for the list under the table (`None`: the step was not stopped).
fn stopped_by(s: &StepPoint) -> (String, Option<String>) {
    let (cause, evidence) = match (&s.died, &s.cause) {
        (Some(d), _) => ("died", d.clone()),
        (None, Some(c)) => (c.stopped_by.as_str(), c.evidence.clone()),
        (None, None) => return ("—".to_owned(), None),
    };
    let threads = s
        .blocking_threads
        .map_or(String::new(), |t| format!(" ({t} threads)"));
    let item = format!(
        "{}{threads} at {}/s: {cause} — {evidence}",
        s.api,
        fixed(Some(s.rate_rps), 0)
    );
    (cause.to_owned(), Some(item))
}

fn row(s: &StepPoint) -> Vec<String> {
    vec![
        s.api.clone(),
        s.blocking_threads.map_or("—".to_owned(), |t| t.to_string()),
        fixed(Some(s.rate_rps), 0),
        if s.met_objective { "yes" } else { "no" }.to_owned(),
        stopped_by(s).0,
        fixed(Some(s.orders_rps), 1),
        format!("{:.1} %", s.ok_share_pct),
        ms_or_s(Some(s.p99_ms)),
        fixed(s.peak_rss_mib, 0),
        fixed(s.peak_threads.map(|t| t as f64), 0),
        fixed(s.rss_per_thread_kib, 0),
        fixed(s.cpu_s_per_1000, 2),
        match s.money_balanced {
            Some(true) => "balanced",
            Some(false) => "NOT balanced",
            None => "not counted",
        }
        .to_owned(),
        s.allocator.clone().unwrap_or_else(|| "—".to_owned()),
    ]
}

fn who(c: &CapacityPoint) -> String {
    let mut parts = Vec::new();
    if let Some(t) = c.threads_text() {
        parts.push(t);
    }
    if let Some(a) = &c.allocator {
        parts.push(format!("{a} allocator"));
    }
    if parts.is_empty() {
        c.api.clone()
    } else {
        format!("{} ({})", c.api, parts.join(", "))
    }
}

/// `blocking-api (200 threads): 75/s ± 25 within the objective; at 100/s stopped by threads — …`.
pub fn capacity_sentence(c: &CapacityPoint) -> String {
    let evidence = c
        .evidence
        .as_ref()
        .map_or(String::new(), |e| e.evidence.clone());
    let Some(capacity) = c.capacity_rps else {
        let at = c
            .first_failing_rps
            .map_or(String::new(), |f| format!(" (the lowest tried, {f:.0}/s)"));
        return format!(
            "{}: no rate tried met the objective{at}; stopped by {} — {evidence}.",
            who(c),
            c.stopped_by.as_str()
        );
    };
    let cap = format!("{capacity:.0}/s");
    if let (Some(missed), Some(r)) = (c.lowest_missed_rps, &c.resolution) {
        // The bracket found: the capacity lies between the two rates.
        let why = match (c.stopped_by, c.first_failing_rps) {
            (StoppedBy::Harness, Some(f)) => {
                format!("; at {f:.0}/s the rig, not the API, was at its limit — {evidence}")
            }
            (StoppedBy::Unidentified, _) => format!(
                "; it missed it (twice) with no measured resource at its limit — {evidence}"
            ),
            (by, Some(f)) => {
                format!(
                    "; at {f:.0}/s it was stopped by {} — {evidence}",
                    by.as_str()
                )
            }
            (_, None) => String::new(),
        };
        return format!(
            "{}: {cap} met the objective, {missed:.0}/s missed it (the search narrowed to \
             {r}){why}.",
            who(c)
        );
    }
    match (c.stopped_by, c.first_failing_rps) {
        (StoppedBy::Harness, Some(f)) => format!(
            "{}: above {cap} within the objective, harness-bound — at {f:.0}/s the rig, not the \
             API, was at its limit ({evidence}); the API's own capacity is not measured here.",
            who(c)
        ),
        (StoppedBy::None, _) => format!(
            "{}: at least {cap} within the objective — the search's top rate still met it.",
            who(c)
        ),
        (StoppedBy::Unidentified, Some(f)) => format!(
            "{}: {cap} ± {:.0} within the objective; at {f:.0}/s it missed it (twice) with no \
             measured resource at its limit — {evidence}.",
            who(c),
            c.resolution_rps
        ),
        (by, Some(f)) => format!(
            "{}: {cap} ± {:.0} within the objective; at {f:.0}/s it was stopped by {} — {evidence}.",
            who(c),
            c.resolution_rps,
            by.as_str()
        ),
        (by, None) => format!("{}: {cap}; stopped by {}.", who(c), by.as_str()),
    }
}

/// For each planned rate: how many replicas of the pod searched (1 CPU / 1 GiB in files that do
/// not record it) each API's measured capacity asks for (a harness-bound capacity gives an upper
/// bound on the replicas).
fn pods(file: &CapacityFile) -> Vec<String> {
    let pod = file
        .limits
        .as_ref()
        .map_or("1 CPU / 1 GiB".to_owned(), |l| l.pod());
    file.capacities
        .iter()
        .filter_map(|c| {
            let cap = c.capacity_rps.filter(|r| *r > 0.0)?;
            let each: Vec<String> = PLANNED_RATES
                .iter()
                .map(|r| {
                    let n = (r / cap).ceil();
                    format!("{r:.0}/s → {n} pod{}", if n == 1.0 { "" } else { "s" })
                })
                .collect();
            let bound = if c.stopped_by == StoppedBy::Harness || c.stopped_by == StoppedBy::None {
                " (the capacity is a lower bound, so these are at most)"
            } else {
                ""
            };
            Some(format!(
                "Pods of {pod} for a rate within the objective, {}: from its measured \
                 {cap:.0}/s, ceil(rate ÷ capacity), no headroom{bound}: {}.",
                who(c),
                each.join(", ")
            ))
        })
        .collect()
}

/// `threads`: per rate, the smallest thread count that met the objective against Little's law,
/// and what stopped the larger counts that did not.
fn sweep_sentences(file: &CapacityFile) -> Vec<String> {
    let mut rates: Vec<f64> = file.sweep.iter().map(|s| s.rate_rps).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    let path_s = file.critical_path_ms as f64 / 1000.0;
    rates
        .into_iter()
        .map(|rate| {
            let at: Vec<&StepPoint> = file
                .sweep
                .iter()
                .filter(|s| s.rate_rps == rate && s.blocking_threads.is_some())
                .collect();
            let little = (rate * path_s).ceil();
            let smallest = at
                .iter()
                .filter(|s| s.met_objective)
                .filter_map(|s| s.blocking_threads)
                .min();
            let mut text = match smallest {
                Some(t) => format!(
                    "At {rate:.0}/s the smallest thread count that met the objective was {t} \
                     (Little's law: {rate:.0}/s × {path_s:.2} s = {little:.0} threads busy)."
                ),
                None => format!(
                    "At {rate:.0}/s no thread count tried met the objective (Little's law asks \
                     for {little:.0} threads busy)."
                ),
            };
            let larger: Vec<String> = at
                .iter()
                .filter(|s| !s.met_objective && s.blocking_threads.unwrap_or(0) as f64 >= little)
                .map(|s| {
                    let why = match (&s.died, &s.cause) {
                        (Some(d), _) => format!("died: {d}"),
                        (None, Some(c)) => format!("{} ({})", c.stopped_by.as_str(), c.evidence),
                        (None, None) => "?".to_owned(),
                    };
                    format!("{} threads: {why}", s.blocking_threads.unwrap_or(0))
                })
                .collect();
            if !larger.is_empty() {
                text.push_str(&format!(
                    " Counts at or above Little's that still missed it — {}.",
                    larger.join("; ")
                ));
            }
            if let Some(r) = file
                .sweep
                .iter()
                .find(|s| s.rate_rps == rate && s.blocking_threads.is_none())
            {
                text.push_str(&format!(
                    " {} at the same rate: {}, {:.1} orders/s, p99 {}.",
                    r.api,
                    if r.met_objective {
                        "met it"
                    } else {
                        "missed it"
                    },
                    r.orders_rps,
                    ms_or_s(Some(r.p99_ms))
                ));
            }
            text
        })
        .collect()
}
