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
mod exit_watch;
mod one_run;
mod overload;
mod setup;
mod warmup;

use crate::api_env::{ApiSettings, PersistBatch, add_database};
use crate::faults::slow_broker;
use crate::lab_args::{AUTO_THREADS_LOSS, BlockingThreads, LabArgs, api_names};
use crate::run::{environment, new_run_id, set_mock_latencies};
use crate::services::{Database, MockDepsProcess, SharedDatabase};
use lab_results::faults::FaultPlan;
use lab_results::inject::Injection;
use lab_results::{ApiKind, Environment, MockLatencies, RunResults};
use loadgen::profile::Profile;
use order_core::plumbing::deps_client::DepsClient;
use order_core::plumbing::settings::DepsHttp;
use setup::{
    api_database_url, apis_to_run, broker_for, build_and_place, check_faults_and_clients,
    database_proxy, open_database, pin_database, pool_threads, start_mock_deps,
};

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
    /// The database is a scenario's, started by the lab for all its runs: its durability is the
    /// lab's to state.
    lab_owned_database: bool,
    pub(crate) deps_url: String,
    deps_pid: Option<u32>,
    environment: Environment,
    /// blocking-api's `BLOCKING_THREADS` (`--blocking-threads`, `auto` resolved).
    blocking_threads: u32,
    /// How `--blocking-threads auto` sized the pool, when it did.
    threads_rule: Option<String>,
    /// `--max-in-flight`, at most what the open-files limit allows.
    max_in_flight: u64,
}

/// Runs the lab (on `shared`, the database a scenario started for all its runs, when given);
/// returns every run's results and the output folder.
pub async fn lab(
    args: LabArgs,
    shared: Option<SharedDatabase>,
) -> Result<(Vec<RunResults>, PathBuf)> {
    if let Some(pod) = args.harness.pod() {
        pod.check()
            .map_err(|why| anyhow::anyhow!("the pod asked for: {why}"))?;
    }
    let profile = Profile::parse(&args.load.profile, args.load.duration_scale)?;
    let (blocking_threads, threads_rule) = pool_threads(&args, &profile);
    let out = args
        .harness
        .out
        .clone()
        .unwrap_or_else(|| default_out(&profile.name));
    std::fs::create_dir_all(out.join("logs"))
        .with_context(|| format!("creating {}", out.display()))?;
    let starts_apis = args.targets.is_empty();
    if starts_apis {
        build_and_place(&args).await?;
    }
    // Thousands of connections can be open at once; children inherit the raised limit.
    let max_in_flight = crate::run::fit_in_flight_cap(args.load.max_in_flight);
    let faults = args.faults.map(|f| f.scaled(args.load.duration_scale));
    let db = open_database(&args, shared.as_ref()).await?;
    let postgres_pid = db
        .as_ref()
        .and_then(|d| d.pid)
        .or(shared.as_ref().and_then(|s| s.pid));
    pin_database(&args, postgres_pid)?;
    check_faults_and_clients(&args, faults, db.as_deref())?;
    let mock = start_mock_deps(&args, &out.join("logs")).await?;
    let deps_url = args
        .deps_url
        .clone()
        .or_else(|| mock.as_ref().map(|m| m.url.clone()))
        .unwrap_or_default();
    set_mock_latencies(&deps_url, args.latency)
        .await
        .context("setting mock-deps latencies")?;
    let apis = apis_to_run(&args);
    let proxy = database_proxy(&args, faults, db.as_deref()).await?;
    let api_database_url =
        api_database_url(&args, db.as_deref(), proxy.as_deref(), shared.as_ref())?;
    let broker = broker_for(faults, db.is_some(), starts_apis).await?;
    if args.inject_broker().is_some() {
        bail!("--inject broker=… slows the broker of --scenario events only");
    }
    let lab = Lab {
        threads_rule,
        blocking_threads,
        max_in_flight,
        api_database_url,
        injection: args.inject.map(|i| i.scaled(args.load.duration_scale)),
        faults,
        db: db.clone(),
        db_proxy: proxy.clone(),
        broker,
        profile,
        latency: args.latency,
        out: out.clone(),
        run_id: new_run_id(),
        database_url: db.as_ref().map(|d| d.url.clone()),
        postgres_pid,
        lab_owned_database: shared.is_some_and(|s| s.lab_owned),
        deps_url,
        deps_pid: mock.as_ref().map(|m| m.pid),
        environment: environment(""),
        args,
    };
    let runs = lab.every_run(&apis).await?;
    drop(lab);
    if let Some(proxy) = proxy.and_then(Arc::into_inner) {
        proxy.stop().await;
    }
    drop(mock);
    drop(db);
    Ok((runs, out))
}

impl Lab {
    /// Every repeat of every API, interleaved (blocking, reactive, blocking, …), each run's
    /// results saved as it ends.
    async fn every_run(
        &self,
        apis: &[(String, String, Option<String>)],
    ) -> Result<Vec<RunResults>> {
        let mut runs = Vec::new();
        for r in 0..self.args.repeat.max(1) {
            for (api, label, url) in apis {
                let results = self
                    .one(api, label, url.as_deref(), r)
                    .await
                    .with_context(|| format!("{api}, repeat {}", r + 1))?;
                results.save(self.out.join(format!("results-{label}-{r}.json")))?;
                runs.push(results);
            }
        }
        Ok(runs)
    }
}

fn default_out(profile: &str) -> PathBuf {
    Path::new("reports").join(format!(
        "{}-{profile}",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
    ))
}

/// What the lab states to `kind` from its flags, with mock-deps at `deps_url` and blocking-api's
/// pool of `threads`.
fn api_settings(a: &LabArgs, kind: ApiKind, deps_url: &str, threads: u32) -> ApiSettings {
    let mut s = ApiSettings {
        deps_url: Some(deps_url.to_owned()),
        db_pool_size: a.harness.db_pool_size,
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
        blocking_threads: kind.has_thread_pool().then_some(u64::from(threads)),
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
        let mut settings = api_settings(a, kind, &self.deps_url, self.blocking_threads);
        settings.events = self.broker.as_ref().map(slow_broker::SlowBroker::events);
        let mut s = settings.to_env();
        // The added RTT.
        s.insert("DB_RTT_MS".to_owned(), a.harness.db_rtt_ms.to_string());
        if self.lab_owned_database || self.db.as_ref().is_some_and(|d| d.is_ephemeral()) {
            // fsync, synchronous_commit and full_page_writes of the lab's PostgreSQL.
            s.insert(
                "PG_DURABILITY".to_owned(),
                a.harness.db_durability.as_str().to_owned(),
            );
            // How the APIs reach it (a proxy, when there is one, is TCP).
            let via = if a.harness.db_rtt_ms > 0.0 || self.db_proxy.is_some() {
                "tcp"
            } else {
                a.harness.db_via.as_str()
            };
            s.insert("PG_VIA".to_owned(), via.to_owned());
            if !a.harness.pg_settings.is_empty() {
                // The server settings given on top of the lab's.
                s.insert("PG_SETTINGS".to_owned(), a.harness.pg_settings.join(","));
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
