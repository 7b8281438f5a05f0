//! What the bench reads at the two ends of a window, and through it.
//!
//! A [`Snapshot`] holds every cumulative counter at one instant: the API's CPU (user, system),
//! context switches and CPU wait; the CPU of each harness part (this process = the generator,
//! mock-deps, PostgreSQL's tree, the latency proxy); the machine's busy time; the orders in the
//! database; the requests mock-deps received. [`Snapshot::delta`] turns two of them into the
//! window's [`WindowCounts`]. PostgreSQL's WAL, commits and buffers come from its own counters
//! ([`super::pg_counters`]). SQL statements come from pg_stat_statements, reset at the window's
//! start ([`reset_statements`]) and read at its end ([`read_statements`]). [`sample_memory`]
//! reads the API's RSS, threads and busy gauge twice a second through the window.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use labkit::counters::{self, ProcessCounters};
use labkit::procstat::{self, Target};

use lab_results::bench::{StatementCalls, WindowCounts};

/// Marks the bench's own statements, which pg_stat_statements must not count as the API's.
const TAG: &str = "/* loadtest bench */";

/// The processes of one cell.
#[derive(Debug, Clone, Copy)]
pub struct Parts {
    pub api: u32,
    pub mock_deps: Option<u32>,
    pub postgres: Option<u32>,
    pub latency_proxy: Option<u32>,
}

/// Every cumulative counter at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub at: Instant,
    pub api: ProcessCounters,
    pub api_cpu_wait_s: Option<f64>,
    pub generator_cpu_s: Option<f64>,
    pub mock_deps_cpu_s: Option<f64>,
    pub postgres_cpu_s: Option<f64>,
    pub latency_proxy_cpu_s: Option<f64>,
    pub machine_busy_s: Option<f64>,
    pub orders: u64,
    pub http_calls: Option<u64>,
    pub postgres: Option<lab_results::cost::PgCounters>,
}

impl Snapshot {
    /// Reads everything: the database and mock-deps first (network round trips), then `/proc`
    /// in one go, so the CPU counters are read within a few milliseconds of each other.
    pub async fn take(
        parts: Parts,
        conn: &mut sqlx::PgConnection,
        deps_url: &str,
    ) -> Result<Snapshot> {
        let orders = count_orders(conn).await?;
        let postgres = super::pg_counters::read(conn).await.ok();
        let http_calls = mock_requests(deps_url).await.ok();
        let read = tokio::task::spawn_blocking(move || {
            let cpu = |t: Target| procstat::read(t).ok().map(|s| s.cpu_seconds);
            let api = counters::read_process(parts.api);
            let api_wait = procstat::read(Target::Process(parts.api))
                .ok()
                .and_then(|s| s.cpu_wait_seconds);
            (
                api,
                api_wait,
                cpu(Target::Myself),
                parts.mock_deps.and_then(|p| cpu(Target::Process(p))),
                parts.postgres.and_then(|p| cpu(Target::Tree(p))),
                parts.latency_proxy.and_then(|p| cpu(Target::Process(p))),
                counters::machine_busy_seconds().ok(),
                Instant::now(),
            )
        })
        .await?;
        let (api, api_cpu_wait_s, generator, mock, pg, proxy, machine, at) = read;
        Ok(Snapshot {
            at,
            api: api.context("reading the API's counters")?,
            api_cpu_wait_s,
            generator_cpu_s: generator,
            mock_deps_cpu_s: mock,
            postgres_cpu_s: pg,
            latency_proxy_cpu_s: proxy,
            machine_busy_s: machine,
            orders,
            http_calls,
            postgres,
        })
    }

