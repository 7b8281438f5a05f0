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
//! The closed models run as C goose users, each sending requests back to back in its one
//! iteration, the next when the last answered; there the intended time is the actual start.
//! `closed-C-N` clients each claim their next request from the N between them until none is left
//! (what `ab -c C -n N` does: a slow client's share goes to the others); `closed-C-for-S` clients
//! go on until S seconds after the run's first request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use goose::client::GooseClientBuilder;
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
use lab_results::{OUTCOME_CONNECT_ERROR, OUTCOME_IO_ERROR, RetryRecord};

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
    /// From the run's clock start (first arrival) to goose's return: the last response and
    /// then goose's own shutdown (its controller wakes at most every 500 ms).
    pub elapsed_s: Option<f64>,
    /// From the run's clock start to the last response (or failure); `None` when none came.
    pub last_answer_s: Option<f64>,
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
        last_answer_us: AtomicU64::new(0),
        clock,
        phases_run: AtomicU64::new(phases as u64),
        started_at: OnceLock::new(),
        progress: Mutex::new(progress),
        attempts: cfg.retry.as_ref().map(|p| Mutex::new(AttemptLog::new(p))),
        control,
        cfg,
    });
    let (users, iterations, transaction) = users_and_transaction(&shared);
    attack(&shared.cfg, users, iterations, transaction).await?;
    shared
        .progress
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .finish();
    let shared = Arc::into_inner(shared).context("a request task outlived the run")?;
    Ok(output(shared, seed))
}

/// Goose's users, iterations and transaction: one scheduler that sends every arrival of an open
/// profile, or one user per closed client.
fn users_and_transaction(shared: &Arc<Shared>) -> (u64, u64, Transaction) {
    match shared.cfg.profile.model {
        Model::Open => {
            let s = shared.clone();
            let f: TransactionFunction =
                Arc::new(move |user| Box::pin(crate::scheduler::schedule(user, s.clone())));
            (1, 1, Transaction::new(f).set_name("open-model scheduler"))
        }
        Model::Closed { clients, .. } | Model::ClosedFor { clients, .. } => {
            let s = shared.clone();
            let f: TransactionFunction =
                Arc::new(move |user| Box::pin(closed_client(user, s.clone())));
            let name = match shared.cfg.profile.model {
                Model::ClosedFor { .. } => "timed closed client",
                _ => "closed client",
            };
            (clients, 1, Transaction::new(f).set_name(name))
        }
    }
}

/// Goose's run of the transaction with `users` users.
async fn attack(
    cfg: &DriverConfig,
    users: u64,
    iterations: u64,
    transaction: Transaction,
) -> Result<()> {
    let args = goose_args(cfg, users, iterations);
    let config = goose::config::GooseConfiguration::parse_args_default(&args)
        .map_err(|e| anyhow::anyhow!("goose configuration {args:?}: {e}"))?;
    GooseAttack::initialize_with_config(config)
        .context("initialising goose")?
        // Goose's own clients send nothing (every request goes through `order_client`): one
        // client shared by the users, not one each, which loads the TLS roots again (in a debug
        // build some 10 ms of CPU per user, spent as the run starts).
        .set_client_builder_without_cookies(GooseClientBuilder::new().without_cookies())
        .context("goose's client")?
        .register_scenario(scenario!("orders").register_transaction(transaction))
        .execute()
        .await
        .map_err(|e| anyhow::anyhow!("goose run failed: {e:?}"))?;
    Ok(())
}

/// What the run recorded, once every request has finished.
fn output(shared: Shared, seed: u64) -> DriverOutput {
    let elapsed_s = shared.clock.get().map(|t| t.elapsed().as_secs_f64());
    let last_answer_us = shared.last_answer_us.load(Ordering::SeqCst);
    DriverOutput {
        elapsed_s,
        last_answer_s: (last_answer_us > 0).then(|| last_answer_us as f64 / 1e6),
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
    }
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

/// A closed-model client: requests back to back, each sent when the last one answered, until
/// the loop is stopped or the profile's end: no request left of the N (`closed-C-N`), or S
/// seconds after the run's start (`closed-C-for-S`). With [`DriverConfig::transport_pause`], a
/// request that failed in transport is followed by that pause.
async fn closed_client(user: &mut GooseUser, s: Arc<Shared>) -> TransactionResult {
    let t0 = s.start();
    let more = || match s.cfg.profile.model {
        Model::Closed { requests, .. } => s.tickets.fetch_add(1, Ordering::SeqCst) < requests,
        Model::ClosedFor { seconds, .. } => t0.elapsed().as_secs_f64() < seconds,
        Model::Open => false,
    };
    while !goose::is_killswitch_triggered() && !s.control.stop.load(Ordering::SeqCst) && more() {
        let transport_failed = closed_one(user, &s, t0).await?;
        if let (true, Some(pause)) = (transport_failed, s.cfg.transport_pause) {
            tokio::time::sleep(pause).await;
        }
    }
    Ok(())
}

/// One request of a closed-model client: send, wait, record; `Ok(true)` when it failed in
/// transport (refused or reset).
async fn closed_one(
    user: &mut GooseUser,
    s: &Shared,
    t0: Instant,
) -> Result<bool, Box<TransactionError>> {
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
    s.answered(t0, end);
    let latency = end.saturating_duration_since(start);
    {
        let mut rec = s.rec();
        rec.completed(since(t0, start), since(t0, end), latency, 0, &outcome.kind);
        rec.keys.note(&request, &outcome.kind);
    }
    s.control.answered.fetch_add(1, Ordering::SeqCst);
    let transport_failed =
        [OUTCOME_CONNECT_ERROR, OUTCOME_IO_ERROR].contains(&outcome.kind.as_str());
    crate::scheduler::record_in_goose(user, crate::scheduler::Done { latency, outcome }).await?;
    Ok(transport_failed)
}
