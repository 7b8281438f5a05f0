//! One cell of the bench: one API at one mock setting, from a fresh start to its stop.
//!
//! The API started in its cgroup and pinned to its CPU (it makes the tables); empty tables,
//! ledger and statistics; a checkpoint (so PostgreSQL does not flush the previous cell's pages
//! inside this window); the API's idle RSS; then the closed loop: warm-up, snapshot, window (RSS and busy gauge sampled twice a
//! second, each of the API's threads once a second for its CPU by thread role), snapshot, pg_stat_statements; the loop stopped (every client finishes the order it
//! has in flight) and the API stopped.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};

use super::analysis;
use super::probe::{self, Parts, Snapshot};
use super::{BenchArgs, Harness, Mocks};
use crate::api_env::ApiSettings;
use crate::run::{new_run_id, reset_mock, set_mock_latencies};
use crate::services::ApiProcess;
use lab_results::ApiKind;
use lab_results::bench::{BenchCell, MemoryFigures};
use labkit::threads::Watch;
use loadgen::driver::{DriverConfig, LoopControl};
use loadgen::profile::{Model, Profile};
use loadgen::thread_roles::cpu_by_role;
use order_core::plumbing::settings::CommonSettings;

/// How long the closed loop's clients may take to start.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Generator request timeout: far above any order's latency in a closed loop.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The settings every API gets (and `BLOCKING_THREADS` for blocking-api, and in what bench.json
/// records, `kind` `None`): the APIs' defaults, stated, with admission control off — the closed
/// loop bounds the load itself, and a refusal answered in microseconds would be counted as
/// throughput by nobody but cost CPU.
pub(super) fn common_settings(args: &BenchArgs, kind: Option<ApiKind>) -> ApiSettings {
    let defaults = CommonSettings::new("", "");
    ApiSettings {
        deps_url: None,
        db_pool_size: args.db_pool_size,
        db_pool_timeout_ms: defaults.db_pool_timeout_ms,
        deps_timeout_ms: defaults.deps_timeout_ms,
        deps_http: Some(args.deps_http),
        http_workers: defaults.http_workers as u32,
        db_tx_scope: Some(defaults.db_tx_scope),
        lease_ms: defaults.lease_ms,
        reconcile_interval_ms: defaults.reconcile_interval_ms,
        persist_batch: None,
        queue_timeout_ms: Some(defaults.queue_timeout_ms),
        // An hour: no deadline within a window.
        request_deadline_ms: Some(3_600_000),
        db_statement_timeout_ms: Some(defaults.db_statement_timeout_ms),
        max_loop_lag_ms: 0,
        max_in_flight: Some(0),
        events: None,
        blocking_threads: kind
            .is_none_or(ApiKind::has_thread_pool)
            .then_some(args.blocking_threads),
        deps_client: kind
            .is_none_or(ApiKind::has_thread_pool)
            .then_some(args.blocking_client),
    }
}

/// [`common_settings`] of `kind` with mock-deps at `deps_url`: with the database's URL
/// ([`ApiSettings::env_at`]), the environment of a cell's API.
pub(super) fn api_settings(args: &BenchArgs, deps_url: &str, kind: ApiKind) -> ApiSettings {
    ApiSettings {
        deps_url: Some(deps_url.to_owned()),
        ..common_settings(args, Some(kind))
    }
}

/// A closed loop of `clients` against `target` that sends `requests` orders in all (fresh
/// keys, 16 sellers, no duplicates) and then ends.
pub(super) fn closed_loop(target: &str, clients: u64, requests: u64) -> DriverConfig {
    DriverConfig {
        target: target.to_owned(),
        profile: Profile {
            name: format!("closed-{clients}"),
            model: Model::Closed { clients, requests },
            phases: Vec::new(),
            duration_scale: 1.0,
        },
        request_timeout: REQUEST_TIMEOUT,
        max_in_flight: clients,
        run_id: new_run_id(),
        sellers: 16,
        duplicate_ratio: 0.0,
        goose_reports: Vec::new(),
        progress: None,
        retry: None,
        sharding: Default::default(),
        transport_pause: None,
    }
}

