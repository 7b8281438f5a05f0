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
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result, bail};

mod db_activity;
pub mod events;
mod exit_watch;
mod faults;
mod overload;
mod slow_broker;
mod slow_uploads;
mod warmup;

use crate::api_env::{ApiSettings, PersistBatch, add_database};
use crate::gave_up::orders_after_give_up;
use crate::lab_args::{AUTO_THREADS_HEADROOM, BlockingThreads, LabArgs, api_names};
use crate::run::{environment, measure_on, new_run_id, set_mock_latencies};
use crate::services::{ApiProcess, Database, MockDepsProcess, not_enforced};
use crate::{invariants, money};
use lab_results::faults::FaultPlan;
use lab_results::inject::Injection;
use lab_results::{ApiKind, Environment, Event, Limits, MockLatencies, RunConfig, RunResults};
use loadgen::assemble::RunMeta;
use loadgen::clock::Clock;
use loadgen::driver::DriverConfig;
use loadgen::profile::Profile;
use loadgen::retry::RetryPolicy;
use loadgen::sampler::{SampleTargets, scraped_settings};

/// What every run of this lab invocation shares.
struct Lab {
    args: LabArgs,
    profile: Profile,
    latency: MockLatencies,
    out: PathBuf,
    run_id: String,
    database_url: Option<String>,
    /// What the APIs are given: `database_url`, or the latency proxy in front of it.
    api_database_url: Option<String>,
    injection: Option<Injection>,
    faults: Option<FaultPlan>,
    /// The database, when the lab opened it (a fault plan may restart it).
    db: Option<Arc<Database>>,
    /// The latency proxy between the APIs and PostgreSQL, when there is one (an added RTT, or a
    /// fault plan that freezes the database).
    db_proxy: Option<Arc<latency_proxy::LatencyProxy>>,
    /// NATS behind its latency proxy, for a fault plan that slows the broker.
    broker: Option<slow_broker::SlowBroker>,
    postgres_pid: Option<u32>,
    deps_url: String,
    deps_pid: Option<u32>,
    environment: Environment,
    /// How `--blocking-threads auto` sized the pool, when it did.
    threads_rule: Option<String>,
}

/// Resolves `--blocking-threads auto` for this run's profile and latencies (Little's law with
/// headroom), says so on stderr, and returns the rule as a condition of the run.
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
    let n = args.blocking_threads.resolve(peak, clients, path);
    args.blocking_threads = BlockingThreads::Fixed(n);
    let rule = match clients {
        Some(c) => format!("auto: one per closed-model client ({c})"),
        None => format!(
            "auto: Little's law, {peak:.0}/s peak × {:.2} s critical path × {AUTO_THREADS_HEADROOM}",
            path as f64 / 1000.0
        ),
    };
    eprintln!("lab: --blocking-threads {n} ({rule})");
    Some(rule)
}

