//! One run of `--scenario events`: an API with an `EVENTS_MODE`, loaded the way the
//! original was (`ab -c 30 -n N`: a closed model, each client sends its next order when the
//! last one answered), with the broker behind a latency proxy, and what became of the events.
//!
//! The load is loadgen's closed model (`closed-C-N`), its clients pausing 200 ms after a
//! transport failure so that a crashed API does not eat their requests. Measured at the client:
//! requests per second over the whole run (every answer counts, as in ab), mean and max latency
//! from send to answer, errors by their status and machine code (`503 database_unavailable` is a
//! pool acquire that timed out on the persist path) or transport failure. From the API's
//! `/metrics` (loadgen's sampler), scraped every 200 ms: peak connections in use, peak outbox
//! backlog; before and after: pool acquire timeouts. After the load, the lab waits until the API
//! has settled (no unsent outbox row, no prepared transaction, no key left in `CHARGING`; at most
//! [`SETTLE_LIMIT`]) and takes the census: every order id in PostgreSQL against every subject in
//! the stream → events lost (an order without its event), duplicated (a subject with more than
//! one message) and orphaned (an event without its order).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use event_broker::Broker;
use lab_results::scenario::EventsRow;
use lab_results::{OUTCOME_CONNECT_ERROR, OUTCOME_IO_ERROR};
use labkit::nats::EphemeralNats;
use latency_proxy::LatencyProxy;
use loadgen::driver::{DriverConfig, LoopControl, Sharding};
use loadgen::profile::Profile;
use loadgen::recorder::Acc;
use loadgen::sampler::{Peaks, metrics_client, scrape_metrics};
use order_core::domain::error::ErrorCode;
use sqlx::Connection;
use strum::IntoEnumIterator;
use tokio::sync::Mutex;

use crate::api_env::{ApiSettings, EventsEnv};
use crate::lab::census::{Census, census};
use crate::lab_args::{Durability, HarnessArgs};
use crate::services::{ApiProcess, Database, MockDepsProcess};
use order_core::plumbing::events_mode::EventsMode;

/// The longest wait, after the load, for the API to settle every order and event.
pub const SETTLE_LIMIT: Duration = Duration::from_secs(90);
/// A client whose request failed in transport (the API is down) waits this long before its next.
const CLIENT_BACKOFF: Duration = Duration::from_millis(200);
/// A client's wait for its answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The gauges watched while the load runs, how often, and each scrape's timeout.
const IN_USE: &str = "db_pool_connections_in_use";
const BACKLOG: &str = "events_outbox_backlog";
const PEAKS_EVERY: Duration = Duration::from_millis(200);
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);
/// The API's count of pool acquires that timed out.
const POOL_TIMEOUTS: &str = "db_pool_acquire_timeouts_total";

/// What one run is.
#[derive(Debug, Clone)]
pub struct EventsRun {
    pub api: String,
    pub mode: &'static str,
    /// `healthy` or `slowed`.
    pub broker: &'static str,
    /// Round-trip time the proxy adds between the API and NATS.
    pub broker_rtt_ms: u64,
    pub clients: usize,
    pub requests: u64,
    /// `kill -9` of the API once this many answers came back, then a restart.
    pub crash_after: Option<u64>,
    /// (start s, duration s, rtt ms): the broker slowed mid-run (`--inject broker=…`).
    pub inject: Option<(f64, f64, u64)>,
}

/// What every run of the scenario shares: PostgreSQL, mock-deps at 0 ms, NATS behind the proxy.
pub struct EventsLab {
    pub db: Database,
    /// Where the APIs reach `db` (`--db-via`).
    api_database_url: String,
    pub mock: MockDepsProcess,
    pub nats: EphemeralNats,
    pub proxy: LatencyProxy,
    /// A client straight to NATS (not through the proxy): purges and census.
    pub broker: Broker,
    pub logs: PathBuf,
    /// Each API's cgroup limits (`None`: `--no-limits`).
    pub pod: Option<labkit::cgroup::ResourceLimits>,
}

