//! One run of one API ([`Lab::one`]): start it in its cgroup (or find it at `--targets`), empty
//! the tables and the ledger, warm up, empty them again, measure with the fault plan or the
//! injection under way, count the money, check the invariants, stop it. What every run shares,
//! and the order of the runs, is `mod.rs`'s.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Result;

use crate::gave_up::orders_after_give_up;
use crate::run::{measure_on, set_mock_latencies};
use crate::services::{ApiProcess, not_enforced};
use crate::{invariants, money};
use lab_results::{Limits, RunConfig, RunResults, TimelineMark};
use loadgen::assemble::RunMeta;
use loadgen::clock::Clock;
use loadgen::driver::DriverConfig;
use loadgen::gave_up::OrderKey;
use loadgen::retry::RetryPolicy;
use loadgen::sampler::{SampleTargets, scraped_settings};

use super::*;

/// The API of one run: the process the lab started (none at `--targets`), where it answers, the
/// settings it runs with and its limits.
struct Target {
    process: Option<ApiProcess>,
    url: String,
    settings: BTreeMap<String, String>,
    limits: Limits,
}

impl Lab {
    /// The run of `api` (repeat `repeat`, results labelled `label`), at `url` when it is already
    /// running.
    pub(super) async fn one(
        &self,
        api: &str,
        label: &str,
        url: Option<&str>,
        repeat: u32,
    ) -> Result<RunResults> {
        let target = match url {
            Some(url) => running_target(url).await,
            None => self.start_api(api).await?,
        };
        self.fresh_state().await?;
        self.warm_up(&target.url).await?;
        self.fresh_state().await?;
        let (driver, goose) = self.driver(&target.url, label, repeat);
        let meta = self.meta(api, label, repeat, &target, &driver, goose);
        let url = target.url.clone();
        let mut m = self.measure(api, target, driver, meta).await?;
        self.check(&mut m.results, &url, m.broker_backlog).await?;
        // After the checks (which wait until the API is idle), before the next run empties the tables.
        m.results.after_give_up =
            Some(orders_after_give_up(self.database_url.as_deref(), &m.gave_up).await);
        stop(m.results, m.process, m.activity).await
    }

    /// Starts `api` in its cgroup with the lab's settings, and adds what the API itself reports
    /// once it runs: its admission limit and its allocator.
    async fn start_api(&self, api: &str) -> Result<Target> {
        let mut settings = self.settings(api)?;
        let env = self.env(&settings);
        let (name, pod, logs) = (
            api.to_owned(),
            self.args.harness.pod(),
            self.out.join("logs"),
        );
        let p = tokio::task::spawn_blocking(move || ApiProcess::start(&name, &env, pod, &logs))
            .await??;
        let (url, limits) = (p.url.clone(), p.limits.clone());
        let mut reported = loadgen::sampler::scraped_settings(&url).await;
        for key in ["MAX_IN_FLIGHT", "ALLOCATOR"] {
            if let Some(v) = reported.remove(key) {
                settings.insert(key.to_owned(), v);
            }
        }
        Ok(Target {
            process: Some(p),
            url,
            settings,
            limits,
        })
    }

