//! One measured run against one target: the driver, the sampler beside it, then assembly.
//! Used by `loadtest run` directly and by `loadtest lab` once per API per repeat.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};

use lab_results::{ApiKind, Environment, MockLatencies, RunResults};
use loadgen::assemble::{RunMeta, assemble};
use loadgen::clock::Clock;
use loadgen::driver::{DriverConfig, drive};
use loadgen::gave_up::OrderKey;
use loadgen::sampler::{self, SampleTargets};
use loadgen::thread_roles::cpu_by_role;
use mock_deps::admin::{self, ConfigPatch, Ledger, MockConfig};

/// Descriptors the generator keeps for itself beside its open requests: `/proc` reads, `/metrics`
/// scrapes, admin calls, logs, the database checks.
const FD_HEADROOM: u64 = 1024;

/// Raises the open-file limit (children inherit it) and returns the in-flight cap the generator
/// can honour under it. Every open request is one of the generator's sockets: a cap at the limit
/// would turn the generator's own "too many open files" into connect errors blamed on the API
/// and blind the sampler, so a cap above `limit − headroom` is lowered, and said so.
pub fn fit_in_flight_cap(requested: u64) -> u64 {
    let limit = labkit::process::raise_nofile_limit().unwrap_or(1024);
    let usable = limit.saturating_sub(FD_HEADROOM).max(1);
    if requested > usable {
        eprintln!(
            "warning: in-flight cap lowered from {requested} to {usable}: this process may open only \
             {limit} files (raise `ulimit -n` to keep the cap)"
        );
        usable
    } else {
        requested
    }
}

/// Runs `driver` while sampling `targets`; returns the assembled results (no invariants yet) and
/// the keys whose client gave up without an answer (see [`crate::gave_up`]).
pub async fn measure(
    driver: DriverConfig,
    meta: RunMeta,
    targets: SampleTargets,
) -> Result<(RunResults, Vec<OrderKey>)> {
    measure_on(Arc::new(OnceLock::new()), driver, meta, targets).await
}

/// [`measure`] on a clock the caller holds: it is set when the first arrival is due, so events
/// scheduled against it (injected faults) land at exact times of the run.
pub async fn measure_on(
    clock: Clock,
    driver: DriverConfig,
    meta: RunMeta,
    targets: SampleTargets,
) -> Result<(RunResults, Vec<OrderKey>)> {
    let profile = driver.profile.clone();
    let stop = Arc::new(AtomicBool::new(false));
    // The API's threads are read over the plateau, the window of its CPU per order.
    let plateau = profile
        .plateau_seconds()
        .map(|(from, to)| (from as u64, to as u64));
    let sampling = tokio::spawn(sampler::spawn(
        targets,
        clock.clone(),
        stop.clone(),
        plateau,
    ));
    let out = drive(driver, clock).await;
    stop.store(true, Ordering::SeqCst);
    let sampled = sampling
        .await
        .context("the sampler task failed")?
        .context("the sampler's thread failed")?;
    let out = out?;
    let mut results = assemble(meta, &profile, &out, &sampled.rows);
    results.cpu_by_role = sampled
        .threads
        .zip(ApiKind::of(&results.api))
        .map(|((from, to, account), kind)| cpu_by_role(&account, kind, from, to));
    Ok((results, out.recorder.keys.abandoned()))
}

/// The machine and build, from labkit, in the results' terms.
pub fn environment(build_profile: &str) -> Environment {
    let e = labkit::envinfo::Environment::capture();
    Environment {
        cores: u32::try_from(e.cores).unwrap_or(u32::MAX),
        cpu_model: e.cpu_model,
        kernel: e.kernel,
        os: e.os,
        memory_bytes: e.total_memory_bytes,
        rustc: e.rustc,
        git_sha: e.git_sha,
        build_profile: build_profile.to_owned(),
    }
}

/// A short id for this invocation (`r` + UTC time + 4 random hex digits): prefixes every key.
pub fn new_run_id() -> String {
    format!(
        "r{}{:04x}",
        chrono::Utc::now().format("%m%d%H%M%S"),
        rand::random::<u16>()
    )
}

/// Reads mock-deps' latencies from `GET /admin/config`.
pub async fn mock_latencies(deps_url: &str) -> Result<MockLatencies> {
    let c: MockConfig = admin_get(deps_url, admin::CONFIG).await?;
    Ok(MockLatencies {
        seller: c.seller.latency_ms,
        risk: c.risk.latency_ms,
        payment: c.payment.latency_ms,
    })
}

/// Sets mock-deps' latencies (`PUT /admin/config`, the latencies only).
pub async fn set_mock_latencies(deps_url: &str, l: MockLatencies) -> Result<()> {
    patch_mock_config(
        deps_url,
        &ConfigPatch::latencies(l.seller, l.risk, l.payment),
    )
    .await
}

/// Clears mock-deps' ledger and stats (`POST /admin/reset`).
pub async fn reset_mock(deps_url: &str) -> Result<()> {
    admin(deps_url)
        .post(format!("{}{}", base(deps_url), admin::RESET))
        .send()
        .await?
        .error_for_status()?;
    Ok(())
}

/// mock-deps' ledger (`GET /admin/ledger`).
pub async fn ledger(deps_url: &str) -> Result<Ledger> {
    admin_get(deps_url, admin::ledger(false)).await
}

/// mock-deps' ledger with the per-key detail (`GET /admin/ledger?detail=true`).
pub async fn ledger_detail(deps_url: &str) -> Result<Ledger> {
    admin_get(deps_url, admin::ledger(true)).await
}

/// Applies a partial mock-deps configuration (`PUT /admin/config`), e.g. fault rates.
pub async fn patch_mock_config(deps_url: &str, patch: &ConfigPatch) -> Result<()> {
    admin(deps_url)
        .put(format!("{}{}", base(deps_url), admin::CONFIG))
        .json(patch)
        .send()
        .await?
        .error_for_status()
        .with_context(|| format!("mock-deps refused the configuration {patch:?}"))?;
    Ok(())
}

/// One of mock-deps' admin answers, as its own type.
async fn admin_get<T: serde::de::DeserializeOwned>(deps_url: &str, path: &str) -> Result<T> {
    admin(deps_url)
        .get(format!("{}{path}", base(deps_url)))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await
        .with_context(|| format!("reading mock-deps' {path}"))
}

fn base(url: &str) -> &str {
    url.trim_end_matches('/')
}

fn admin(_url: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .no_proxy()
        .build()
        .unwrap_or_default()
}