impl EventsLab {
    /// Starts what every run shares; the database durable, with the harness's `--pg-setting`s.
    pub async fn start(harness: &HarnessArgs, logs: &Path) -> Result<Self> {
        let pod = harness.pod();
        let via = harness.db_via;
        let harness = harness.clone();
        // The API alone on its CPU, NATS and the rest on the others (as in `loadtest lab`).
        if let Err(why) = crate::services::place_harness(true)? {
            eprintln!("events: {why}");
        }
        let logs_owned = logs.to_owned();
        let (db, mock, nats) = tokio::task::spawn_blocking(move || -> Result<_> {
            let db = Database::open_with_settings(
                harness.database_url.as_deref(),
                Durability::On,
                &harness.pg_setting_pairs(),
            )?;
            let mock = MockDepsProcess::start(&logs_owned)?;
            let nats = EphemeralNats::start()?;
            Ok((db, mock, nats))
        })
        .await??;
        // The original service did only database and broker work: the mocks answer at once.
        let zero = lab_results::MockLatencies {
            seller: 0,
            risk: 0,
            payment: 0,
        };
        crate::run::set_mock_latencies(&mock.url, zero).await?;
        let upstream = ([127, 0, 0, 1], nats.port()).into();
        let proxy = LatencyProxy::start_adjustable(upstream, Duration::ZERO).await?;
        let broker = Broker::connect(
            &nats.url(),
            Duration::from_secs(10),
            Duration::from_secs(10),
        )
        .await
        .context("connecting the lab to NATS")?;
        Ok(EventsLab {
            api_database_url: db.api_url(via),
            db,
            mock,
            nats,
            proxy,
            broker,
            logs: logs.to_owned(),
            pod,
        })
    }

    /// Empty tables, no prepared transaction of ours, an empty stream.
    async fn fresh_state(&self) -> Result<()> {
        let mut conn = sqlx::PgConnection::connect(&self.db.url).await?;
        let gids: Vec<String> = sqlx::query_scalar(
            "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()",
        )
        .fetch_all(&mut conn)
        .await?;
        for gid in gids {
            let sql = format!("ROLLBACK PREPARED '{}'", gid.replace('\'', "''"));
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                .execute(&mut conn)
                .await?;
        }
        sqlx::query(crate::invariants::TRUNCATE)
            .execute(&mut conn)
            .await?;
        conn.close().await.ok();
        let _ = self.broker.delete_stream().await;
        self.broker.ensure_stream().await?;
        crate::run::reset_mock(&self.mock.url).await?;
        Ok(())
    }

    fn settings(&self, run: &EventsRun) -> Result<BTreeMap<String, String>> {
        let nats_url = format!("nats://{}", self.proxy.local_addr());
        api_env(&self.api_database_url, &self.mock.url, &nats_url, run.mode)
    }

    /// Runs `run` end to end and returns its row.
    pub async fn run(&self, run: &EventsRun, seed: u64) -> Result<EventsRow> {
        let base_rtt = Duration::from_millis(run.broker_rtt_ms);
        self.proxy.set_rtt(base_rtt);
        let settings = self.settings(run)?;
        let (name, logs, pod) = (run.api.clone(), self.logs.clone(), self.pod);
        let api =
            tokio::task::spawn_blocking(move || ApiProcess::start(&name, &settings, pod, &logs))
                .await??;
        let url = api.url.clone();
        let api = Arc::new(Mutex::new(api));
        // The API migrated the database at start-up; now the state can be emptied.
        self.fresh_state().await?;
        // Warm-up (connections, caches), excluded: 60 orders from 10 clients.
        closed_load(&url, 10, 60, seed ^ 0xa5a5, None).await?;
        self.settle(Instant::now()).await;
        self.fresh_state().await?;
        let metrics_url = format!("{url}/metrics");
        let timeouts_before = pool_timeouts(&metrics_url).await;
        let peaks = Peaks::watch(
            metrics_url.clone(),
            &[IN_USE, BACKLOG],
            PEAKS_EVERY,
            SCRAPE_TIMEOUT,
        )?;
        let crash = run.crash_after.map(|after| (after, api.clone()));
        let slowdown = async {
            if let Some((start, duration, ms)) = run.inject {
                tokio::time::sleep(Duration::from_secs_f64(start)).await;
                self.proxy.set_rtt(Duration::from_millis(ms));
                tokio::time::sleep(Duration::from_secs_f64(duration)).await;
                self.proxy.set_rtt(base_rtt);
            }
        };
        let load = closed_load(&url, run.clients, run.requests, seed, crash);
        let load = tokio::select! {
            load = load => load?,
            // The slowdown ends first or is cut short when the load ends.
            () = async { slowdown.await; std::future::pending::<()>().await } => unreachable!(),
        };
        self.proxy.set_rtt(base_rtt);
        let load_end = Instant::now();
        let (settled, drain) = self.settle(load_end).await;
        let peaks = peaks.stop().await;
        let peak = |gauge: &str| peaks.get(gauge).copied().unwrap_or(0.0) as u64;
        let timeouts_after = pool_timeouts(&metrics_url).await;
        let census = self.census().await?;
        let api = Arc::try_unwrap(api)
            .map_err(|_| anyhow::anyhow!("the crash task still holds the API"))?
            .into_inner();
        tokio::task::spawn_blocking(move || api.stop()).await??;
        Ok(EventsRow {
            api: run.api.clone(),
            mode: run.mode.to_owned(),
            broker: run.broker.to_owned(),
            crash: run.crash_after.is_some(),
            req_per_s: load.answered as f64 / load.elapsed_s.max(1e-9),
            mean_ms: load.mean_ms,
            max_ms: load.max_ms,
            errors: load.errors.values().sum(),
            orders: census.orders,
            events_in_stream: census.messages,
            events_lost: census.lost,
            events_duplicated: census.duplicated,
            requests: run.requests,
            broker_rtt_ms: run.broker_rtt_ms,
            errors_by_kind: load.errors,
            pool_timeouts: match (run.crash_after, timeouts_before, timeouts_after) {
                (None, Some(b), Some(a)) => Some((a - b).max(0.0) as u64),
                _ => None,
            },
            peak_connections_in_use: peak(IN_USE),
            events_orphaned: census.orphaned,
            outbox_backlog_peak: peak(BACKLOG),
            outbox_drain_s: if run.mode == "outbox" { drain } else { None },
            settled,
        })
    }