    /// The generator's configuration for this run, and its goose reports' file names.
    fn driver(&self, url: &str, label: &str, repeat: u32) -> (DriverConfig, Vec<String>) {
        let name = format!("{label}-{repeat}");
        let goose: Vec<String> = ["html", "json", "md"]
            .iter()
            .map(|e| format!("goose-{name}.{e}"))
            .collect();
        let load = &self.args.load;
        let driver = DriverConfig {
            target: url.to_owned(),
            profile: self.profile.clone(),
            request_timeout: Duration::from_secs_f64(load.request_timeout_s),
            max_in_flight: self.max_in_flight,
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
        (driver, goose)
    }

    /// What the results say of the run besides its measurements: the API, the configuration,
    /// the environment and the warm-up before t = 0.
    fn meta(
        &self,
        api: &str,
        label: &str,
        repeat: u32,
        target: &Target,
        driver: &DriverConfig,
        goose: Vec<String>,
    ) -> RunMeta {
        let load = &self.args.load;
        let mut environment = self.environment.clone();
        environment.build_profile = target
            .process
            .as_ref()
            .map_or("unknown", |p| p.build_profile.as_str())
            .to_owned();
        let warm = self.warmup_s();
        RunMeta {
            api: api.to_owned(),
            label: label.to_owned(),
            target_url: target.url.clone(),
            run_id: driver.run_id.clone(),
            repeat_index: repeat,
            repeats: self.args.repeat.max(1),
            config: RunConfig {
                profile: self.profile.info(),
                mock_latency_ms: Some(self.latency),
                injection: self.injection,
                faults: self.faults,
                api_settings: target.settings.clone(),
                limits: target.limits.clone(),
                tx_scope: self.args.tx_scope.as_str().to_owned(),
                request_timeout_ms: (load.request_timeout_s * 1000.0) as u64,
                max_in_flight: self.max_in_flight,
                duplicate_ratio: load.duplicate_ratio,
                sellers: load.sellers,
                warmup_s: warm,
                shedding: target.process.is_some().then_some(self.args.shedding),
            },
            environment,
            goose_reports: goose,
            timeline: vec![TimelineMark {
                t: 0.0,
                label: format!("measurement starts (after a {warm} s warm-up, excluded)"),
            }],
            keep_histograms: false,
        }
    }

    /// The measured run with the injection or the fault plan under way and the API watched for
    /// a death of its own (started again for its recovery); the results with the run's
    /// timeline in order.
    async fn measure(
        &self,
        api: &str,
        target: Target,
        driver: DriverConfig,
        mut meta: RunMeta,
    ) -> Result<Measured> {
        let Target { process, url, .. } = target;
        let injecting = self.injection.map(|inj| {
            meta.timeline.extend(inj.marks(self.latency));
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
        // A kill or rolling restart the fault plan makes is its own (and the new process too):
        // only other deaths count.
        let watch = process
            .as_ref()
            .filter(|_| self.faults.is_none_or(|f| !f.ends_the_api()))
            .map(|p| exit_watch::ExitWatch::start(p, clock.clone()));
        let faults = self.start_faults(process, &url, clock.clone()).await?;
        let measured = measure_on(clock, driver, meta, targets).await;
        let ended = self.end_faults(faults).await?;
        let (mut process, mut fault_marks) = (ended.process, ended.marks);
        let mut api_exit = None;
        if let Some((t, oom_before)) = watch.and_then(exit_watch::ExitWatch::stop)
            && let Some(p) = process.take()
        {
            let (p, exit) = exit_watch::settle(p, t, oom_before).await?;
            eprintln!(
                "lab: {api} {}; started again for its recovery",
                exit.describe()
            );
            fault_marks.push(TimelineMark {
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
        results.timeline.extend(fault_marks);
        results.timeline.sort_by(|a, b| a.t.total_cmp(&b.t));
        if let Some(r) = results.retries.as_mut() {
            r.recovery = crate::faults::recovery::recovery(&results.timeline, r);
        }
        Ok(Measured {
            results,
            gave_up,
            process,
            activity,
            broker_backlog: ended.broker_backlog,
        })
    }

    /// The run's checks once the API is idle: the invariants, the money once no key is left
    /// CHARGING, and the events of a broker fault.
    async fn check(
        &self,
        results: &mut RunResults,
        url: &str,
        broker_backlog: Option<u64>,
    ) -> Result<()> {
        results.invariants = invariants::all(
            results,
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
            results.broker = Some(b.record(db_url, fault, broker_backlog).await?);
        }
        Ok(())
    }
}

/// What [`Lab::measure`] gives back: the results, the orders whose clients gave up, the API's
/// process (still running), the database's activity probe and the outbox backlog at the broker
/// fault's end.
struct Measured {
    results: RunResults,
    gave_up: Vec<OrderKey>,
    process: Option<ApiProcess>,
    activity: db_activity::Probe,
    broker_backlog: Option<u64>,
}

/// An API already running at `url` (`--targets`): its settings as it reports them, its limits
/// set outside the lab.
async fn running_target(url: &str) -> Target {
    let settings = scraped_settings(url).await;
    let limits = Limits {
        mechanism: "docker compose".to_owned(),
        ..not_enforced("set outside the lab (docker compose cpus/mem_limit), not verified by it")
    };
    Target {
        process: None,
        url: url.to_owned(),
        settings,
        limits,
    }
}

/// The API's peak memory and its stop, then the database's activity over the run: once the
/// API's sessions have ended, as they publish their last statistics when they exit.
async fn stop(
    mut results: RunResults,
    process: Option<ApiProcess>,
    activity: db_activity::Probe,
) -> Result<RunResults> {
    let stopped = process.is_some();
    results.cgroup_memory_peak_bytes = process.as_ref().and_then(|p| p.cgroup_memory_peak());
    if let Some(p) = process {
        tokio::task::spawn_blocking(move || p.stop()).await??;
    }
    let window_s = results.elapsed_s.unwrap_or(results.summary.duration_s);
    results.db_activity = activity.finish(window_s, stopped).await;
    Ok(results)
}
