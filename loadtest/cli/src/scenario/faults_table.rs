//! The `faults` scenario's table: per API, how the retrying clients ended, what the gateway
//! charged against the orders, and how long each fault kept the API from answering 201.

use lab_results::faults::{DB_RESTART_LABEL, KILL_LABEL};
use lab_results::{MoneyRecord, RetryRecord, RunResults};

use super::Variant;
use super::render::ScenarioTable;

/// The rate both APIs get, orders/s: a third of blocking-api's Little's-law ceiling with the seed
/// latencies (200 threads ÷ 2.2 s ≈ 91/s), so that retries after a fault find room.
pub const RATE: u32 = 30;
/// Length of the constant-rate run, seconds (before `--duration-scale`).
pub const DURATION_S: u32 = 60;
/// The fault plan: payment faults throughout, the API killed at 20 s, PostgreSQL at 40 s.
pub const PLAN: &str = "pay-error=0.05,pay-hang=0.01,pay-charged-error=0.02,hang-ms=8000,\
                        kill-api@20+2,restart-db@40";

pub fn faults(done: &[(Variant, Vec<RunResults>)]) -> ScenarioTable {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for r in done.iter().flat_map(|(_, runs)| runs) {
        let retries = r.retries.as_ref();
        let money = r.money.as_ref();
        let n = |v: Option<u64>| v.map_or("—".to_owned(), |v| v.to_string());
        rows.push(vec![
            r.api.clone(),
            n(retries.map(|x| x.clients)),
            n(retries.map(|x| x.attempts)),
            n(retries.map(created_attempts)),
            n(retries.map(|x| x.ended_created)),
            retries.map_or("—".into(), terminal),
            n(retries.map(|x| x.ended_gave_up)),
            n(money.map(|m| m.charges)),
            n(money.map(|m| m.voids)),
            n(money.map(|m| m.orders)),
            n(money.map(|m| m.charges_without_order)),
            n(money.map(|m| m.orders_without_charge)),
            n(money.map(|m| m.double_charges)),
            recovered(retries, KILL_LABEL),
            recovered(retries, DB_RESTART_LABEL),
        ]);
        notes.push(verdict(r.api.as_str(), retries, money));
        if let Some(x) = retries {
            let kinds: Vec<String> = x
                .attempts_by_outcome
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            notes.push(format!(
                "{}: attempts by answer: {}; at most {} attempts for one client.",
                r.api,
                kinds.join(", "),
                x.max_attempts
            ));
        }
        let events: Vec<String> = r
            .events
            .iter()
            .filter(|e| e.t > 0.0 && !e.label.contains("→"))
            .map(|e| format!("{:.1} s {}", e.t, e.label))
            .collect();
        if !events.is_empty() {
            notes.push(format!("{}: {}.", r.api, events.join("; ")));
        }
    }
    notes.push(
        "Process figures (CPU, memory, threads) in each run's report stop at the kill: the sampler \
         follows the first process only."
            .to_owned(),
    );
    ScenarioTable {
        title: "Money through faults".into(),
        intro: format!(
            "Both APIs at a constant {RATE} orders/s for {DURATION_S} s (seed latencies 200/1000/1000 ms), each \
             arrival one client that retries: same reference_id and body, at least Retry-After and a capped \
             exponential backoff (250 ms doubling to 8 s, ±50 %), giving up 60 s after its first attempt. \
             Throughout: 5 % of payments answered 503, 1 % hanging 8 s (the APIs time out at DEPS_TIMEOUT_MS \
             5 s), 2 % charged then answered 500. At 20 s the API is killed (kill -9) and started again 2 s \
             later with the same settings; at 40 s PostgreSQL restarts -m immediate (durable: fsync and synchronous_commit on). \
             LEASE_MS 15000, RECONCILE_INTERVAL_MS 2000. Money is counted once no key is CHARGING."
        ),
        columns: [
            "API",
            "clients",
            "requests",
            "201s",
            "ended 201",
            "ended terminal 4xx",
            "gave up",
            "charges",
            "voids",
            "orders",
            "charges without order",
            "orders without charge",
            "double charges",
            "first 201 after kill -9",
            "first 201 after DB restart",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        notes,
        links: Vec::new(),
        ..ScenarioTable::default()
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

/// The scenario's verdict for one API: money balanced and every client ended with an answer.
fn verdict(api: &str, r: Option<&RetryRecord>, m: Option<&MoneyRecord>) -> String {
    let (Some(r), Some(m)) = (r, m) else {
        return format!("CHECK FAILED: {api}: money or client outcomes were not counted.");
    };
    let ok = m.charges_without_order == 0 && m.double_charges == 0 && r.ended_gave_up == 0;
    let text = format!(
        "{api}: {} charges without order, {} double charges, {} clients gave up (of {}).",
        m.charges_without_order, m.double_charges, r.ended_gave_up, r.clients
    );
    if ok {
        text
    } else {
        format!("CHECK FAILED: {text}")
    }
}
