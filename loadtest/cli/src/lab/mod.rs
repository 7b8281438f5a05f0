//! `loadtest lab`: the comparison, end to end.
//!
//! PostgreSQL (ephemeral unless `--database-url`) and mock-deps start once; then, for each repeat,
//! each API in turn (blocking, reactive, blocking, … so machine drift hits both alike): start it in
//! its cgroup with the same settings as the other, empty the tables and the payment ledger, warm up
//! (excluded), empty them again, measure, check the invariants, stop it. With `--targets` the APIs
//! are already running (docker compose) and only the load, the truncation and the checks happen.
//!
//! With two CPUs or more the API runs alone on the last one and everything else (PostgreSQL,
//! mock-deps, the generator, the latency proxy) on the others, as in `loadtest bench`
//! (`services::place_harness`; recorded in each run's limits): otherwise the API and PostgreSQL
//! share both cores and a harness-bound flag cannot tell the harness from the API.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};

pub(crate) mod census;
mod db_activity;
pub mod events;
mod exit_watch;
mod one_run;
mod overload;
mod warmup;

use crate::api_env::{ApiSettings, PersistBatch, add_database};
use crate::faults::slow_broker;
use crate::lab_args::{AUTO_THREADS_LOSS, BlockingThreads, LabArgs, api_names};
use crate::run::{environment, new_run_id, set_mock_latencies};
use crate::services::{Database, MockDepsProcess};
use lab_results::faults::FaultPlan;
use lab_results::inject::Injection;
use lab_results::{ApiKind, Environment, MockLatencies, RunResults};
use loadgen::profile::Profile;
use order_core::plumbing::deps_client::DepsClient;
use order_core::plumbing::settings::DepsHttp;

/// What every run of this lab invocation shares; the fault plan's part (`crate::faults`) reads
/// the fields it acts on.
pub(crate) struct Lab {
    args: LabArgs,
    profile: Profile,
    latency: MockLatencies,
    out: PathBuf,
    run_id: String,
    database_url: Option<String>,
    /// What the APIs are given: `database_url`, or the latency proxy in front of it.
    api_database_url: Option<String>,
    injection: Option<Injection>,
    pub(crate) faults: Option<FaultPlan>,
    /// The database, when the lab opened it (a fault plan may restart it).
    pub(crate) db: Option<Arc<Database>>,
    /// The latency proxy between the APIs and PostgreSQL, when there is one (an added RTT, or a
    /// fault plan that freezes the database).
    pub(crate) db_proxy: Option<Arc<latency_proxy::LatencyProxy>>,
    /// NATS behind its latency proxy, for a fault plan that slows the broker.
    pub(crate) broker: Option<slow_broker::SlowBroker>,
    postgres_pid: Option<u32>,
    pub(crate) deps_url: String,
    deps_pid: Option<u32>,
    environment: Environment,
    /// How `--blocking-threads auto` sized the pool, when it did.
    threads_rule: Option<String>,
}

/// Resolves `--blocking-threads auto` for this run's profile and latencies (Erlang B on Little's
/// law), says so on stderr, and returns the rule as a condition of the run.
fn auto_threads(args: &mut LabArgs, profile: &Profile) -> Option<String> {
    if args.blocking_threads != BlockingThreads::Auto {
        return None;
    }
    let peak = profile
        .phases
        .iter()
        .map(|p| p.from_rate.max(p.to_rate))
        .fold(0.0, f64::max);
    let clients = match profile.model {
        loadgen::profile::Model::Closed { clients, .. }
        | loadgen::profile::Model::ClosedFor { clients, .. } => Some(clients),
        loadgen::profile::Model::Open => None,
    };
    let path = args.latency.critical_path_ms();
    let (held_ms, held_by) = match args.thread_hold_ms {
        Some(ms) => (ms.ceil() as u64, "measured hold of a thread"),
        None => (path, "critical path"),
    };
    let n = args.blocking_threads.resolve(peak, clients, held_ms);
    args.blocking_threads = BlockingThreads::Fixed(n);
    let rule = match clients {
        Some(c) => format!("auto: one per closed-model client ({c})"),
        None => format!(
            "auto: Erlang B, {peak:.0}/s peak × {:.3} s {held_by} = {:.1} threads busy, at most \
             {}% of arrivals finding all busy",
            held_ms as f64 / 1000.0,
            peak * held_ms as f64 / 1000.0,
            AUTO_THREADS_LOSS * 100.0
        ),
    };
    eprintln!("lab: --blocking-threads {n} ({rule})");
    Some(rule)
}

