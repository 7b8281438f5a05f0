//! The `overload` scenario's table: ramp-750 for each API with admission control off and on.
//!
//! What the table must show: how many orders each API completes per second of the schedule and how
//! fast; how much it refuses and how fast the refusal comes; how many clients gave up waiting; and
//! how much work was finished for clients that had already given up (orders found by key in the
//! database after the run) — the cost of queueing without a bound.

use lab_results::numbers::{MIB, fixed, ms_or_s};
use lab_results::{OUTCOME_OVERLOADED, OUTCOME_TIMEOUT, RunResults, Shedding};

use super::figures::schedule_s;
use super::{Note, ScenarioTable, VariantRuns};

pub fn table(done: &[VariantRuns]) -> ScenarioTable {
    let runs: Vec<&RunResults> = done.iter().flat_map(|(_, runs)| *runs).collect();
    let mut notes = vec![
        "201/s counts fresh orders over the schedule's length (the drain after the last arrival \
         is not in the denominator); latencies are measured from each arrival's intended send time. \
         \"Orders after give-up\": requests whose client timed out or lost its connection and never \
         got a 201 for their key, and of those the keys that nevertheless have an order in the \
         database once the API is idle — work, including a charge, done for nobody."
            .to_owned(),
        "Shedding off sets MAX_IN_FLIGHT=0 and lifts the request deadline (REQUEST_DEADLINE_MS one \
         hour): the original's unbounded admission. The cancellation of work whose client left \
         before the reservation stays in force, so orders after give-up count only work that had \
         reserved its key when the client gave up."
            .to_owned(),
    ];
    let mut rows = Vec::new();
    for r in &runs {
        rows.push(row(r));
        notes.extend(run_notes(r));
    }
    ScenarioTable {
        title: "Overload: shed early or queue (ramp-750)".into(),
        intro: "The seed's peak load (0→750 orders/s over 30 s, 30 s at 750/s, 30 s down; mocks \
                200/1000/1000 ms) against each API with admission control off (MAX_IN_FLIGHT=0, \
                every request queues) and on (each API's own MAX_IN_FLIGHT; beyond it a request \
                waits at most QUEUE_TIMEOUT_MS, then gets 503 overloaded before authentication, \
                reservation or charge). Clients give up after the request timeout."
            .into(),
        columns: [
            "API",
            "shedding (MAX_IN_FLIGHT)",
            "201/s",
            "201 p50",
            "201 p99",
            "overloaded 503s",
            "overloaded p99",
            "client timeouts",
            "other errors",
            "orders after give-up",
            "peak RSS (MiB)",
            "peak threads",
            "harness-bound",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes: notes.into_iter().map(Note::from).collect(),
        links: Vec::new(),
        ..ScenarioTable::default()
    }
}

fn row(r: &RunResults) -> Vec<String> {
    let s = &r.summary;
    let kind = |k: &str| s.errors_by_kind.get(k).copied().unwrap_or(0);
    let overloaded = kind(OUTCOME_OVERLOADED);
    let share = |n: u64| {
        if s.sent == 0 {
            "—".to_owned()
        } else {
            format!("{:.1} % ({n})", 100.0 * n as f64 / s.sent as f64)
        }
    };
    let others: Vec<(&String, &u64)> = s
        .errors_by_kind
        .iter()
        .filter(|(k, _)| k.as_str() != OUTCOME_OVERLOADED && k.as_str() != OUTCOME_TIMEOUT)
        .collect();
    let other_total: u64 = others.iter().map(|(_, n)| **n).sum();
    let other = match others.iter().max_by_key(|(_, n)| **n) {
        Some((k, n)) if other_total > 0 => format!("{other_total} (most: {n} {k})"),
        _ => "0".to_owned(),
    };
    let ok = s.ok_latency_ms;
    vec![
        r.api.clone(),
        format!(
            "{} ({})",
            r.config.shedding.map_or("—", Shedding::as_str),
            r.config
                .settings()
                .max_in_flight
                .map_or("API default".to_owned(), |m| if m == 0 {
                    "0 = unlimited".to_owned()
                } else {
                    m.to_string()
                })
        ),
        format!("{:.1}", s.ok as f64 / schedule_s(r)),
        ms_or_s(ok.map(|l| l.p50)),
        ms_or_s(ok.map(|l| l.p99)),
        share(overloaded),
        ms_or_s(s.overloaded_latency_ms.map(|l| l.p99)),
        kind(OUTCOME_TIMEOUT).to_string(),
        other,
        r.after_give_up.as_ref().map_or("—".to_owned(), |g| {
            format!(
                "{} of {}",
                g.orders.map_or("?".to_owned(), |n| n.to_string()),
                g.gave_up
            )
        }),
        fixed(s.peak_rss_bytes.map(|b| b as f64 / MIB), 0),
        fixed(s.peak_threads.map(|t| t as f64), 0),
        if r.harness_bound.is_some() {
            "yes".to_owned()
        } else {
            "no".to_owned()
        },
    ]
}

/// Little's-law bound, harness-bound reason and, with shedding on, the overload goals of one run.
fn run_notes(r: &RunResults) -> Vec<String> {
    let name = format!(
        "{} (shedding {})",
        r.api,
        r.config.shedding.map_or("—", Shedding::as_str)
    );
    let mut notes = Vec::new();
    if let Some(ll) = &r.littles_law {
        notes.push(format!(
            "{name}: Little's-law bound {:.1} orders/s ({} threads ÷ {:.2} s); {:.1} orders/s over the plateau.",
            ll.bound_rps,
            ll.threads,
            ll.critical_path_ms / 1000.0,
            ll.measured_plateau_rps.unwrap_or(f64::NAN),
        ));
    }
    if let Some(why) = &r.harness_bound {
        notes.push(format!("{name} was harness-bound: {why}."));
    }
    if r.config.shedding == Some(Shedding::On) {
        notes.push(goals(r, &name));
    }
    if let Some(g) = &r.after_give_up {
        notes.push(format!("{name}, orders after give-up: {}.", g.detail));
    }
    notes
}

/// The overload goals with shedding on: refusals ≤ 50 ms p99 at the client, no order finished for a
/// client that gave up, RSS under 1 GiB, and for blocking-api a 201 p99 of at most the critical
/// path + QUEUE_TIMEOUT_MS + 100 ms.
fn goals(r: &RunResults, name: &str) -> String {
    let s = &r.summary;
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    let mut parts = Vec::new();
    if let Some(l) = s.overloaded_latency_ms {
        parts.push(format!(
            "overloaded p99 {} ≤ 50 ms {}",
            ms_or_s(l.p99),
            verdict(l.p99 <= 50.0)
        ));
    }
    if let Some(n) = r.after_give_up.as_ref().and_then(|g| g.orders) {
        parts.push(format!(
            "{n} orders after give-up (goal 0) {}",
            verdict(n == 0)
        ));
    }
    if let Some(rss) = s.peak_rss_bytes {
        parts.push(format!(
            "peak RSS {:.0} MiB < 1 GiB {}",
            rss as f64 / MIB,
            verdict(rss < 1 << 30)
        ));
    }
    let queue_ms = r.config.settings().queue_timeout_ms;
    if let (Some(ll), Some(q), Some(ok)) = (&r.littles_law, queue_ms, s.ok_latency_ms) {
        let limit = ll.critical_path_ms + q + 100.0;
        parts.push(format!(
            "201 p99 {} ≤ {} {}",
            ms_or_s(ok.p99),
            ms_or_s(limit),
            verdict(ok.p99 <= limit)
        ));
    }
    format!("{name}, overload goals: {}.", parts.join("; "))
}
