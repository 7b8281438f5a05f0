//! The `events` scenario's table: per API × event mode × broker (healthy, slowed, crash), the
//! rate, latency and errors the clients saw, the API's pool timeouts and connections, and the
//! census of orders against events in the stream (lost, duplicated, orphaned), beside the
//! original's figures. The rows are the lab's (`lab_results::scenario::EventsRow`, its own
//! closed-model runs); the plan's figures the page states come in as a [`Plan`].

use lab_results::numbers::{fixed, ms_or_s};
use lab_results::scenario::EventsRow;

use super::{Note, ScenarioTable};

/// What the page states of the plan the lab ran.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Closed-model clients.
    pub clients: usize,
    /// The original's orders per run (`ab -n`).
    pub requests: u64,
    /// Round trip the proxy adds to the broker in the slowed runs, ms.
    pub slow_broker_ms: u64,
}

/// The scenario's table: a row per run, the protocol and its differences from the original in
/// the notes.
pub fn table(rows: &[EventsRow], plan: &Plan) -> ScenarioTable {
    let (clients, requests, slow_broker_ms) = (plan.clients, plan.requests, plan.slow_broker_ms);
    let count = |broker: &str, crash: bool| {
        rows.iter()
            .find(|r| r.broker == broker && r.crash == crash)
            .map_or(0, |r| r.requests)
    };
    let mut notes = vec![
        format!(
            "Closed model: {clients} clients, each sending its next order when the last answered \
             (ab -c 30). Healthy runs send {} orders (the original: {requests}), slowed runs {} (a \
             fixed {slow_broker_ms} ms round trip added between the API and NATS by a latency \
             proxy), crash runs {} with kill -9 of the API after a third and an immediate \
             restart. Pool 10, 5 s acquire timeout, mocks at 0 ms, PostgreSQL durable \
             (fsync and synchronous_commit on), NATS_TIMEOUT_MS 5000.",
            count("healthy", false),
            count("slowed", false),
            count("healthy", true),
        ),
        "req/s counts every answer over the run's length (as ab does); mean and max are over every \
         request. Errors are the clients' view: HTTP status and machine code (503 \
         database_unavailable is a pool acquire that timed out), or a transport failure \
         (connection: the API was down). Pool timeouts are the API's own count \
         (db_pool_acquire_timeouts_total)."
            .to_owned(),
        "Events are counted after the API settled (no unsent outbox row, no prepared \
         transaction, no key in CHARGING): lost = orders in PostgreSQL without their \
         orders.created.<id> subject in the stream; duplicated = messages beyond one per subject; \
         orphaned = events whose order does not exist. Orders include those completed by recovery \
         after a crash (their client got an error)."
            .to_owned(),
        "Differences from the original (SEEDS.md C: Spring Boot, Narayana XA, ActiveMQ Artemis): \
         the broker is slowed by an added round trip, not a 0.05-CPU container, so it is slow per \
         call but not a queue; slowed runs are shorter; means, not medians; two-phase is \
         PostgreSQL PREPARE TRANSACTION with the broker as the last resource (no XA coordinator); \
         every order also calls the three mocks."
            .to_owned(),
    ];
    for r in rows {
        if !r.settled {
            notes.push(format!(
                "{} {} ({}{}): did not settle within the lab's wait; the census is as it stood.",
                r.api,
                r.mode,
                r.broker,
                if r.crash { ", crash" } else { "" }
            ));
        }
    }
    ScenarioTable {
        title: "Experiment C: the order event under a slow broker".into(),
        intro: "Two-phase commit (PREPARE TRANSACTION, publish, COMMIT PREPARED) against \
                after-commit (commit, then publish) and the transactional outbox (event row in \
                the order's transaction, relayed with Nats-Msg-Id), NATS JetStream, both APIs."
            .into(),
        columns: [
            "API",
            "mode",
            "broker",
            "crash",
            "req/s",
            "mean",
            "errors (by kind)",
            "pool timeouts",
            "lost",
            "max",
            "peak conns in use",
            "orders",
            "events in stream",
            "duplicated",
            "orphaned",
            "outbox backlog peak / drain",
            "original",
        ]
        .map(String::from)
        .to_vec(),
        rows: rows.iter().map(row).collect(),
        notes: notes.into_iter().map(Note::from).collect(),
        links: Vec::new(),
        // API, mode, broker, crash, req/s, mean, errors, pool timeouts, lost; the rest folded.
        main_columns: 9,
        ..ScenarioTable::default()
    }
}

