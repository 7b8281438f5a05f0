//! The `faults` scenario's table: per fault and API, how many requests were answered within the
//! generator's deadline and the longest wait, what the gateway charged against the orders, the
//! API's CPU during the outage, what became of the order events when the broker was slowed, and
//! (for the retrying clients' row) how the clients ended and how long each fault kept the API from
//! answering 201.
//!
//! The plan itself is the lab's: its rate, length and outages come in as a [`Plan`].

use lab_results::faults::{
    API_READY_LABEL, BrokerRecord, DB_RESTART_LABEL, FaultPlan, KILL_LABEL, OLD_API_CLOSED_LABEL,
};
use lab_results::numbers::ms_or_s;
use lab_results::{MoneyRecord, RetryRecord, RunResults};

use super::faults_figures::{
    answered_within_deadline, api_cpu_during, p99_during_and_before,
    unanswered_within_and_elsewhere,
};
use super::{Note, ScenarioTable, VariantRuns};

/// What the page states of the plan the lab ran.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    /// The rate both APIs get, orders/s.
    pub rate: u32,
    /// Length of the constant-rate run, seconds (before `--duration-scale`).
    pub duration_s: u32,
    /// The rows with one outage each: (variant slug, fault spec, what the row's `fault` column
    /// says).
    pub outages: &'a [(&'a str, &'a str, &'a str)],
}

