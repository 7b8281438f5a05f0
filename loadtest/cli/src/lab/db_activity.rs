//! PostgreSQL's own counters over the measured run: commits (`pg_stat_database.xact_commit`)
//! and WAL flushes (`pg_stat_wal.wal_sync`), and the API's persist batches from its `/metrics`.
//!
//! A PostgreSQL backend publishes its statistics at the end of a transaction at most once a second,
//! and an idle one only ten seconds later — or when its session ends. So the counters are read
//! before the run and again once the API has been stopped (its sessions ended, their statistics
//! published); the API's own counters are read while it still runs, right after the run. Between
//! the run and the stop the lab's checks run a few dozen read-only transactions (counted as
//! commits, never flushed); that is all that is not the run's.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{Context, Result};
use lab_results::{DbActivity, StatementTimes};
use sqlx::Connection;

/// Long enough for the backends of the stopped API to exit and publish their statistics.
const SESSIONS_END: Duration = Duration::from_millis(500);

const COUNTERS: &str = "\
SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::float8,
       wal_sync::float8, wal_write::float8
  FROM pg_stat_wal";

/// The batch writer's counters in the API's `/metrics`.
const BATCH_METRICS: [&str; 3] = [
    "persist_batch_orders_count",
    "persist_batch_orders_sum",
    "persist_batch_fallbacks_total",
];

/// pg_stat_statements of this database, in two groups: the persist batch writer's statement
/// (`order_core::plumbing::batch::PERSIST_ORDERS` begins `WITH b AS (`) and every other one.
const STATEMENTS: &str = "\
SELECT coalesce(sum(calls) FILTER (WHERE query LIKE 'WITH b AS (%'), 0)::float8,
       coalesce(sum(total_exec_time) FILTER (WHERE query LIKE 'WITH b AS (%'), 0)::float8,
       coalesce(sum(calls) FILTER (WHERE query NOT LIKE 'WITH b AS (%'), 0)::float8,
       coalesce(sum(total_exec_time) FILTER (WHERE query NOT LIKE 'WITH b AS (%'), 0)::float8
  FROM pg_stat_statements
 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())";

#[derive(Debug, Clone, Copy)]
struct Counters {
    xact_commit: f64,
    wal_sync: f64,
    wal_write: f64,
    /// batch calls, batch ms, other calls, other ms; `None` without pg_stat_statements.
    statements: Option<[f64; 4]>,
}

/// The readings so far; `None` when there is no database to ask, `Err` when a reading failed.
pub(super) struct Probe {
    database_url: Option<String>,
    api_url: String,
    before: Result<(Counters, HashMap<String, f64>)>,
    api_after: HashMap<String, f64>,
}

impl Probe {
    /// Reads the counters now, just before the run.
    pub(super) async fn start(database_url: Option<&str>, api_url: &str) -> Probe {
        let before = match database_url {
            Some(url) => match counters(url).await {
                Ok(c) => Ok((c, api_counters(api_url).await)),
                Err(e) => Err(e),
            },
            None => Err(anyhow::anyhow!("no database")),
        };
        Probe {
            database_url: database_url.map(str::to_owned),
            api_url: api_url.to_owned(),
            before,
            api_after: HashMap::new(),
        }
    }

    /// Reads the API's counters right after the run, while it still runs.
    pub(super) async fn run_ended(mut self) -> Probe {
        if self.before.is_ok() {
            self.api_after = api_counters(&self.api_url).await;
        }
        self
    }