/// Runs the lab; returns every run's results and the output folder.
pub async fn lab(mut args: LabArgs) -> Result<(Vec<RunResults>, PathBuf)> {
    if let Some(pod) = args.pod() {
        pod.check()
            .map_err(|why| anyhow::anyhow!("the pod asked for: {why}"))?;
    }
    let profile = Profile::parse(&args.load.profile, args.load.duration_scale)?;
    let latency = args.latency;
    let threads_rule = auto_threads(&mut args, &profile);
    let targets = args.targets.clone();
    let targets_empty = targets.is_empty();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(&profile.name));
    std::fs::create_dir_all(out.join("logs"))
        .with_context(|| format!("creating {}", out.display()))?;
    if targets.is_empty() {
        let apis = args.apis.clone();
        tokio::task::spawn_blocking(move || crate::services::build_services(&apis)).await??;
        // Before any harness process starts: each inherits the harness's CPUs.
        if let Err(why) = crate::services::place_harness(!args.no_pin)? {
            eprintln!("lab: {why}");
        }
    }
    // Thousands of connections can be open at once; children inherit the raised limit.
    args.load.max_in_flight = crate::run::fit_in_flight_cap(args.load.max_in_flight);
    let logs = out.join("logs");
    let faults = args.faults.map(|f| f.scaled(args.load.duration_scale));
    let (db_url, ephemeral) = (args.database_url.clone(), targets.is_empty());
    let harness = args.harness.clone();
    let db = if db_url.is_some() || ephemeral {
        let open = move || Database::open_for(db_url.as_deref(), &harness);
        Some(Arc::new(tokio::task::spawn_blocking(open).await??))
    } else {
        None
    };
    // PostgreSQL on the harness's CPUs, never the API's, wherever it was started: a scenario
    // starts the database its runs share before any run placed the harness, and a process keeps
    // the CPUs it started with (its backends fork from the postmaster and inherit them).
    if let Some(pid) = db.as_ref().and_then(|d| d.pid).or(args.database_pid)
        && targets.is_empty()
        && let Ok(p) = crate::services::place_harness(!args.no_pin)?
    {
        labkit::affinity::pin_tree(pid, &p.harness_cpus).with_context(|| {
            format!("pinning PostgreSQL (pid {pid}) to CPU {:?}", p.harness_cpus)
        })?;
    }
    if faults.is_some_and(|f| f.restart_db_at_s.is_some())
        && !db.as_ref().is_some_and(|d| d.is_ephemeral())
    {
        bail!(
            "--faults restart-db needs the lab's own PostgreSQL (no --database-url, no --targets)"
        );
    }
    if args.deps_http == Some(DepsHttp::H2c)
        && args.blocking_client == DepsClient::Ureq
        && args
            .apis
            .iter()
            .any(|a| ApiKind::of(a).is_some_and(|k| k.has_thread_pool()))
    {
        bail!(
            "--deps-http h2c: blocking-api's ureq client speaks HTTP/1.1 only; add \
             --blocking-client reqwest-blocking"
        );
    }
    if faults.is_some_and(|f| f.ends_the_api()) && !targets.is_empty() {
        bail!(
            "--faults kill-api and rolling-restart need APIs the lab starts itself (no --targets)"
        );
    }
    let mock = match (&args.deps_url, targets.is_empty()) {
        (Some(_), _) => None,
        (None, true) => {
            let logs = logs.clone();
            Some(tokio::task::spawn_blocking(move || MockDepsProcess::start(&logs)).await??)
        }
        (None, false) => bail!("--targets needs --deps-url (the mock-deps the APIs call)"),
    };
    let deps_url = args
        .deps_url
        .clone()
        .or_else(|| mock.as_ref().map(|m| m.url.clone()))
        .unwrap_or_default();
    set_mock_latencies(&deps_url, latency)
        .await
        .context("setting mock-deps latencies")?;
    let apis: Vec<(String, String, Option<String>)> = if targets.is_empty() {
        args.apis
            .iter()
            .map(|a| {
                let (api, label) = api_names(a);
                (api, label, None)
            })
            .collect()
    } else {
        targets
            .into_iter()
            .map(|(n, url)| {
                let (api, label) = api_names(&n);
                (api, label, Some(url))
            })
            .collect()
    };
    // Experiment D: a TCP proxy adds the round-trip time of a farther database. A database
    // freeze needs one too (at the RTT asked for, zero included): it is what freezes.
    let freezes = faults.is_some_and(|f| f.db_freeze.is_some());
    if freezes && db.is_none() {
        bail!("--faults db-freeze needs a database the lab knows (not --targets alone)");
    }
    let proxy = match (&db, args.db_rtt_ms > 0.0 || freezes) {
        (Some(db), true) => {
            let (upstream, rtt) = (
                latency_proxy::upstream_of(&db.url)?,
                Duration::from_secs_f64(args.db_rtt_ms / 1000.0),
            );
            let started = if freezes {
                latency_proxy::LatencyProxy::start_adjustable(upstream, rtt).await
            } else {
                latency_proxy::LatencyProxy::start(upstream, rtt).await
            };
            Some(Arc::new(
                started.context("starting the database latency proxy")?,
            ))
        }
        _ => None,
    };
    let api_database_url = match (&db, &proxy) {
        (Some(db), Some(p)) => Some(latency_proxy::proxied_url(&db.url, p.local_addr())?),
        (Some(db), None) => Some(
            args.api_database_url
                .clone()
                .unwrap_or_else(|| db.api_url(args.harness.db_via)),
        ),
        _ => None,
    };
    let slows_broker = faults.is_some_and(|f| f.broker_ack.is_some());
    if slows_broker && (db.is_none() || !targets_empty) {
        bail!("--faults broker-ack needs APIs and a database the lab starts itself (no --targets)");
    }
    let broker = if slows_broker {
        Some(slow_broker::SlowBroker::start().await?)
    } else {
        None
    };
    if args.inject_broker().is_some() {
        bail!("--inject broker=… slows the broker of --scenario events only");
    }
    let injection = args.inject.map(|i| i.scaled(args.load.duration_scale));
    let lab = Lab {
        threads_rule,
        api_database_url,
        injection,
        faults,
        db: db.clone(),
        db_proxy: proxy.clone(),
        broker,
        profile,
        latency,
        out: out.clone(),
        run_id: new_run_id(),
        database_url: db.as_ref().map(|d| d.url.clone()),
        postgres_pid: db.as_ref().and_then(|d| d.pid).or(args.database_pid),
        deps_url,
        deps_pid: mock.as_ref().map(|m| m.pid),
        environment: environment(""),
        args,
    };
    let mut runs = Vec::new();
    for r in 0..lab.args.repeat.max(1) {
        for (api, label, url) in &apis {
            let results = lab
                .one(api, label, url.as_deref(), r)
                .await
                .with_context(|| format!("{api}, repeat {}", r + 1))?;
            results.save(lab.out.join(format!("results-{label}-{r}.json")))?;
            runs.push(results);
        }
    }
    drop(lab);
    if let Some(proxy) = proxy.and_then(Arc::into_inner) {
        proxy.stop().await;
    }
    drop(mock);
    drop(db);
    Ok((runs, out))
}

