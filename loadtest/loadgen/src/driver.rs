//! The generator: goose drives the run, the open model is built on top of it.
//!
//! Goose users are closed-model (each waits for its response), so an open-model profile runs as
//! **one goose user whose single transaction is the scheduler**: it walks the precomputed arrival
//! schedule, sleeps until each arrival's intended time, and spawns the request as its own task on a
//! shared `reqwest::Client` — whether or not earlier requests returned. An arrival that finds
//! `max_in_flight` requests open is counted `not_sent`. Each finished request comes back to the
//! scheduler over a channel and is recorded into goose's metrics with
//! `record_custom_request_duration` (so goose's own reports count every request), and — by the task
//! itself — into the [`Recorder`]. Latency is measured from the intended time; lateness (actual −
//! intended start) is recorded too, so a generator that falls behind shows up instead of hiding.
//!
//! `closed-C-N` runs as C goose users, each iteration claiming one of N tickets and waiting for
//! its response (what `ab -c C -n N` does); there the intended time is the actual start.
//! `closed-C-for-S` runs as C goose users, each sending requests back to back in its one
//! iteration until S seconds after the run's first request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use goose::prelude::*;

use crate::body::BodyGen;
use crate::clock::{Clock, since};
use crate::http::order_client;
use crate::profile::Model;
use crate::progress::Progress;
use crate::recorder::Recorder;
use crate::retry::AttemptLog;
use crate::shard::{Shard, Tally};
use crate::shared::Shared;
use crate::start::{StartGate, StartRecord};
use lab_results::RetryRecord;

pub use crate::control::LoopControl;
pub use crate::shared::{DriverConfig, Sharding};

/// What the driver measured.
#[derive(Debug)]
pub struct DriverOutput {
    pub recorder: Recorder,
    /// Phases actually run (stress stops early).
    pub phases_run: usize,
    /// Wall-clock start of the run.
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// From the run's clock start (first arrival) to the last response.
    pub elapsed_s: Option<f64>,
    /// Retrying clients' attempts (with [`DriverConfig::retry`]).
    pub retries: Option<RetryRecord>,
    /// The open model's start (`None` for closed models, which start as their clients do).
    pub start: Option<StartRecord>,
    /// The arrivals offered (open model): with the shard and seed, what `loadtest merge` checks.
    pub tally: Tally,
    pub shard: Shard,
    /// The seed every arrival's draws came from.
    pub seed: u64,
}

/// Runs the profile against the target under goose; returns when every request has finished.
pub async fn drive(cfg: DriverConfig, clock: Clock) -> Result<DriverOutput> {
    drive_with(cfg, clock, Arc::new(LoopControl::default())).await
}

/// [`drive`], with a closed loop watched and stopped through `control`.
pub async fn drive_with(
    cfg: DriverConfig,
    clock: Clock,
    control: Arc<LoopControl>,
) -> Result<DriverOutput> {
    let client = order_client(cfg.request_timeout)?;
    let phases = cfg.profile.phases.len();
    let seed = cfg.sharding.seed.unwrap_or_else(|| seed(&cfg.run_id));
    if !matches!(cfg.profile.model, Model::Open)
        && (!cfg.sharding.shard.is_whole() || cfg.sharding.start != StartGate::Now)
    {
        anyhow::bail!(
            "--shard and a synchronised start need an open profile (closed clients run as they answer)"
        );
    }
    let gate = cfg.sharding.start.arm().await?;
    let progress = Progress::new(
        cfg.progress.as_deref().unwrap_or(""),
        &cfg.profile,
        cfg.progress.is_some(),
    );
    let shared = Arc::new(Shared {
        url: format!("{}/orders", cfg.target.trim_end_matches('/')),
        client,
        recorder: Mutex::new(Recorder::new(phases)),
        bodies: BodyGen::new(&cfg.run_id, cfg.sellers, cfg.duplicate_ratio, seed),
        gate: Mutex::new(Some(gate)),
        start_record: OnceLock::new(),
        tally: Mutex::new(Tally::default()),
        in_flight: AtomicU64::new(0),
        tickets: AtomicU64::new(0),
        clock,
        phases_run: AtomicU64::new(phases as u64),
        started_at: OnceLock::new(),
        progress: Mutex::new(progress),
        attempts: cfg.retry.as_ref().map(|p| Mutex::new(AttemptLog::new(p))),
        control,
        cfg,
    });
    let (users, iterations, transaction) = match shared.cfg.profile.model {
        Model::Open => {
            let s = shared.clone();
            let f: TransactionFunction =
                Arc::new(move |user| Box::pin(crate::scheduler::schedule(user, s.clone())));
            (1, 1, Transaction::new(f).set_name("open-model scheduler"))
        }
        Model::Closed { clients, requests } => {
            let s = shared.clone();
            let f: TransactionFunction =
                Arc::new(move |user| Box::pin(closed_request(user, s.clone())));
            (
                clients,
                requests.div_ceil(clients),
                Transaction::new(f).set_name("closed client"),
            )
        }
        Model::ClosedFor { clients, .. } => {
            let s = shared.clone();
            let f: TransactionFunction =
                Arc::new(move |user| Box::pin(closed_client_for(user, s.clone())));
            (
                clients,
                1,
                Transaction::new(f).set_name("timed closed client"),
            )
        }
    };
    let args = goose_args(&shared.cfg, users, iterations);
    let config = goose::config::GooseConfiguration::parse_args_default(&args)
        .map_err(|e| anyhow::anyhow!("goose configuration {args:?}: {e}"))?;
    GooseAttack::initialize_with_config(config)
        .context("initialising goose")?
        .register_scenario(scenario!("orders").register_transaction(transaction))
        .execute()
        .await
        .map_err(|e| anyhow::anyhow!("goose run failed: {e:?}"))?;
    shared
        .progress
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .finish();
    let shared = Arc::into_inner(shared).context("a request task outlived the run")?;
    let elapsed_s = shared.clock.get().map(|t| t.elapsed().as_secs_f64());
    Ok(DriverOutput {
        elapsed_s,
        recorder: shared
            .recorder
            .into_inner()
            .unwrap_or_else(|e| e.into_inner()),
        phases_run: shared.phases_run.load(Ordering::SeqCst) as usize,
        retries: shared
            .attempts
            .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()).finish()),
        started_at: shared
            .started_at
            .get()
            .copied()
            .unwrap_or_else(chrono::Utc::now),
        start: shared.start_record.get().copied(),
        tally: shared.tally.into_inner().unwrap_or_else(|e| e.into_inner()),
        shard: shared.cfg.sharding.shard,
        seed,
    })
}