    /// Waits until nothing is left to settle (see the module doc) or [`SETTLE_LIMIT`] passed;
    /// returns whether it settled and when the outbox had drained, in seconds after `since`.
    async fn settle(&self, since: Instant) -> (bool, Option<f64>) {
        let mut drained = None;
        while since.elapsed() < SETTLE_LIMIT {
            if let Ok(p) = pending(&self.db.url).await {
                if p.unsent == 0 && drained.is_none() {
                    drained = Some(since.elapsed().as_secs_f64());
                }
                if p.unsent == 0 && p.prepared == 0 && p.charging == 0 {
                    return (true, drained);
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (false, drained)
    }

    async fn census(&self) -> Result<Census> {
        census(&self.broker, &self.db.url).await
    }
}

/// What remains to settle.
pub(crate) struct Pending {
    /// Outbox rows not yet sent.
    pub unsent: i64,
    prepared: i64,
    charging: i64,
}

pub(crate) async fn pending(database_url: &str) -> Result<Pending> {
    let mut conn = sqlx::PgConnection::connect(database_url).await?;
    let (unsent, prepared, charging): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM order_outbox WHERE sent_at IS NULL),
                (SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()),
                (SELECT count(*) FROM idempotency_keys WHERE state = 'CHARGING')",
    )
    .fetch_one(&mut conn)
    .await?;
    conn.close().await.ok();
    Ok(Pending {
        unsent,
        prepared,
        charging,
    })
}

/// What the clients saw.
struct Load {
    /// Requests that ended (answered, timed out or failed).
    answered: u64,
    /// Over every request, from loadgen's whole-run histogram (µs, 3 significant digits).
    mean_ms: f64,
    max_ms: f64,
    /// Non-201 endings by [`error_label`].
    errors: BTreeMap<String, u64>,
    /// From the first request's start to the last one's end.
    elapsed_s: f64,
}

impl Load {
    fn of(total: &Acc, elapsed_s: f64) -> Self {
        let mut errors = BTreeMap::new();
        for (kind, n) in total.errors_by_kind() {
            *errors.entry(error_label(&kind)).or_default() += n;
        }
        Load {
            answered: total.completed,
            mean_ms: total.latency.mean() / 1000.0,
            max_ms: if total.latency.is_empty() {
                0.0
            } else {
                total.latency.max() as f64 / 1000.0
            },
            errors,
            elapsed_s,
        }
    }
}

/// A loadgen outcome kind as this table writes it: an API error as its status and machine code
/// (`503 database_unavailable`; an answer without a code `503 unknown`), `timeout`, and any other
/// transport failure (refused, reset: the API was down) as `connection`.
fn error_label(kind: &str) -> String {
    if kind == OUTCOME_CONNECT_ERROR || kind == OUTCOME_IO_ERROR {
        return "connection".to_owned();
    }
    if let Some(status) = kind.strip_prefix("http_") {
        return format!("{status} unknown");
    }
    match ErrorCode::iter().find(|code| code.as_str() == kind) {
        Some(code) => format!("{} {kind}", code.status().as_u16()),
        None => kind.to_owned(),
    }
}

/// `clients` clients send `requests` fresh orders between them (loadgen's `closed-C-N`), each its
/// next as soon as the last one answered, or [`CLIENT_BACKOFF`] after a transport failure. With
/// `crash`, once `after` requests have ended the API is killed (`kill -9`) and started again
/// while the clients go on.
async fn closed_load(
    url: &str,
    clients: usize,
    requests: u64,
    seed: u64,
    crash: Option<(u64, Arc<Mutex<ApiProcess>>)>,
) -> Result<Load> {
    let profile = Profile::parse(&format!("closed-{clients}-{requests}"), 1.0)?;
    let mut run_id = format!("ev{seed:x}");
    run_id.truncate(10);
    let cfg = DriverConfig {
        sharding: Sharding {
            seed: Some(seed),
            ..Sharding::default()
        },
        transport_pause: Some(CLIENT_BACKOFF),
        ..DriverConfig::new(url, profile, run_id, REQUEST_TIMEOUT)
    };
    let control = Arc::new(LoopControl::default());
    let crasher = crash.map(|(after, api)| tokio::spawn(crash_after(after, api, control.clone())));
    let out = loadgen::driver::drive_with(cfg, Arc::new(OnceLock::new()), control).await;
    if let Some(crasher) = crasher {
        if out.is_err() {
            crasher.abort();
        }
        let _ = crasher.await;
    }
    let out = out.context("the closed load")?;
    Ok(Load::of(
        &out.recorder.total,
        out.last_answer_s.unwrap_or_default(),
    ))
}

/// Kills the API (`kill -9`) once `after` requests of the loop have ended, and starts it again.
async fn crash_after(after: u64, api: Arc<Mutex<ApiProcess>>, control: Arc<LoopControl>) {
    while control.requests_answered() < after {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut api = api.lock_owned().await;
    let killed = api.kill();
    let restarted = tokio::task::block_in_place(|| api.restart());
    if let Err(e) = killed.and(restarted) {
        eprintln!("events scenario: the crash run could not kill and restart the API: {e:#}");
    }
}

/// The API's count of pool acquires that timed out, from its `/metrics` at `metrics_url`.
async fn pool_timeouts(metrics_url: &str) -> Option<f64> {
    let client = metrics_client(SCRAPE_TIMEOUT).ok()?;
    scrape_metrics(&client, metrics_url)
        .await?
        .get(POOL_TIMEOUTS)
        .copied()
}

/// The environment of an events run's API: the database at `database_url`, mock-deps at
/// `deps_url`, NATS (through the proxy) at `nats_url`, and the scenario's settings.
fn api_env(
    database_url: &str,
    deps_url: &str,
    nats_url: &str,
    mode: &str,
) -> Result<BTreeMap<String, String>> {
    let mode = <EventsMode as clap::ValueEnum>::from_str(mode, false)
        .map_err(|e| anyhow::anyhow!("events mode {mode:?}: {e}"))?;
    let settings = ApiSettings {
        deps_url: Some(deps_url.to_owned()),
        // The original's pool: 10 connections, 5 s waits.
        db_pool_size: 10,
        db_pool_timeout_ms: 5000,
        deps_timeout_ms: 2000,
        deps_http: None,
        http_workers: 1,
        db_tx_scope: None,
        // The floor for these timeouts: a crash's keys are recovered within the settle wait.
        lease_ms: 9000,
        reconcile_interval_ms: 1000,
        persist_batch: None,
        queue_timeout_ms: None,
        request_deadline_ms: None,
        db_statement_timeout_ms: None,
        // No shedding: the original admitted every request.
        max_loop_lag_ms: 0,
        max_in_flight: Some(0),
        events: Some(EventsEnv {
            mode,
            nats_url: nats_url.to_owned(),
            // Above the slowed broker's round trip: the broker is slow, not gone.
            nats_timeout_ms: 5000,
        }),
        blocking_threads: Some(200),
        // blocking-api's default client.
        deps_client: None,
    };
    Ok(settings.env_at(database_url))
}

#[cfg(test)]
#[path = "one_run_tests.rs"]
mod tests;