fn default_out(profile: &str) -> PathBuf {
    Path::new("reports").join(format!(
        "{}-{profile}",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
    ))
}

/// What the lab states to `kind` from its flags, with mock-deps at `deps_url`.
fn api_settings(a: &LabArgs, kind: ApiKind, deps_url: &str) -> ApiSettings {
    let mut s = ApiSettings {
        deps_url: Some(deps_url.to_owned()),
        db_pool_size: a.db_pool_size,
        db_pool_timeout_ms: a.db_pool_timeout_ms,
        deps_timeout_ms: a.deps_timeout_ms,
        deps_http: a.deps_http,
        http_workers: a.http_workers,
        db_tx_scope: Some(a.tx_scope),
        lease_ms: a.lease_ms,
        reconcile_interval_ms: a.reconcile_interval_ms,
        persist_batch: Some(PersistBatch {
            max: a.persist_batch_max,
            wait_ms: a.persist_batch_wait_ms,
        }),
        queue_timeout_ms: None,
        request_deadline_ms: None,
        db_statement_timeout_ms: None,
        max_loop_lag_ms: 0,
        max_in_flight: None,
        events: None,
        // `auto` is resolved (`auto_threads`) before any API starts.
        blocking_threads: a
            .blocking_threads
            .fixed()
            .filter(|_| kind.has_thread_pool())
            .map(u64::from),
        deps_client: kind.has_thread_pool().then_some(a.blocking_client),
    };
    overload::settings(a, &mut s);
    s
}

impl Lab {
    /// What the run records as the API's settings, and gives it: [`api_settings`], the broker of
    /// a broker fault, and beside them conditions of the run that are not API settings.
    fn settings(&self, api: &str) -> Result<BTreeMap<String, String>> {
        let a = &self.args;
        let kind: ApiKind = api.parse().map_err(anyhow::Error::msg)?;
        let mut settings = api_settings(a, kind, &self.deps_url);
        settings.events = self.broker.as_ref().map(slow_broker::SlowBroker::events);
        let mut s = settings.to_env();
        // The added RTT.
        s.insert("DB_RTT_MS".to_owned(), a.db_rtt_ms.to_string());
        if a.lab_owned_database || self.db.as_ref().is_some_and(|d| d.is_ephemeral()) {
            // fsync, synchronous_commit and full_page_writes of the lab's PostgreSQL.
            s.insert(
                "PG_DURABILITY".to_owned(),
                a.db_durability.as_str().to_owned(),
            );
            // How the APIs reach it (a proxy, when there is one, is TCP).
            let via = if a.db_rtt_ms > 0.0 || self.db_proxy.is_some() {
                "tcp"
            } else {
                a.db_via.as_str()
            };
            s.insert("PG_VIA".to_owned(), via.to_owned());
            if !a.pg_settings.is_empty() {
                // The server settings given on top of the lab's.
                s.insert("PG_SETTINGS".to_owned(), a.pg_settings.join(","));
            }
        }
        if let Some(rule) = self
            .threads_rule
            .as_ref()
            .filter(|_| kind.has_thread_pool())
        {
            // How the lab chose the thread count, shown beside it.
            s.insert("BLOCKING_THREADS_RULE".to_owned(), rule.clone());
        }
        Ok(s)
    }

    /// The environment of an API the lab starts: its settings and where the database is.
    fn env(&self, settings: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let mut env = settings.clone();
        add_database(
            &mut env,
            self.api_database_url.as_deref().unwrap_or_default(),
        );
        env
    }
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod env_tests;