    /// The window from `self` to `end` (statements are filled in by the caller).
    pub fn delta(&self, end: &Snapshot) -> WindowCounts {
        let d = |a: Option<f64>, b: Option<f64>| Some((b? - a?).max(0.0));
        WindowCounts {
            seconds: end.at.saturating_duration_since(self.at).as_secs_f64(),
            orders: end.orders.saturating_sub(self.orders),
            api_user_s: (end.api.user_seconds - self.api.user_seconds).max(0.0),
            api_system_s: (end.api.system_seconds - self.api.system_seconds).max(0.0),
            api_cpu_wait_s: d(self.api_cpu_wait_s, end.api_cpu_wait_s),
            api_voluntary_switches: end
                .api
                .voluntary_switches
                .saturating_sub(self.api.voluntary_switches),
            api_involuntary_switches: end
                .api
                .involuntary_switches
                .saturating_sub(self.api.involuntary_switches),
            sql_statements: None,
            http_calls: self
                .http_calls
                .zip(end.http_calls)
                .map(|(a, b)| b.saturating_sub(a)),
            generator_cpu_s: d(self.generator_cpu_s, end.generator_cpu_s),
            mock_deps_cpu_s: d(self.mock_deps_cpu_s, end.mock_deps_cpu_s),
            postgres_cpu_s: d(self.postgres_cpu_s, end.postgres_cpu_s),
            latency_proxy_cpu_s: d(self.latency_proxy_cpu_s, end.latency_proxy_cpu_s),
            machine_busy_s: d(self.machine_busy_s, end.machine_busy_s),
            postgres: self.postgres.zip(end.postgres).map(|(a, b)| a.delta(&b)),
        }
    }
}

/// Orders in the database now.
pub async fn count_orders(conn: &mut sqlx::PgConnection) -> Result<u64> {
    let sql = format!("SELECT {TAG} count(*) FROM orders");
    let (n,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .fetch_one(conn)
        .await
        .context("counting orders")?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Requests mock-deps received so far: seller + risk + payment, and payment look-ups
/// (`GET /admin/stats`).
pub async fn mock_requests(deps_url: &str) -> Result<u64> {
    let v: serde_json::Value = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .no_proxy()
        .build()?
        .get(format!("{}/admin/stats", deps_url.trim_end_matches('/')))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    Ok(requests_in_stats(&v))
}

/// The request counters of a `GET /admin/stats` document, summed.
pub fn requests_in_stats(v: &serde_json::Value) -> u64 {
    let n = |dep: &str, field: &str| v[dep][field].as_u64().unwrap_or(0);
    n("seller", "requests")
        + n("risk", "requests")
        + n("payment", "requests")
        + n("payment", "lookups")
}

/// Whether this session can read pg_stat_statements (the library preloaded, the extension made).
pub async fn statements_readable(conn: &mut sqlx::PgConnection) -> bool {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {TAG} count(*) FROM pg_stat_statements"
    )))
    .execute(conn)
    .await
    .is_ok()
}

/// Empties pg_stat_statements (every database: the bench's cluster is its own).
pub async fn reset_statements(conn: &mut sqlx::PgConnection) -> Result<()> {
    sqlx::query("SELECT pg_stat_statements_reset()")
        .execute(conn)
        .await
        .context("pg_stat_statements_reset()")?;
    Ok(())
}

/// pg_stat_statements of this database since the reset, by calls, the bench's own statements
/// left out; `per_order` is filled in with `orders`.
pub async fn read_statements(
    conn: &mut sqlx::PgConnection,
    orders: u64,
) -> Result<Vec<StatementCalls>> {
    let sql = format!(
        "SELECT {TAG} regexp_replace(query, '\\s+', ' ', 'g'), calls, mean_exec_time
           FROM pg_stat_statements
          WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND query NOT LIKE '%loadtest bench%'
            AND query NOT LIKE '%pg_stat_statements%'
          ORDER BY calls DESC, query"
    );
    let rows: Vec<(String, i64, f64)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .fetch_all(conn)
        .await
        .context("reading pg_stat_statements")?;
    Ok(rows
        .into_iter()
        .map(|(query, calls, mean_ms)| {
            let calls = u64::try_from(calls).unwrap_or(0);
            StatementCalls {
                query,
                calls,
                per_order: if orders > 0 {
                    calls as f64 / orders as f64
                } else {
                    0.0
                },
                mean_ms,
            }
        })
        .collect())
}

/// One reading of the API's memory and busy gauge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemorySample {
    pub rss_bytes: u64,
    pub threads: u64,
    /// The busy gauge (`blocking_pool_busy` or `http_requests_in_flight`); `None` when the
    /// scrape failed.
    pub busy: Option<f64>,
}

