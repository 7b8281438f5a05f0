//! `--scenario soak`: each API for 30 minutes at a steady rate it serves (`constant-75-1800`, the
//! seed's latencies; times × `--duration-scale`), to see what grows while nothing else changes:
//! its RSS, open files and threads, the latency of its answers and orders/s, compared between a
//! minute early in the run (from 5 % in, once warmed up) and its last minute, and the database's
//! tables at the end (the lab empties them before each run), per order made.
//!
//! 75/s is what blocking-api at its default 200 threads serves within the objective (its capacity
//! at 200 threads, docs/results/capacity.md; Little's law: 75 × 2.2 s = 165 threads busy), so the
//! soak measures each API serving, not shedding.
//!
//! Here: the plan, the tables' sizes read from the database, and the conclusion (what grew beyond
//! [`GROWTH`]); the windows and the table are `lab_report::scenario::soak`'s.

use anyhow::{Context, Result};
use lab_results::RunResults;
use lab_results::numbers::{MIB, ms_or_s};

use super::Variant;
use lab_report::scenario::ScenarioTable;
use lab_report::scenario::figures::constant_seconds;
use lab_report::scenario::soak::{self, Plan, Window, figures, windows};
pub use lab_report::scenario::soak::{SETTLE, TableSize, WINDOW_S, settle_for, window_for};

/// The steady rate, orders/s.
pub const RATE: u64 = 75;
/// The run's length at `--duration-scale 1`, s.
pub const DURATION_S: u64 = 1800;
/// Growth from the first window to the last above this share is called growth on the page.
pub const GROWTH: f64 = 0.10;

/// The tables the order path writes, in the order the page lists them.
const TABLES: &[&str] = &[
    "idempotency_keys",
    "orders",
    "order_items",
    "customers",
    "order_outbox",
];

/// The sizes of the order path's tables in the database at `url` (those that exist).
pub async fn table_sizes(url: &str) -> Result<Vec<TableSize>> {
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(url)
        .await
        .context("connecting to the soak's database")?;
    let rows: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT relname::text, pg_total_relation_size(relid), n_live_tup \
         FROM pg_stat_user_tables WHERE relname = ANY($1)",
    )
    .bind(TABLES)
    .fetch_all(&mut conn)
    .await
    .context("reading the tables' sizes")?;
    let mut sizes: Vec<TableSize> = rows
        .into_iter()
        .map(|(table, bytes, rows)| TableSize { table, bytes, rows })
        .collect();
    sizes.sort_by_key(|s| TABLES.iter().position(|t| *t == s.table));
    Ok(sizes)
}

/// The soak's table (`lab_report::scenario::soak`) with its conclusion: per API, what grew.
pub fn table(
    done: &[(Variant, Vec<RunResults>)],
    sizes: &[(String, Vec<TableSize>)],
) -> ScenarioTable {
    let plan = Plan {
        rate: RATE,
        duration_s: DURATION_S,
        growth: GROWTH,
    };
    let mut table = soak::table(&super::plain(done), sizes, &plan);
    table.conclusion = done
        .iter()
        .filter_map(|(_, runs)| {
            let r = runs.first()?;
            let constant = constant_seconds(r);
            let window = window_for(constant.len() as f64);
            let (first, last) = windows(&constant, window)?;
            Some(verdict(&r.api, &figures(first), &figures(last)))
        })
        .collect();
    table
}

/// One sentence per API: what grew beyond [`GROWTH`], or that nothing did.
fn verdict(api: &str, a: &Window, b: &Window) -> String {
    let grew = |from: f64, to: f64| from > 0.0 && to > from * (1.0 + GROWTH);
    let mut growing = Vec::new();
    if grew(a.rss_mean_bytes, b.rss_mean_bytes) {
        growing.push(format!(
            "RSS {:.1} → {:.1} MiB",
            a.rss_mean_bytes / MIB,
            b.rss_mean_bytes / MIB
        ));
    }
    if grew(a.fds_max as f64, b.fds_max as f64) {
        growing.push(format!("open files {} → {}", a.fds_max, b.fds_max));
    }
    if grew(a.threads_max as f64, b.threads_max as f64) {
        growing.push(format!("threads {} → {}", a.threads_max, b.threads_max));
    }
    if grew(a.p99_median_ms, b.p99_median_ms) {
        growing.push(format!(
            "p99 {} → {}",
            ms_or_s(a.p99_median_ms),
            ms_or_s(b.p99_median_ms)
        ));
    }
    if growing.is_empty() {
        format!(
            "{api}: nothing grew by more than {:.0} % from the first window to the last \
             (RSS {:.1} → {:.1} MiB, open files {} → {}, p99 {} → {}).",
            100.0 * GROWTH,
            a.rss_mean_bytes / MIB,
            b.rss_mean_bytes / MIB,
            a.fds_max,
            b.fds_max,
            ms_or_s(a.p99_median_ms),
            ms_or_s(b.p99_median_ms)
        )
    } else {
        format!(
            "{api} grew by more than {:.0} %: {}.",
            100.0 * GROWTH,
            growing.join(", ")
        )
    }
}
