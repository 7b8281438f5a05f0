//! `--scenario events` (SEEDS.md C): publishing the order event under a slow broker —
//! two-phase commit vs after-commit vs transactional outbox, on NATS JetStream.
//!
//! The original's protocol: `ab -c 30 -n 3000` (a closed model), a pool of 10 with 5 s waits, a
//! service doing only database and broker work (here: mocks at 0 ms). For each API × mode ×
//! broker {healthy: no delay; slowed: [`SLOW_BROKER_MS`] added to every round trip to NATS by a
//! latency proxy, for the whole run}, then a crash run per API × mode (`kill -9` of the API after
//! a third of the requests, restarted at once, recovery, census). Rows go to the table
//! (`lab_report::scenario::events`: summary.md, scenario.html, printed) and to `scenario.json`.
//!
//! What differs from the original, and why: the broker is slowed by a fixed added round trip (a
//! latency proxy in front of NATS), not by throttling its container to 0.05 CPU, so the slowed
//! broker is slow per call but not a queue; the slowed runs send [`SLOWED_REQUESTS`] orders, not
//! 3000 (at a two-phase pace of ~3 orders/s, 3000 would take a quarter of an hour per run); the
//! numbers are means, where the original printed medians; every order also calls the three mocks
//! (at 0 ms).
//!
//! One run — its API, NATS and proxy, the closed-model load, the census after it — is
//! `one_run.rs`; this module plans the runs and makes the table.

pub mod one_run;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::lab_args::LabArgs;
use one_run::{EventsLab, EventsRun};

use lab_report::scenario::events::{self, Plan};
use lab_report::scenario::{ScenarioTable, render_html, render_markdown};

/// Round trip the proxy adds to the broker in the slowed runs.
pub const SLOW_BROKER_MS: u64 = 3000;
/// The original's load.
pub const CLIENTS: usize = 30;
pub const REQUESTS: u64 = 3000;
/// Orders per slowed run.
pub const SLOWED_REQUESTS: u64 = 300;
pub const MODES: [&str; 3] = ["two-phase", "after-commit", "outbox"];

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
            for api in &base.harness.apis {
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
        for api in &base.harness.apis {
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
    let out = base.harness.out.clone().unwrap_or_else(|| {
        Path::new("reports").join(format!(
            "{}-scenario-events",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ))
    });
    let logs = out.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    if base.targets.is_empty() {
        let apis = base.harness.apis.clone();
        tokio::task::spawn_blocking(move || crate::services::build_services(&apis)).await??;
    } else {
        anyhow::bail!("--scenario events starts its own APIs, NATS and proxy (no --targets)");
    }
    let lab = EventsLab::start(&base.harness, &logs).await?;
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
    let mut table = events::table(
        &rows,
        &Plan {
            clients: CLIENTS,
            requests: REQUESTS,
            slow_broker_ms: SLOW_BROKER_MS,
        },
    );
    super::findings::apply_events(&mut table, &serde_json::to_value(&rows)?)?;
    table.conditions = super::conditions::conditions();
    std::fs::write(out.join("summary.md"), render_markdown(&table))?;
    std::fs::write(out.join("scenario.html"), render_html(&table))?;
    Ok((table, out))
}