/// Readies a just-started API for a measured window: pins it where the bench pins, empties the
/// tables its migrations made, resets mock-deps and checkpoints PostgreSQL.
pub(super) async fn prepare_window(h: &Harness, api: &str, pid: u32) -> Result<()> {
    if let Some(cpus) = &h.api_cpus {
        labkit::affinity::pin_process(pid, cpus)
            .with_context(|| format!("pinning {api} to CPU {cpus:?}"))?;
    }
    crate::invariants::truncate(&h.db.url).await?;
    reset_mock(&h.deps.url).await?;
    let mut conn = h.conn.lock().await;
    // Needs superuser; the lab's own cluster grants it, an external one may not.
    let _ = sqlx::query("CHECKPOINT").execute(&mut *conn).await;
    Ok(())
}

pub(super) async fn run(
    args: &BenchArgs,
    h: &Harness,
    api: &str,
    mocks: Mocks,
) -> Result<BenchCell> {
    let kind: ApiKind = api.parse().map_err(anyhow::Error::msg)?;
    let latency = mocks.latencies();
    let clients = args.clients_for(api, mocks);
    set_mock_latencies(&h.deps.url, latency).await?;
    let env = api_settings(args, &h.deps.url, kind).env_at(&h.api_database_url);
    let (name, pod, logs) = (api.to_owned(), args.pod(), h.logs.clone());
    let process =
        tokio::task::spawn_blocking(move || ApiProcess::start(&name, &env, pod, &logs)).await??;
    prepare_window(h, api, process.pid).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = labkit::counters::read_process(process.pid)?;

    let parts = Parts {
        api: process.pid,
        mock_deps: Some(h.deps.pid),
        postgres: h.db.pid,
        latency_proxy: h.proxy.as_ref().map(|p| p.pid()),
    };
    // More than any window needs: the loop is stopped, not run out.
    let driver = closed_loop(&process.url, clients, clients.saturating_mul(1_000_000_000));
    let control = Arc::new(LoopControl::default());
    let looping = tokio::spawn(loadgen::driver::drive_with(
        driver,
        Arc::new(OnceLock::new()),
        control.clone(),
    ));
    let measured = window(args, h, &process, parts, kind, clients, &control).await;
    control.stop();
    let outcomes = match looping.await {
        Ok(Ok(out)) => out.recorder.total.outcomes,
        Ok(Err(e)) => {
            eprintln!("bench: {api}: the closed loop ended with an error: {e:#}");
            BTreeMap::new()
        }
        Err(e) => {
            eprintln!("bench: {api}: the closed loop task failed: {e}");
            BTreeMap::new()
        }
    };
    let limits = process.limits.clone();
    tokio::task::spawn_blocking(move || process.stop()).await??;
    let (w, statements, samples, peak, stacks, threads) = measured?;

    let (mean_rss, mean_threads, mean_busy) = probe::means(&samples);
    let mut memory = MemoryFigures {
        idle_rss_bytes: idle.rss_bytes,
        peak_rss_bytes: peak,
        window_mean_rss_bytes: mean_rss,
        window_mean_threads: mean_threads,
        busy_kind: kind.busy_kind().to_owned(),
        window_mean_busy: mean_busy,
        rss_growth_per_busy_bytes: None,
        samples: samples.len() as u64,
        thread_stacks: stacks.map(|(n, _)| n),
        thread_stack_rss_bytes: stacks.map(|(_, rss)| rss),
    };
    memory.rss_growth_per_busy_bytes = analysis::growth_per_busy(&memory);
    // The machine's CPUs (this process is pinned: its own affinity would say fewer).
    let cores = labkit::counters::online_cpus() as f64;
    let pool = kind.has_thread_pool().then_some(args.blocking_threads);
    Ok(BenchCell {
        api: api.to_owned(),
        mocks: mocks.name().to_owned(),
        mock_latency_ms: latency,
        clients,
        limits,
        per_order: analysis::per_order(&w),
        orders_per_s: w.orders_per_s(),
        api_cpu_share: w.api_cpu_share(),
        bound: analysis::bound_reason(
            &w,
            &analysis::BoundContext {
                clients,
                busy: mean_busy,
                pool,
                cores,
                harness_cpus: h.harness_cpus.map(|n| n as f64),
            },
        ),
        cpu_by_role: threads.map(|a| cpu_by_role(&a, kind, 0.0, w.seconds)),
        window: w,
        memory,
        order_path_statements: analysis::order_path_statements(&statements),
        statements,
        outcomes,
    })
}

