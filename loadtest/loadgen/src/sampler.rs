//! Once a second, what the processes and the API's `/metrics` say.
//!
//! Ticks are aligned to the run's clock (`t0 + k s`), so row `k` covers the same second as the
//! recorder's bucket `k`. CPU % comes from two readings of cumulative CPU time (labkit::procstat
//! for processes, labkit::counters for the machine), so a one-off slow tick cannot invent load.
//! `/metrics` is scraped with a short timeout ([`scrape_metrics`]); a scrape that fails leaves
//! `None` rather than a stale value. [`Peaks`] watches a few gauges more often than once a second,
//! for their highest values over a run (the events lab's peak connections and outbox backlog).
//!
//! The sampler runs on a thread of its own ([`spawn`]), with a runtime of its own, so that its CPU
//! — the `/proc` reads, the scrapes — is measured apart from the generator's (`sampler_cpu_percent`,
//! a part of `generator_cpu_percent`). PostgreSQL's CPU is read by the job of each of its
//! processes (backends, WAL writer, checkpointer, autovacuum…: `postgres_jobs`), and its total
//! is their sum: one scan of `/proc` a second for the whole tree. Over a window of the run (the
//! plateau), it also reads each of the API's threads every tick ([`ThreadWindow`]): the API's
//! CPU by thread role, read on this same thread, so that its cost is in `sampler_cpu_percent`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use labkit::counters::MachineJiffies;
use labkit::procstat::{
    self, ProcSample, Sampler, Target, TreeParts, cpu_percent, cpu_wait_percent,
};

use crate::clock::Clock;
use crate::thread_roles::ThreadWindow;
use lab_results::{ApiMetrics, HarnessSample, PostgresJobs, ProcessSample, Refusals};

/// `metric name → value` of a Prometheus text, label sets summed: the lab's one reader of it,
/// [`labkit::prometheus`].
pub use labkit::prometheus::sums_by_name as parse_prometheus;

/// What to sample.
#[derive(Debug, Clone, Default)]
pub struct SampleTargets {
    /// The API process (`None` when it runs elsewhere, e.g. docker compose).
    pub api_pid: Option<u32>,
    /// mock-deps, when the lab started it.
    pub mock_deps_pid: Option<u32>,
    /// PostgreSQL's postmaster (sampled with its backends), when the lab started it.
    pub postgres_pid: Option<u32>,
    /// The API's `/metrics` URL.
    pub metrics_url: Option<String>,
}

/// One second's readings.
#[derive(Debug, Clone, Default)]
pub struct SampleRow {
    pub api: Option<ProcessSample>,
    /// API CPU-seconds used in this second.
    pub api_cpu_seconds: Option<f64>,
    pub metrics: Option<ApiMetrics>,
    pub harness: HarnessSample,
}

/// What the sampler read: a row a second, and the API's threads over the window asked for.
#[derive(Debug, Default)]
pub struct Sampled {
    pub rows: Vec<SampleRow>,
    /// `(from_s, to_s, account)`: the window as read (short of the one asked for when the run
    /// ended first); `None` without an API pid or a window.
    pub threads: Option<(f64, f64, labkit::threads::Account)>,
}

/// Runs [`run`] on a thread of its own (`lab-sampler`) with a current-thread runtime; the answer
/// is what it read, or an error if the thread could not start or panicked.
pub async fn spawn(
    targets: SampleTargets,
    clock: Clock,
    stop: Arc<AtomicBool>,
    threads_over: Option<(u64, u64)>,
) -> anyhow::Result<Sampled> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("lab-sampler".into())
        .spawn(move || {
            let rows = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map(|rt| rt.block_on(run(targets, clock, stop, threads_over)));
            let _ = tx.send(rows);
        })?;
    Ok(rx.await??)
}