fn row(r: &EventsRow) -> Vec<String> {
    let kinds: Vec<String> = r
        .errors_by_kind
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    let errors = if kinds.is_empty() {
        "0".to_owned()
    } else {
        format!("{} ({})", r.errors, kinds.join(", "))
    };
    let broker = match r.broker.as_str() {
        "slowed" => format!("slowed (+{} ms)", r.broker_rtt_ms),
        other => other.to_owned(),
    };
    vec![
        r.api.clone(),
        r.mode.clone(),
        broker,
        if r.crash { "kill -9" } else { "—" }.to_owned(),
        format!("{:.1}", r.req_per_s),
        ms_or_s(r.mean_ms),
        errors,
        r.pool_timeouts.map_or("—".to_owned(), |n| n.to_string()),
        r.events_lost.to_string(),
        ms_or_s(r.max_ms),
        fixed(r.peak_connections_in_use as f64, 0),
        r.orders.to_string(),
        r.events_in_stream.to_string(),
        r.events_duplicated.to_string(),
        r.events_orphaned.to_string(),
        if r.mode == "outbox" {
            format!(
                "{} / {}",
                r.outbox_backlog_peak,
                r.outbox_drain_s
                    .map_or("—".to_owned(), |s| format!("{s:.1} s"))
            )
        } else {
            "—".to_owned()
        },
        if r.crash {
            "—".to_owned()
        } else {
            original(&r.broker, &r.mode).to_owned()
        },
    ]
}

/// The original's numbers (SEEDS.md C), for the table's last column: (broker, mode) → text.
fn original(broker: &str, mode: &str) -> &'static str {
    match (broker, mode) {
        ("healthy", "two-phase") => "478 req/s, 55 ms median, 0 errors",
        ("healthy", _) => "no 2PC: 989 req/s, 22 ms median, 0 errors",
        ("slowed", "two-phase") => "18 req/s, 1204 ms median, 23 pool timeouts",
        ("slowed", _) => "no 2PC: 32 req/s, 701 ms median, 0 errors",
        _ => "—",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(broker: &str, mode: &str, crash: bool) -> EventsRow {
        EventsRow {
            api: "blocking-api".to_owned(),
            mode: mode.to_owned(),
            broker: broker.to_owned(),
            crash,
            req_per_s: 18.04,
            mean_ms: 1500.0,
            max_ms: 3200.0,
            errors: 2,
            orders: 298,
            events_in_stream: 298,
            events_lost: 0,
            events_duplicated: 0,
            requests: 300,
            broker_rtt_ms: 3000,
            errors_by_kind: [("503 database_unavailable".to_owned(), 2)].into(),
            pool_timeouts: Some(2),
            peak_connections_in_use: 10,
            events_orphaned: 0,
            outbox_backlog_peak: 0,
            outbox_drain_s: None,
            settled: !crash,
        }
    }

    #[test]
    fn a_slowed_two_phase_row_stands_beside_the_original_and_an_unsettled_run_is_noted() {
        let plan = Plan {
            clients: 30,
            requests: 3000,
            slow_broker_ms: 3000,
        };
        let t = table(
            &[
                row("slowed", "two-phase", false),
                row("healthy", "outbox", true),
            ],
            &plan,
        );
        assert_eq!(t.columns.len(), t.rows[0].len());
        assert_eq!(
            t.rows[0][..8],
            [
                "blocking-api",
                "two-phase",
                "slowed (+3000 ms)",
                "—",
                "18.0",
                "1.50 s",
                "2 (2 503 database_unavailable)",
                "2"
            ]
        );
        assert_eq!(t.rows[0][16], "18 req/s, 1204 ms median, 23 pool timeouts");
        assert_eq!(
            (t.rows[1][3].as_str(), t.rows[1][16].as_str()),
            ("kill -9", "—")
        );
        assert_eq!(t.rows[1][15], "0 / —", "an outbox row shows its backlog");
        assert!(
            t.notes[0].text().starts_with("Closed model: 30 clients"),
            "{}",
            t.notes[0]
        );
        assert!(
            t.notes[0]
                .text()
                .contains("slowed runs 300 (a fixed 3000 ms round trip")
        );
        assert!(
            t.notes.last().is_some_and(|n| n
                .text()
                .starts_with("blocking-api outbox (healthy, crash): did not settle")),
            "{:?}",
            t.notes
        );
    }
}