/// The `fault` column of a run.
fn fault_of(r: &RunResults, outages: &[(&str, &str, &str)]) -> String {
    let Some(plan) = r.config.faults else {
        return "none".into();
    };
    if plan.has_payment_faults() || plan.kill_api_at_s.is_some() || plan.restart_db_at_s.is_some() {
        return "payment faults, kill -9, PostgreSQL restart (retrying clients)".into();
    }
    let outage = |planned: bool, slug: &str| {
        outages
            .iter()
            .find(|(s, _, _)| planned && *s == slug)
            .map(|(_, _, name)| (*name).to_owned())
    };
    [
        outage(plan.db_freeze.is_some(), "db-freeze"),
        outage(plan.slow_uploads.is_some(), "slow-uploads"),
        outage(plan.gateway_down.is_some(), "gateway-down"),
        outage(plan.broker_ack.is_some(), "broker-ack"),
        outage(plan.rolling_restart_at_s.is_some(), "rolling-restart"),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ")
}

/// The table: a row per run, its notes (what each run shows beyond the row) and the plan.
pub fn table(done: &[VariantRuns], plan: &Plan) -> ScenarioTable {
    let runs = || done.iter().flat_map(|(_, runs)| *runs);
    let mut notes: Vec<Note> = runs().flat_map(|r| run_notes(r, plan)).collect();
    notes.push(
        "Process figures (CPU, memory, threads) in each run's report stop at the kill: the sampler \
         follows the first process only."
            .into(),
    );
    ScenarioTable {
        title: "Money through faults".into(),
        intro: intro(plan),
        columns: COLUMNS.map(String::from).to_vec(),
        rows: runs().map(|r| row(r, plan)).collect(),
        notes,
        links: Vec::new(),
        main_columns: 15,
        ..ScenarioTable::default()
    }
}

const COLUMNS: [&str; 20] = [
    "API",
    "fault",
    "requests",
    "answered within deadline",
    "longest answer",
    "charges",
    "voids",
    "orders",
    "charges without order",
    "orders without charge",
    "double charges",
    "API CPU during the outage",
    "worst second's p99 during the outage",
    "orders / events in the stream",
    "outbox backlog at the outage's end / after the drain",
    "clients ended 201",
    "clients ended terminal 4xx",
    "clients gave up",
    "first 201 after kill -9",
    "first 201 after DB restart",
];

/// The plan as the page's intro says it.
fn intro(plan: &Plan) -> String {
    let (rate, duration_s) = (plan.rate, plan.duration_s);
    format!(
        "Both APIs at a constant {rate} orders/s for {duration_s} s (seed latencies 200/1000/1000 ms), \
         DEPS_TIMEOUT_MS 5000, LEASE_MS 15000, RECONCILE_INTERVAL_MS 2000, durable PostgreSQL; the \
         generator's deadline is 30 s (the APIs' REQUEST_DEADLINE_MS). First row per API: each arrival \
         one client that retries (same reference_id and body, at least Retry-After and a capped \
         exponential backoff, 250 ms doubling to 8 s, ±50 %, giving up 60 s after its first attempt); \
         throughout, 5 % of payments answered 503, 1 % hanging 8 s, 2 % charged then answered 500; at \
         20 s the API is killed (kill -9) and started again 2 s later; at 40 s PostgreSQL restarts -m \
         immediate. The other rows: plain clients (one request per arrival) and one outage from 20 s: \
         PostgreSQL frozen 20 s (the TCP proxy between the API and PostgreSQL moves no byte and \
         forwards no new connection), 300 connections sending an order's headers and then one body \
         byte every 2 s for 30 s, the payment gateway unreachable 30 s (pay, lookup and void hang), \
         and the API with EVENTS_MODE=outbox publishing to a lab-started nats-server -js through a \
         TCP proxy that adds 7 s to every round trip for 30 s (each JetStream acknowledgement 7 s; \
         NATS_TIMEOUT_MS left at its 10 s default), and the API restarted as a platform does at \
         20 s (SIGTERM; the old process still sent to through its SHUTDOWN_DELAY_MS and drain; the \
         new one started on the same port once the old listener closed: requests without an \
         answer from that close to the new process's readiness are counted apart, as the lab's \
         one port causes them, any other is lost); events are counted after the relay drained the \
         outbox, every order against the stream's subjects (duplicates allowed: at-least-once). \
         Answered: any HTTP status before the deadline; longest answer: the longest wait of any \
         request (a timeout's included); CPU: the API's CPU seconds per second over the outage's \
         whole seconds. Money is counted once no key is CHARGING."
    )
}

/// A run's row.
fn row(r: &RunResults, plan: &Plan) -> Vec<String> {
    let retries = r.retries.as_ref();
    let money = r.money.as_ref();
    let n = |v: Option<u64>| v.map_or("—".to_owned(), |v| v.to_string());
    let outage = r
        .config
        .faults
        .unwrap_or_default()
        .outages()
        .first()
        .map(|(_, w)| *w);
    vec![
        r.api.clone(),
        fault_of(r, plan.outages),
        r.summary.sent.to_string(),
        format!(
            "{} ({} s)",
            answered_within_deadline(&r.summary),
            r.config.request_timeout_ms / 1000
        ),
        ms_or_s(r.summary.latency_ms.max),
        n(money.map(|m| m.charges)),
        n(money.map(|m| m.voids)),
        n(money.map(|m| m.orders)),
        n(money.map(|m| m.charges_without_order)),
        n(money.map(|m| m.orders_without_charge)),
        n(money.map(|m| m.double_charges)),
        outage
            .and_then(|w| api_cpu_during(&r.seconds, w))
            .map_or("—".into(), |c| format!("{c:.2} cores")),
        outage.map_or("—".into(), |w| {
            let (during, before) = p99_during_and_before(&r.seconds, w);
            format!("{} ({} before)", ms_or_s(during), ms_or_s(before))
        }),
        r.broker.as_ref().map_or("—".into(), |b| {
            format!(
                "{} / {} ({} lost, {} duplicated)",
                b.orders, b.events_in_stream, b.events_lost, b.events_duplicated
            )
        }),
        r.broker.as_ref().map_or("—".into(), backlog),
        n(retries.map(|x| x.ended_created)),
        retries.map_or("—".into(), terminal),
        n(retries.map(|x| x.ended_gave_up)),
        recovered(retries, KILL_LABEL),
        recovered(retries, DB_RESTART_LABEL),
    ]
}

/// What a run shows beyond its row: the verdict on its outage or on its retrying clients, their
/// attempts, and the timeline's marks.
fn run_notes(r: &RunResults, plan: &Plan) -> Vec<Note> {
    let retries = r.retries.as_ref();
    let money = r.money.as_ref();
    let faults = r.config.faults.unwrap_or_default();
    let mut notes = Vec::new();
    if retries.is_none() {
        notes.push(outage_verdict(r, &faults, plan.outages, money));
    }
    if retries.is_some() {
        notes.push(verdict(r.api.as_str(), retries, money));
    }
    if let Some(x) = retries {
        let kinds: Vec<String> = x
            .attempts_by_outcome
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        notes.push(Note::Said(format!(
            "{}: {} clients made {} attempts ({} answered 201); attempts by answer: {}; at most \
             {} attempts for one client.",
            r.api,
            x.clients,
            x.attempts,
            created_attempts(x),
            kinds.join(", "),
            x.max_attempts
        )));
    }
    let marks: Vec<String> = r
        .timeline
        .iter()
        .filter(|e| e.t > 0.0 && !e.label.contains("→"))
        .map(|e| format!("{:.1} s {}", e.t, e.label))
        .collect();
    if !marks.is_empty() {
        notes.push(Note::Said(format!("{}: {}.", r.api, marks.join("; "))));
    }
    notes
}

/// The outbox's backlog when the slowdown ended and after the drain, with how long after the
/// money count (itself some seconds after the run) the outbox was seen empty.
fn backlog(b: &BrokerRecord) -> String {
    let at_end = b
        .backlog_at_outage_end
        .map_or("—".into(), |n| n.to_string());
    match b.drain_s {
        Some(s) => format!(
            "{at_end} / {} (empty {s:.1} s after the money count)",
            b.backlog_after_drain
        ),
        None => format!("{at_end} / {} (not drained)", b.backlog_after_drain),
    }
}

/// Attempts answered 201, fresh or replayed.
fn created_attempts(r: &RetryRecord) -> u64 {
    r.attempts_by_outcome
        .iter()
        .filter(|(k, _)| k.starts_with("201"))
        .map(|(_, v)| v)
        .sum()
}

fn terminal(r: &RetryRecord) -> String {
    let total = r.ended_terminal();
    if total == 0 {
        return "0".into();
    }
    let kinds: Vec<String> = r
        .ended_terminal_4xx
        .iter()
        .map(|(k, v)| format!("{v} {k}"))
        .collect();
    format!("{total} ({})", kinds.join(", "))
}

fn recovered(r: Option<&RetryRecord>, label: &str) -> String {
    let Some(f) = r.and_then(|r| r.recovery.iter().find(|f| f.fault.starts_with(label))) else {
        return "—".into();
    };
    match f.first_201_after_s {
        Some(s) => format!("{s:.2} s (fault at {:.1} s)", f.t),
        None => format!("no 201 after it (fault at {:.1} s)", f.t),
    }
}

/// The verdict of an outage row: money balanced both ways, no double charge, and — for a frozen
/// database — no answer held for the whole freeze (an API that waits on a frozen database
/// without a bound answers only once it thaws); for a slowed broker, also every order's event in
/// the stream once the outbox drained (duplicates allowed, and counted); for a rolling restart,
/// also every request answered but in the moments without a listener ([`restart_gap`]).
fn outage_verdict(
    r: &RunResults,
    plan: &FaultPlan,
    outages: &[(&str, &str, &str)],
    m: Option<&MoneyRecord>,
) -> Note {
    let api = r.api.as_str();
    let Some(m) = m else {
        return Note::CheckFailed(format!("{api}: money was not counted."));
    };
    let mut failed = Vec::new();
    if !m.balanced() || m.charging_left > 0 {
        failed.push(format!(
            "money: {} charges without order, {} orders without charge, {} double charges, \
             {} amount mismatches, {} keys still CHARGING",
            m.charges_without_order,
            m.orders_without_charge,
            m.double_charges,
            m.amount_mismatches,
            m.charging_left
        ));
    }
    let longest = r.summary.latency_ms.max;
    let answered = answered_within_deadline(&r.summary);
    let gap = match plan.rolling_restart_at_s.map(|_| restart_gap(r)) {
        None => String::new(),
        Some(None) => {
            failed.push("the restart's events are missing".to_owned());
            String::new()
        }
        Some(Some((from, to))) => {
            let (within, elsewhere) = unanswered_within_and_elsewhere(&r.seconds, from, to);
            if elsewhere > 0 {
                failed.push(format!(
                    "{elsewhere} requests lost outside the restart's {:.2} s without a listener",
                    to - from
                ));
            }
            format!(
                "; {within} requests without an answer from the old listener's close at {from:.1} \
                 s to the new process's readiness {:.2} s later (the lab's one port: \
                 loadtest/cli/src/faults/rolling_restart.rs)",
                to - from
            )
        }
    };
    if let Some(freeze) = plan.db_freeze
        && longest >= freeze.for_s * 1000.0
    {
        failed.push(format!(
            "the longest answer ({}) is as long as the freeze ({} s): answers waited it out",
            ms_or_s(longest),
            freeze.for_s
        ));
    }
    let events = match (plan.broker_ack, r.broker.as_ref()) {
        (None, _) => String::new(),
        (Some(_), None) => {
            failed.push("the events were not counted".to_owned());
            String::new()
        }
        (Some(_), Some(b)) => {
            if !b.every_event_delivered() {
                failed.push(format!(
                    "events: {} orders without their event, {} outbox rows still unsent",
                    b.events_lost, b.backlog_after_drain
                ));
            }
            format!(
                "; events: {} of {} orders in the stream, {} duplicated (at-least-once), outbox \
                 backlog {} at the outage's end and {} after the drain (NATS_TIMEOUT_MS {} ms \
                 against {} ms acknowledgements)",
                b.orders - b.events_lost.min(b.orders),
                b.orders,
                b.events_duplicated,
                b.backlog_at_outage_end
                    .map_or("—".into(), |n| n.to_string()),
                b.backlog_after_drain,
                b.nats_timeout_ms,
                b.ack_ms
            )
        }
    };
    let text = format!(
        "{api}, {}: {answered} of {} answered within the deadline, longest {}; {} charges, {} voids, \
         {} orders{events}{gap}",
        fault_of(r, outages),
        r.summary.sent,
        ms_or_s(longest),
        m.charges,
        m.voids,
        m.orders
    );
    if failed.is_empty() {
        Note::Said(format!("{text}."))
    } else {
        Note::CheckFailed(format!("{text}; {}.", failed.join("; ")))
    }
}

/// A rolling restart's moments without a listener on the lab's one port: from the old listener's
/// close to the new process's readiness, seconds into the run, from the run's timeline.
fn restart_gap(r: &RunResults) -> Option<(f64, f64)> {
    let closed = r
        .timeline
        .iter()
        .find(|e| e.label.starts_with(OLD_API_CLOSED_LABEL))?
        .t;
    let ready = r
        .timeline
        .iter()
        .find(|e| e.t >= closed && e.label.starts_with(API_READY_LABEL))?
        .t;
    Some((closed, ready))
}

/// The scenario's verdict for one API: money balanced and every client ended with an answer.
fn verdict(api: &str, r: Option<&RetryRecord>, m: Option<&MoneyRecord>) -> Note {
    let (Some(r), Some(m)) = (r, m) else {
        return Note::CheckFailed(format!("{api}: money or client outcomes were not counted."));
    };
    let ok = m.charges_without_order == 0 && m.double_charges == 0 && r.ended_gave_up == 0;
    let text = format!(
        "{api}: {} charges without order, {} double charges, {} clients gave up (of {}).",
        m.charges_without_order, m.double_charges, r.ended_gave_up, r.clients
    );
    if ok {
        Note::Said(text)
    } else {
        Note::CheckFailed(text)
    }
}