/// Samples the API twice a second until `stop` is set. `gauge` is the `/metrics` name of its
/// busy gauge.
pub async fn sample_memory(
    pid: u32,
    metrics_url: String,
    gauge: &'static str,
    stop: Arc<AtomicBool>,
) -> Vec<MemorySample> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(400))
        .no_proxy()
        .build()
        .ok();
    let mut out = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(c) = counters::read_process(pid) else {
            break;
        };
        let busy = match &client {
            Some(client) => scrape_gauge(client, &metrics_url, gauge).await,
            None => None,
        };
        out.push(MemorySample {
            rss_bytes: c.rss_bytes,
            threads: c.threads,
            busy,
        });
    }
    out
}

async fn scrape_gauge(client: &reqwest::Client, url: &str, gauge: &str) -> Option<f64> {
    let text = client.get(url).send().await.ok()?.text().await.ok()?;
    loadgen::sampler::parse_prometheus(&text)
        .get(gauge)
        .copied()
}

/// Means of the samples: (RSS, threads, busy — over the samples that have it).
pub fn means(samples: &[MemorySample]) -> (u64, f64, Option<f64>) {
    if samples.is_empty() {
        return (0, 0.0, None);
    }
    let n = samples.len() as f64;
    let rss = samples.iter().map(|s| s.rss_bytes as f64).sum::<f64>() / n;
    let threads = samples.iter().map(|s| s.threads as f64).sum::<f64>() / n;
    let busy: Vec<f64> = samples.iter().filter_map(|s| s.busy).collect();
    let busy = (!busy.is_empty()).then(|| busy.iter().sum::<f64>() / busy.len() as f64);
    (rss.round() as u64, threads, busy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mock_requests_add_the_three_dependencies_and_lookups() {
        let v = serde_json::json!({
            "seller": {"requests": 10, "ok": 10},
            "risk": {"requests": 10},
            "payment": {"requests": 9, "lookups": 2}
        });
        assert_eq!(requests_in_stats(&v), 31);
        assert_eq!(requests_in_stats(&serde_json::json!({})), 0);
    }

    #[test]
    fn means_skip_missing_gauges() {
        let s = |rss, busy| MemorySample {
            rss_bytes: rss,
            threads: 4,
            busy,
        };
        let (rss, threads, busy) = means(&[s(100, Some(2.0)), s(300, None), s(200, Some(4.0))]);
        assert_eq!((rss, threads, busy), (200, 4.0, Some(3.0)));
        assert_eq!(means(&[]), (0, 0.0, None));
        assert_eq!(means(&[s(1, None)]).2, None);
    }

    #[test]
    fn a_window_is_the_difference_of_two_snapshots() {
        let t0 = Instant::now();
        let snap = |secs: u64, cpu: f64, orders: u64| Snapshot {
            at: t0 + Duration::from_secs(secs),
            api: ProcessCounters {
                user_seconds: cpu,
                system_seconds: cpu / 2.0,
                voluntary_switches: orders * 10,
                involuntary_switches: orders,
                rss_bytes: 0,
                peak_rss_bytes: 0,
                threads: 1,
            },
            api_cpu_wait_s: Some(cpu / 10.0),
            generator_cpu_s: Some(cpu),
            mock_deps_cpu_s: None,
            postgres_cpu_s: Some(cpu * 3.0),
            latency_proxy_cpu_s: None,
            machine_busy_s: Some(cpu * 6.0),
            orders,
            http_calls: Some(orders * 3),
            postgres: None,
        };
        let w = snap(5, 1.0, 100).delta(&snap(25, 3.0, 1100));
        assert_eq!(w.seconds, 20.0);
        assert_eq!(w.orders, 1000);
        assert_eq!((w.api_user_s, w.api_system_s), (2.0, 1.0));
        assert_eq!(
            (w.api_voluntary_switches, w.api_involuntary_switches),
            (10_000, 1000)
        );
        assert_eq!(w.http_calls, Some(3000));
        assert_eq!(w.postgres_cpu_s, Some(6.0));
        assert_eq!(w.mock_deps_cpu_s, None);
        assert!((w.api_cpu_wait_s.unwrap() - 0.2).abs() < 1e-9);
    }
}