/// Samples until `stop` is set; returns one row per whole second since the clock started, and
/// the API's threads over the whole seconds `threads_over` (`[from, to)`). Reads `/proc` on the
/// calling thread: run it on a thread of its own ([`spawn`]).
pub async fn run(
    targets: SampleTargets,
    clock: Clock,
    stop: Arc<AtomicBool>,
    threads_over: Option<(u64, u64)>,
) -> Sampled {
    let sampler = processes(&targets);
    let client = metrics_client(Duration::from_millis(700)).ok();
    let Some(t0) = started(&clock, &stop).await else {
        return Sampled::default();
    };
    let mut prev = read(&sampler);
    let mut prev_stat = labkit::counters::machine_jiffies().ok();
    let mut prev_jobs = read_jobs(targets.postgres_pid);
    let mut prev_thread = procstat::this_thread_cpu_seconds().ok();
    let mut threads = targets.api_pid.zip(threads_over).map(|(pid, window)| {
        let mut w = ThreadWindow::new(pid, window);
        w.tick(0);
        w
    });
    let mut rows = Vec::new();
    for k in 1u64.. {
        tokio::time::sleep_until((t0 + Duration::from_secs(k)).into()).await;
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let cur = read(&sampler);
        if let Some(w) = threads.as_mut() {
            w.tick(k);
        }
        let stat = labkit::counters::machine_jiffies().ok();
        let jobs = read_jobs(targets.postgres_pid);
        let postgres_jobs = postgres_jobs(targets.postgres_pid, &prev_jobs, &jobs);
        prev_jobs = jobs;
        let machine = machine_share(prev_stat, stat, |j| j.busy);
        let steal = machine_share(prev_stat, stat, |j| j.steal);
        prev_stat = stat;
        let pct = |name: &str| match (prev.get(name), cur.get(name)) {
            (Some(a), Some(b)) => cpu_percent(a, b),
            _ => None,
        };
        let api_pair = prev.get("api").zip(cur.get("api"));
        let api = cur.get("api").map(|s| ProcessSample {
            cpu_percent: pct("api").unwrap_or(0.0),
            cpu_wait_percent: api_pair.and_then(|(a, b)| cpu_wait_percent(a, b)),
            rss_bytes: s.rss_bytes,
            threads: s.threads,
            fds: s.fds.unwrap_or(0),
        });
        let api_cpu_seconds = api_pair.map(|(a, b)| (b.cpu_seconds - a.cpu_seconds).max(0.0));
        let metrics = match (&client, &targets.metrics_url) {
            (Some(c), Some(url)) => scrape(c, url).await,
            _ => None,
        };
        // This thread's CPU from the end of one tick's work to the end of the next: one tick.
        let thread = procstat::this_thread_cpu_seconds().ok();
        let sampler_pct = prev_thread
            .zip(thread)
            .map(|(a, b)| 100.0 * (b - a).max(0.0));
        prev_thread = thread;
        rows.push(SampleRow {
            api,
            api_cpu_seconds,
            metrics,
            harness: HarnessSample {
                generator_cpu_percent: pct("generator"),
                mock_deps_cpu_percent: pct("mock-deps"),
                postgres_cpu_percent: postgres_jobs.map(|j| j.total()),
                machine_cpu_percent: machine,
                machine_steal_percent: steal,
                sampler_cpu_percent: sampler_pct,
                postgres_jobs,
            },
        });
        prev = cur;
    }
    Sampled {
        rows,
        threads: threads.and_then(ThreadWindow::finish),
    }
}

/// The processes sampled: the generator itself, and the API and mock-deps where their pids are
/// known.
fn processes(targets: &SampleTargets) -> Sampler {
    let mut sampler = Sampler::new();
    sampler.add("generator", Target::Myself);
    if let Some(pid) = targets.api_pid {
        sampler.add("api", Target::Process(pid));
    }
    if let Some(pid) = targets.mock_deps_pid {
        sampler.add("mock-deps", Target::Process(pid));
    }
    sampler
}