fn goose_args(cfg: &DriverConfig, users: u64, iterations: u64) -> Vec<String> {
    let mut args: Vec<String> = [
        "--host",
        &cfg.target,
        "--users",
        &users.to_string(),
        "--increase-rate",
        &users.max(1000).to_string(),
        "--iterations",
        &iterations.to_string(),
        "--timeout",
        &cfg.request_timeout.as_secs_f64().to_string(),
        "--co-mitigation",
        "disabled",
        "--no-print-metrics",
        "--no-telnet",
        "--quiet",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for file in &cfg.goose_reports {
        args.extend(["--report-file".to_owned(), file.clone()]);
    }
    args
}

fn seed(run_id: &str) -> u64 {
    run_id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// How often a client of a stopped closed loop looks again for goose's exit message.
const STOPPED_POLL: Duration = Duration::from_millis(50);

/// One closed-model request: claim a ticket, send, wait, record.
async fn closed_request(user: &mut GooseUser, s: Arc<Shared>) -> TransactionResult {
    let t0 = s.start();
    let Model::Closed { requests, .. } = s.cfg.profile.model else {
        return Ok(());
    };
    let stopped = s.control.stop.load(Ordering::SeqCst);
    if stopped || goose::is_killswitch_triggered() {
        if stopped {
            goose::trigger_killswitch("closed loop stopped");
        }
        // Stopped early: wait for goose's exit message instead of spinning. A transaction that
        // returns without awaiting never yields, so C clients looping on it would starve the
        // runtime (goose's controller among it) and flood goose's metrics channel.
        tokio::time::sleep(STOPPED_POLL).await;
        return Ok(());
    }
    if s.tickets.fetch_add(1, Ordering::SeqCst) >= requests {
        return Ok(());
    }
    closed_one(user, &s, t0).await
}

/// A `closed-C-for-S` client: requests back to back until S seconds after the run's start.
async fn closed_client_for(user: &mut GooseUser, s: Arc<Shared>) -> TransactionResult {
    let t0 = s.start();
    let Model::ClosedFor { seconds, .. } = s.cfg.profile.model else {
        return Ok(());
    };
    while t0.elapsed().as_secs_f64() < seconds
        && !goose::is_killswitch_triggered()
        && !s.control.stop.load(Ordering::SeqCst)
    {
        closed_one(user, &s, t0).await?;
    }
    Ok(())
}

/// One request of a closed-model client: send, wait, record.
async fn closed_one(user: &mut GooseUser, s: &Shared, t0: Instant) -> TransactionResult {
    let j = s.control.started.fetch_add(1, Ordering::SeqCst);
    let request = s.bodies.request(j);
    let start = Instant::now();
    {
        let mut rec = s.rec();
        rec.offered(since(t0, start), 0);
        rec.sent(since(t0, start), Duration::ZERO, 0);
    }
    s.progress
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .arrival(0);
    let outcome = s.send(t0, &request).await;
    let end = Instant::now();
    let latency = end.saturating_duration_since(start);
    {
        let mut rec = s.rec();
        rec.completed(since(t0, start), since(t0, end), latency, 0, &outcome.kind);
        rec.keys.note(&request, &outcome.kind);
    }
    crate::scheduler::record_in_goose(user, crate::scheduler::Done { latency, outcome }).await
}