    /// Reads PostgreSQL's counters (once the API has stopped); the differences since
    /// [`Probe::start`], over the run's `window_s`.
    /// `stopped`: the lab stopped the API (with `--targets` it runs on, and up to its last second
    /// of statistics may not be published yet).
    pub(super) async fn finish(self, window_s: f64, stopped: bool) -> Option<DbActivity> {
        let url = self.database_url?;
        let (before, api_before) = match self.before {
            Ok(b) => b,
            Err(e) => return unmeasured(&e),
        };
        tokio::time::sleep(SESSIONS_END).await;
        let after = match counters(&url).await {
            Ok(a) => a,
            Err(e) => return unmeasured(&e),
        };
        let (commits, syncs, writes) = (
            after.xact_commit - before.xact_commit,
            after.wal_sync - before.wal_sync,
            after.wal_write - before.wal_write,
        );
        if commits < 0.0 || syncs < 0.0 || writes < 0.0 {
            // A crash restart (a fault plan) discards the statistics.
            return unmeasured(&anyhow::anyhow!(
                "PostgreSQL's statistics were reset mid-run"
            ));
        }
        // Counters of an API restarted mid-run (a fault plan) start again from 0: not comparable.
        let api = |name: &str| {
            let d = self.api_after.get(name)? - api_before.get(name).copied().unwrap_or(0.0);
            (d >= 0.0).then_some(d)
        };
        Some(DbActivity {
            window_s,
            xact_commit: commits,
            wal_sync: syncs,
            wal_write: writes,
            persist_batches: api(BATCH_METRICS[0]),
            persist_batch_orders: api(BATCH_METRICS[1]),
            persist_batch_fallbacks: api(BATCH_METRICS[2]),
            statements: match (before.statements, after.statements) {
                (Some(b), Some(a)) if a.iter().zip(&b).all(|(a, b)| a >= b) => {
                    Some(StatementTimes {
                        batch_calls: a[0] - b[0],
                        batch_exec_ms: a[1] - b[1],
                        other_calls: a[2] - b[2],
                        other_exec_ms: a[3] - b[3],
                    })
                }
                _ => None,
            },
            detail: format!(
                "pg_stat_database.xact_commit of the API's database and pg_stat_wal (whole cluster), \
                 read just before the first request and {} (the lab's read-only checks in between \
                 are counted too); the API's persist_batch_* counters read before and right after \
                 the run; statement execution from pg_stat_statements; rates over the run's {window_s:.2} s",
                if stopped {
                    "once the API had stopped (its sessions publish their statistics as they end)"
                } else {
                    "after the checks, the API still running (its sessions' last second of \
                     statistics may be missing)"
                }
            ),
        })
    }
}

/// Said on stderr; the results then have no `db_activity`.
fn unmeasured(why: &anyhow::Error) -> Option<DbActivity> {
    eprintln!("PostgreSQL's commits and WAL flushes were not measured: {why:#}");
    None
}

async fn counters(database_url: &str) -> Result<Counters> {
    let mut conn = sqlx::PgConnection::connect(database_url)
        .await
        .context("connecting to PostgreSQL")?;
    let (xact_commit, wal_sync, wal_write): (f64, f64, f64) = sqlx::query_as(COUNTERS)
        .fetch_one(&mut conn)
        .await
        .context("reading pg_stat_database and pg_stat_wal")?;
    // The lab's own cluster preloads pg_stat_statements; elsewhere it may be missing.
    let statements = match sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .execute(&mut conn)
        .await
    {
        Ok(_) => sqlx::query_as::<_, (f64, f64, f64, f64)>(STATEMENTS)
            .fetch_one(&mut conn)
            .await
            .ok()
            .map(|(a, b, c, d)| [a, b, c, d]),
        Err(_) => None,
    };
    conn.close().await.ok();
    Ok(Counters {
        xact_commit,
        wal_sync,
        wal_write,
        statements,
    })
}

/// The batch writer's counters (none when the API has no writer, or does not answer).
async fn api_counters(api_url: &str) -> HashMap<String, f64> {
    let client = loadgen::sampler::metrics_client(Duration::from_secs(5)).unwrap_or_default();
    let mut api = loadgen::sampler::scrape_metrics(&client, &format!("{api_url}/metrics"))
        .await
        .unwrap_or_default();
    api.retain(|k, _| BATCH_METRICS.contains(&k.as_str()));
    api
}