/// The instant the run's clock started, once it has; `None` if `stop` was set first.
async fn started(clock: &Clock, stop: &AtomicBool) -> Option<std::time::Instant> {
    loop {
        if let Some(t0) = clock.get() {
            return Some(*t0);
        }
        if stop.load(Ordering::SeqCst) {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// PostgreSQL's CPU by job between two readings of its process tree.
fn postgres_jobs(
    root: Option<u32>,
    prev: &Option<(std::time::Instant, TreeParts)>,
    cur: &Option<(std::time::Instant, TreeParts)>,
) -> Option<PostgresJobs> {
    match (root, prev, cur) {
        (Some(root), Some((t0, a)), Some((t1, b))) if t1 > t0 => {
            let by_job = b.cpu_since(a, root, procstat::postgres_role);
            Some(PostgresJobs::from_seconds(
                &by_job,
                (*t1 - *t0).as_secs_f64(),
            ))
        }
        _ => None,
    }
}

/// A share of the machine's jiffies between two readings, in % of a core.
fn machine_share(
    prev: Option<MachineJiffies>,
    cur: Option<MachineJiffies>,
    part: fn(&MachineJiffies) -> u64,
) -> Option<f64> {
    match (prev, cur) {
        (Some(a), Some(b)) if b.total > a.total => Some(
            100.0 * cores() * part(&b).saturating_sub(part(&a)) as f64 / (b.total - a.total) as f64,
        ),
        _ => None,
    }
}

/// The machine's CPUs, not this process's: the generator is pinned to the harness's CPUs, and
/// the machine's busy share is of all of them.
fn cores() -> f64 {
    labkit::counters::online_cpus() as f64
}

/// One reading of every target (blocking file I/O, on the sampler's own thread).
fn read(sampler: &Sampler) -> HashMap<String, ProcSample> {
    sampler
        .sample()
        .into_iter()
        .filter_map(|(name, s)| s.map(|s| (name, s)))
        .collect()
}

/// PostgreSQL's processes with their CPU, and when they were read.
fn read_jobs(postgres: Option<u32>) -> Option<(std::time::Instant, TreeParts)> {
    let parts = procstat::tree_parts(postgres?).ok()?;
    Some((std::time::Instant::now(), parts))
}

/// A client for `/metrics` scrapes: `timeout` per scrape, no proxy.
pub fn metrics_client(timeout: Duration) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .timeout(timeout)
        .no_proxy()
        .build()
}

/// One scrape of an API's `/metrics` at `url`: every metric's value, label sets summed
/// ([`parse_prometheus`]); `None` when no successful answer came within the client's timeout.
pub async fn scrape_metrics(client: &reqwest::Client, url: &str) -> Option<HashMap<String, f64>> {
    Some(parse_prometheus(&scrape_text(client, url).await?))
}

/// One scrape's text as the API wrote it.
async fn scrape_text(client: &reqwest::Client, url: &str) -> Option<String> {
    client
        .get(url)
        .send()
        .await
        .ok()?
        .error_for_status()
        .ok()?
        .text()
        .await
        .ok()
}

async fn scrape(client: &reqwest::Client, url: &str) -> Option<ApiMetrics> {
    let text = scrape_text(client, url).await?;
    let m = parse_prometheus(&text);
    // The throttling counters only mean something where the API read its cgroup's cpu.stat.
    let cgroup = |name: &str| {
        (m.get("cgroup_cpu_stat_readable") == Some(&1.0))
            .then(|| m.get(name).copied())
            .flatten()
    };
    Some(ApiMetrics {
        db_pool_in_use: m.get("db_pool_connections_in_use").copied(),
        db_pool_waiting: m.get("db_pool_waiting").copied(),
        db_pool_acquire_timeouts: m.get("db_pool_acquire_timeouts_total").copied(),
        blocking_pool_busy: m.get("blocking_pool_busy").copied(),
        blocking_pool_queued: m.get("blocking_pool_queued").copied(),
        in_flight: m.get("http_requests_in_flight").copied(),
        db_tx_seconds_sum: m.get("db_transaction_duration_seconds_sum").copied(),
        db_tx_count: m.get("db_transaction_duration_seconds_count").copied(),
        cgroup_throttled_periods: cgroup("cgroup_cpu_nr_throttled"),
        cgroup_throttled_seconds: cgroup("cgroup_cpu_throttled_seconds"),
        refusals: Some(refusals(&text)),
    })
}

/// `orders_shed_total` by its `reason` label. A reason's series appears with its first
/// refusal, so an answer without it is zero refusals. (Every reason the APIs count is one of
/// `Refusals`'; the sampler's test reads each from the metric's help text.)
fn refusals(text: &str) -> Refusals {
    let mut r = Refusals::default();
    for s in labkit::prometheus::samples(text).filter(|s| s.name == "orders_shed_total") {
        r.set(label(s.series, "reason").unwrap_or(""), s.value);
    }
    r
}

/// For APIs the lab did not start: the settings their `/metrics` reveal.
pub async fn scraped_settings(url: &str) -> BTreeMap<String, String> {
    let mut s = BTreeMap::new();
    let client = metrics_client(Duration::from_secs(5)).unwrap_or_default();
    let text = scrape_text(&client, &format!("{url}/metrics"))
        .await
        .unwrap_or_default();
    let m = parse_prometheus(&text);
    // The build's global allocator, from its info series' label: part of the execution model.
    if let Some(a) = labkit::prometheus::samples(&text)
        .find(|s| s.name == "api_allocator_info" && s.value == 1.0)
        .and_then(|s| label(s.series, "allocator"))
    {
        s.insert("ALLOCATOR".to_owned(), a.to_owned());
    }
    for (metric, var) in [
        ("db_pool_max_connections", "DB_POOL_SIZE"),
        ("blocking_pool_threads", "BLOCKING_THREADS"),
        ("orders_admission_limit", "MAX_IN_FLIGHT"),
    ] {
        if let Some(v) = m.get(metric) {
            s.insert(var.to_owned(), format!("{v}"));
        }
    }
    s
}

/// The value of `name` in a series' `{labels}` block, as written (no escapes: the lab's own
/// label values have none).
fn label<'t>(series: &'t str, name: &str) -> Option<&'t str> {
    let labels = series.split_once('{')?.1.strip_suffix('}')?;
    labels.split(',').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k.trim() == name).then(|| v.trim().trim_matches('"'))
    })
}