/// Runs the lab; returns every run's results and the output folder.
pub async fn lab(mut args: LabArgs) -> Result<(Vec<RunResults>, PathBuf)> {
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
    let durability = args.db_durability;
    let db = if db_url.is_some() || ephemeral {
        let open = move || Database::open_with(db_url.as_deref(), durability);
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
    if faults.is_some_and(|f| f.kill_api_at_s.is_some()) && !targets.is_empty() {
        bail!("--faults kill-api needs APIs the lab starts itself (no --targets)");
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
        (Some(db), None) => Some(db.url.clone()),
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
        deps_http: None,
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

    async fn one(
        &self,
        api: &str,
        label: &str,
        url: Option<&str>,
        repeat: u32,
    ) -> Result<RunResults> {
        let (process, url, settings, limits) = match url {
            Some(url) => {
                let settings = scraped_settings(url).await;
                let limits = Limits {
                    mechanism: "docker compose".to_owned(),
                    ..not_enforced(
                        "set outside the lab (docker compose cpus/mem_limit), not verified by it",
                    )
                };
                (None, url.to_owned(), settings, limits)
            }
            None => {
                let settings = self.settings(api)?;
                let env = self.env(&settings);
                let (name, limit, logs) =
                    (api.to_owned(), !self.args.no_limits, self.out.join("logs"));
                let p = tokio::task::spawn_blocking(move || {
                    ApiProcess::start(&name, &env, limit, &logs)
                })
                .await??;
                let (url, limits) = (p.url.clone(), p.limits.clone());
                let mut settings = settings;
                // What the API itself reports: its admission limit and its allocator.
                let mut reported = loadgen::sampler::scraped_settings(&url).await;
                for key in ["MAX_IN_FLIGHT", "ALLOCATOR"] {
                    if let Some(v) = reported.remove(key) {
                        settings.insert(key.to_owned(), v);
                    }
                }
                (Some(p), url, settings, limits)
            }
        };
        let build = process
            .as_ref()
            .map_or("unknown", |p| p.build_profile.as_str())
            .to_owned();
        self.fresh_state().await?;
        self.warm_up(&url).await?;
        self.fresh_state().await?;
        let name = format!("{label}-{repeat}");
        let goose: Vec<String> = ["html", "json", "md"]
            .iter()
            .map(|e| format!("goose-{name}.{e}"))
            .collect();
        let load = &self.args.load;
        let driver = DriverConfig {
            target: url.clone(),
            profile: self.profile.clone(),
            request_timeout: Duration::from_secs_f64(load.request_timeout_s),
            max_in_flight: load.max_in_flight,
            run_id: format!("{}{}{repeat}", self.run_id, &label[..1.min(label.len())]),
            sellers: load.sellers,
            duplicate_ratio: load.duplicate_ratio,
            goose_reports: goose
                .iter()
                .map(|g| self.out.join(g).display().to_string())
                .collect(),
            progress: (!load.no_progress).then(|| format!("{label} #{}", repeat + 1)),
            retry: load.retry_for_s.map(RetryPolicy::giving_up_after),
            sharding: Default::default(),
            transport_pause: None,
        };
        let mut environment = self.environment.clone();
        environment.build_profile = build;
        let warm = self.warmup_s();
        let mut meta = RunMeta {
            api: api.to_owned(),
            label: label.to_owned(),
            target_url: url.clone(),
            run_id: driver.run_id.clone(),
            repeat_index: repeat,
            repeats: self.args.repeat.max(1),
            config: RunConfig {
                profile: self.profile.info(),
                mock_latency_ms: Some(self.latency),
                injection: self.injection,
                faults: self.faults,
                api_settings: settings,
                limits,
                tx_scope: self.args.tx_scope.as_str().to_owned(),
                request_timeout_ms: (load.request_timeout_s * 1000.0) as u64,
                max_in_flight: load.max_in_flight,
                duplicate_ratio: load.duplicate_ratio,
                sellers: load.sellers,
                warmup_s: warm,
                shedding: process.is_some().then_some(self.args.shedding),
            },
            environment,
            goose_reports: goose,
            events: vec![Event {
                t: 0.0,
                label: format!("measurement starts (after a {warm} s warm-up, excluded)"),
            }],
            keep_histograms: false,
        };
        let injecting = self.injection.map(|inj| {
            meta.events.extend(inj.events(self.latency));
            tokio::spawn(crate::inject::apply(
                inj,
                self.deps_url.clone(),
                self.latency,
            ))
        });
        let targets = SampleTargets {
            api_pid: process.as_ref().map(|p| p.pid),
            mock_deps_pid: self.deps_pid,
            postgres_pid: self.postgres_pid,
            metrics_url: Some(format!("{url}/metrics")),
        };
        let clock: Clock = Arc::new(OnceLock::new());
        let activity = db_activity::Probe::start(self.database_url.as_deref(), &url).await;
        // A kill the fault plan makes is its own (and its restart too): only other deaths count.
        let watch = process
            .as_ref()
            .filter(|_| self.faults.is_none_or(|f| f.kill_api_at_s.is_none()))
            .map(|p| exit_watch::ExitWatch::start(p, clock.clone()));
        let faults = self.start_faults(process, &url, clock.clone()).await?;
        let measured = measure_on(clock, driver, meta, targets).await;
        let ended = self.end_faults(faults).await?;
        let (mut process, mut fault_events) = (ended.process, ended.events);
        let mut api_exit = None;
        if let Some((t, oom_before)) = watch.and_then(exit_watch::ExitWatch::stop)
            && let Some(p) = process.take()
        {
            let (p, exit) = exit_watch::settle(p, t, oom_before).await?;
            eprintln!(
                "lab: {api} {}; started again for its recovery",
                exit.describe()
            );
            fault_events.push(Event {
                t,
                label: format!("{api} {}", exit.describe()),
            });
            api_exit = Some(exit);
            process = Some(p);
        }
        let (mut results, gave_up) = measured?;
        results.api_exit = api_exit;
        let activity = activity.run_ended().await;
        if let Some(task) = injecting {
            // Normally long done; if the run ended first, the latency must still be restored.
            task.abort();
            set_mock_latencies(&self.deps_url, self.latency).await?;
        }
        results.events.extend(fault_events);
        results.events.sort_by(|a, b| a.t.total_cmp(&b.t));
        if let Some(r) = results.retries.as_mut() {
            r.recovery = faults::recovery(&results.events, r);
        }
        results.invariants = invariants::all(
            &results,
            self.database_url.as_deref(),
            Some(&self.deps_url),
            Some(&format!("{url}/metrics")),
        )
        .await;
        let mut settle = money::settle_bound(self.args.lease_ms, self.args.reconcile_interval_ms);
        if self.faults.is_some_and(|f| f.gateway_down.is_some()) {
            // Each lookup that failed during the outage put its key off for longer (recovery's
            // back-off doubles up to MAX_BACKOFF): the last of them may wait that long again.
            settle += order_core::domain::recovery::MAX_BACKOFF;
        }
        let (money, checks) =
            money::count(self.database_url.as_deref(), Some(&self.deps_url), settle).await;
        results.money = money;
        results.invariants.extend(checks);
        if let (Some(b), Some(fault), Some(db_url)) = (
            &self.broker,
            self.faults.and_then(|f| f.broker_ack),
            self.database_url.as_deref(),
        ) {
            results.broker = Some(b.record(db_url, fault, ended.broker_backlog).await?);
        }
        // After the checks (which wait until the API is idle), before the next run empties the tables.
        results.after_give_up =
            Some(orders_after_give_up(self.database_url.as_deref(), &gave_up).await);
        let stopped = process.is_some();
        if let Some(p) = process {
            tokio::task::spawn_blocking(move || p.stop()).await??;
        }
        // Once the API's sessions have ended: they publish their last statistics as they exit.
        let window_s = results.elapsed_s.unwrap_or(results.summary.duration_s);
        results.db_activity = activity.finish(window_s, stopped).await;
        Ok(results)
    }
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod env_tests;