/// What the window measured: its counts, the statements, the memory samples, at its end the
/// API's peak RSS and its thread stacks (count, RSS), and its threads' use over it.
type Measured = (
    lab_results::bench::WindowCounts,
    Vec<lab_results::bench::StatementCalls>,
    Vec<probe::MemorySample>,
    u64,
    Option<(u64, u64)>,
    Option<labkit::threads::Account>,
);

/// Warm-up, then the measured window.
async fn window(
    args: &BenchArgs,
    h: &Harness,
    process: &ApiProcess,
    parts: Parts,
    kind: ApiKind,
    clients: u64,
    control: &LoopControl,
) -> Result<Measured> {
    // The warm-up counts from the moment every client has sent its first order (goose starts
    // its users over a while; a slow start must not eat into the warm-up).
    let deadline = tokio::time::Instant::now() + STARTUP_TIMEOUT;
    while control.requests_started() < clients {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the closed loop's clients did not all start within {STARTUP_TIMEOUT:?} ({} of {})",
            control.requests_started(),
            clients
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_secs_f64(args.warmup)).await;
    if let Some(cpus) = &h.api_cpus {
        // Threads the warm-up made came from pinned threads; this only catches a stray one.
        let _ = labkit::affinity::pin_process(process.pid, cpus);
    }
    let mut conn = h.conn.lock().await;
    // The API's threads, read once a second over the window (a thread of its own).
    let pid = process.pid;
    let watch = tokio::task::spawn_blocking(move || Watch::start(pid, Duration::from_secs(1)))
        .await?
        .map_err(|e| eprintln!("bench: the API's threads will not be split by role: {e:#}"))
        .ok();
    let start = Snapshot::take(parts, &mut conn, &h.deps.url).await?;
    if h.statements {
        probe::reset_statements(&mut conn).await?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let sampling = tokio::spawn(probe::sample_memory(
        process.pid,
        format!("{}/metrics", process.url),
        kind.busy_gauge(),
        stop.clone(),
    ));
    tokio::time::sleep_until((start.at + Duration::from_secs_f64(args.seconds)).into()).await;
    let end = Snapshot::take(parts, &mut conn, &h.deps.url).await?;
    let threads = match watch {
        Some(w) => tokio::task::spawn_blocking(move || w.finish())
            .await?
            .map_err(|e| eprintln!("bench: reading the API's threads failed: {e:#}"))
            .ok(),
        None => None,
    };
    stop.store(true, Ordering::SeqCst);
    let mut w = start.delta(&end);
    let statements = if h.statements {
        let s = probe::read_statements(&mut conn, w.orders).await?;
        w.sql_statements = Some(s.iter().map(|s| s.calls).sum());
        s
    } else {
        Vec::new()
    };
    let samples = sampling.await.unwrap_or_default();
    let pid = process.pid;
    let stacks = tokio::task::spawn_blocking(move || {
        labkit::counters::thread_stacks(pid, labkit::counters::DEFAULT_STACK_KIB).ok()
    })
    .await
    .ok()
    .flatten();
    Ok((
        w,
        statements,
        samples,
        end.api.peak_rss_bytes,
        stacks,
        threads,
    ))
}

#[cfg(test)]
#[path = "cell_env_tests.rs"]
mod env_tests;
