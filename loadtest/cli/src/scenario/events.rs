//! `--scenario events` (SEEDS.md C): publishing the order event under a slow broker —
//! two-phase commit vs after-commit vs transactional outbox, on NATS JetStream.
//!
//! The original's protocol: `ab -c 30 -n 3000` (a closed model), a pool of 10 with 5 s waits, a
//! service doing only database and broker work (here: mocks at 0 ms). For each API × mode ×
//! broker {healthy: no delay; slowed: [`SLOW_BROKER_MS`] added to every round trip to NATS by a
//! latency proxy, for the whole run}, then a crash run per API × mode (`kill -9` of the API after
//! a third of the requests, restarted at once, recovery, census). Rows go to the table
//! (summary.md, scenario.html, printed) and to `scenario.json`.
//!
//! What differs from the original, and why: the broker is slowed by a fixed added round trip (the
//! issue's latency proxy), not by throttling its container to 0.05 CPU, so the slowed broker is
//! slow per call but not a queue; the slowed runs send [`SLOWED_REQUESTS`] orders, not 3000 (at a
//! two-phase pace of ~3 orders/s, 3000 would take a quarter of an hour per run); the numbers are
//! means, where the original printed medians; every order also calls the three mocks (at 0 ms).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lab_results::numbers::{fixed, ms_or_s};

use crate::lab::events::{EventsLab, EventsRow, EventsRun};
use crate::lab_args::LabArgs;

use lab_report::scenario::{ScenarioTable, render_html, render_markdown};

/// Round trip the proxy adds to the broker in the slowed runs.
pub const SLOW_BROKER_MS: u64 = 3000;
/// The original's load.
pub const CLIENTS: usize = 30;
pub const REQUESTS: u64 = 3000;
/// Orders per slowed run.
pub const SLOWED_REQUESTS: u64 = 300;
pub const MODES: [&str; 3] = ["two-phase", "after-commit", "outbox"];

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

/// The runs: healthy, slowed, crash; each for every mode and API. `--duration-scale` scales
/// the request counts (a smoke run: 0.1).
pub fn runs(base: &LabArgs) -> Vec<EventsRun> {
    let scale = base.load.duration_scale.max(0.001);
    let n = |requests: u64| ((requests as f64 * scale).round() as u64).max(CLIENTS as u64);
    let mut out = Vec::new();
    let inject = base.inject_broker();
    for (broker, rtt, requests) in [
        ("healthy", 0, n(REQUESTS)),
        ("slowed", SLOW_BROKER_MS, n(SLOWED_REQUESTS)),
    ] {
        for mode in MODES {
            for api in &base.apis {
                out.push(EventsRun {
                    api: crate::lab_args::api_names(api).0,
                    mode,
                    broker,
                    broker_rtt_ms: rtt,
                    clients: CLIENTS,
                    requests,
                    crash_after: None,
                    inject: if broker == "healthy" { inject } else { None },
                });
            }
        }
    }
    for mode in MODES {
        for api in &base.apis {
            let requests = n(REQUESTS);
            out.push(EventsRun {
                api: crate::lab_args::api_names(api).0,
                mode,
                broker: "healthy",
                broker_rtt_ms: 0,
                clients: CLIENTS,
                requests,
                crash_after: Some(requests / 3),
                inject: None,
            });
        }
    }
    out
}

/// Runs the scenario; writes scenario.json, summary.md and scenario.html.
pub async fn run(base: LabArgs) -> Result<(ScenarioTable, PathBuf)> {
    let out = base.out.clone().unwrap_or_else(|| {
        Path::new("reports").join(format!(
            "{}-scenario-events",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ))
    });
    let logs = out.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    if base.targets.is_empty() {
        let apis = base.apis.clone();
        tokio::task::spawn_blocking(move || crate::services::build_services(&apis)).await??;
    } else {
        anyhow::bail!("--scenario events starts its own APIs, NATS and proxy (no --targets)");
    }
    let lab = EventsLab::start(base.database_url.clone(), &logs, !base.no_limits).await?;
    let mut rows = Vec::new();
    let runs = runs(&base);
    let total = runs.len();
    for (i, r) in runs.iter().enumerate() {
        eprintln!(
            "scenario events: run {}/{total} — {} {} broker {}{}",
            i + 1,
            r.api,
            r.mode,
            r.broker,
            if r.crash_after.is_some() {
                ", crash"
            } else {
                ""
            }
        );
        let row = lab
            .run(r, 0x5eed + i as u64)
            .await
            .with_context(|| format!("{} {} {}", r.api, r.mode, r.broker))?;
        eprintln!("  {}", serde_json::to_string(&row)?);
        rows.push(row);
        // Written after every run: an interrupted scenario keeps what it measured.
        std::fs::write(out.join("scenario.json"), serde_json::to_vec_pretty(&rows)?)?;
    }
    let mut table = table(&rows);
    super::findings::apply(&mut table, "events", &serde_json::to_value(&rows)?)?;
    table.conditions = super::conditions::conditions();
    std::fs::write(out.join("summary.md"), render_markdown(&table))?;
    std::fs::write(out.join("scenario.html"), render_html(&table))?;
    Ok((table, out))
}

pub fn table(rows: &[EventsRow]) -> ScenarioTable {
    let count = |broker: &str, crash: bool| {
        rows.iter()
            .find(|r| r.broker == broker && r.crash == crash)
            .map_or(0, |r| r.requests)
    };
    let mut notes = vec![
        format!(
            "Closed model: {CLIENTS} clients, each sending its next order when the last answered \
             (ab -c 30). Healthy runs send {} orders (the original: {REQUESTS}), slowed runs {} (a \
             fixed {SLOW_BROKER_MS} ms round trip added between the API and NATS by a latency \
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
        notes,
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