/// The highest value each of a few gauges of an API's `/metrics` reached, scraped every `every`
/// from [`Peaks::watch`] until [`Peaks::stop`]; a scrape that fails adds nothing.
pub struct Peaks {
    task: tokio::task::JoinHandle<HashMap<String, f64>>,
    stop: tokio::sync::oneshot::Sender<()>,
}

impl Peaks {
    /// Starts watching `gauges` at `metrics_url`, each scrape within `timeout`.
    pub fn watch(
        metrics_url: String,
        gauges: &[&str],
        every: Duration,
        timeout: Duration,
    ) -> reqwest::Result<Self> {
        let client = metrics_client(timeout)?;
        let gauges: Vec<String> = gauges.iter().map(|g| (*g).to_owned()).collect();
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let mut peaks = HashMap::new();
            loop {
                if let Some(m) = scrape_metrics(&client, &metrics_url).await {
                    for g in &gauges {
                        if let Some(&v) = m.get(g) {
                            let peak = peaks.entry(g.clone()).or_insert(v);
                            *peak = f64::max(*peak, v);
                        }
                    }
                }
                tokio::select! {
                    _ = &mut stopped => return peaks,
                    () = tokio::time::sleep(every) => {}
                }
            }
        });
        Ok(Peaks { task, stop })
    }

    /// Stops watching; returns each gauge's highest value (absent: never scraped).
    pub async fn stop(self) -> HashMap<String, f64> {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use order_core::domain::error::ApiError;
    use order_core::plumbing::metrics::Metrics;

    #[test]
    fn every_reason_an_api_refuses_for_is_read_apart() {
        let metrics = Metrics::new(1, None);
        let reasons = [
            ApiError::Overloaded.code(),
            "overloaded_loop_lag",
            ApiError::DeadlineExceeded.code(),
            ApiError::ClientGone.code(),
        ];
        for (n, reason) in reasons.iter().enumerate() {
            metrics
                .shed
                .with_label_values(&[reason])
                .inc_by(n as u64 + 1);
        }
        let r = refusals(&metrics.render());
        assert_eq!(
            (r.overloaded, r.loop_lag, r.deadline, r.client_gone),
            (1.0, 2.0, 3.0, 4.0)
        );
        assert_eq!(r.total(), 10.0);
        assert!(
            reasons
                .iter()
                .all(|reason| Refusals::default().set(reason, 1.0)),
            "each reason has a field"
        );
        assert_eq!(refusals("# no refusal yet\n"), Refusals::default());
    }
}
