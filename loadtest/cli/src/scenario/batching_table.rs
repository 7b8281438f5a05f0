//! The batching scenario's table and `scenario.json`: each run's orders/s, latency, PostgreSQL's
//! commits and WAL flushes, CPU per order, beside the original's adds/s and beside the ceiling the
//! round trips and flushes left unbatched predict.
//!
//! The ceiling each row is held against is `batching_ceiling.rs`'s.
//!
//! A row more than 15 % below its ceiling gets the reason its report shows: the API at its 1-CPU
//! quota (the ceiling is then the CPU's, 1 CPU ÷ its CPU per order), or a harness-bound run.

use serde::Serialize;

use lab_results::RunResults;
use lab_results::numbers::{fixed, ms_or_s};

use super::batching_ceiling::{Ceiling, Hold, ceiling};
use super::batching_plan::{CLIENTS, Cell, POOL, ServerSettings, WAIT_MS};
use super::fsync::FsyncFigure;
use lab_report::scenario::ScenarioTable;

/// The original's adds/s by updates per transaction (0: no transaction).
pub const ORIGINAL: &[(usize, f64)] = &[
    (0, 116.0),
    (1, 108.0),
    (2, 158.0),
    (10, 243.0),
    (100, 303.0),
    (1000, 400.0),
];

/// Within this share of its ceiling a row needs no reason.
const WITHIN: f64 = 0.15;
/// The API's CPU at or above this share of its quota: CPU-bound.
const CPU_BOUND: f64 = 0.85;

/// One row, as in `scenario.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub api: String,
    pub batch_max: usize,
    pub db_rtt_ms: f64,
    /// PostgreSQL's `commit_delay` during the run, µs (`null`: 0, its default).
    pub commit_delay_us: Option<u64>,
    /// `closed` (the saturating clients) or `open` (the unsaturated rate, `open_rate`).
    pub load: &'static str,
    pub open_rate: Option<u32>,
    pub orders_per_s: f64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub commits_per_s: Option<f64>,
    pub wal_syncs_per_s: Option<f64>,
    /// Mean orders per persist batch (`null` without a writer).
    pub mean_batch: Option<f64>,
    pub api_cpu_ms_per_order: Option<f64>,
    pub pg_cpu_ms_per_order: Option<f64>,
    /// API CPU over the run, share of its 1-CPU quota.
    pub api_cpu_share: Option<f64>,
    /// The whole machine's CPU over the run, share of all its cores.
    pub machine_cpu_share: Option<f64>,
    pub errors: u64,
    pub predicted: Ceiling,
    /// Why the row is more than 15 % off its ceiling.
    pub reason: Option<String>,
    /// The original's adds/s at as many updates per transaction.
    pub original_adds_per_s: Option<f64>,
}

pub fn rows(done: &[(Cell, Vec<RunResults>)], fsync: Result<&FsyncFigure, &String>) -> Vec<Row> {
    let flush_ms = fsync.map_or(0.0, |f| f.usecs_per_op / 1000.0);
    done.iter()
        .flat_map(|(cell, runs)| runs.iter().map(move |r| row(cell, r, flush_ms)))
        .collect()
}

fn row(cell: &Cell, r: &RunResults, flush_ms: f64) -> Row {
    let a = &cell.variant.args;
    let s = &r.summary;
    let window = r.elapsed_s.unwrap_or(s.duration_s).max(1e-9);
    let ok = s.ok as f64;
    let per_order = |seconds: f64| (s.ok > 0).then(|| 1000.0 * seconds / ok);
    let pg_cpu_s: Option<f64> = {
        let v: Vec<f64> = r
            .seconds
            .iter()
            .filter_map(|x| x.harness.postgres_cpu_percent)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / 100.0)
    };
    let delay_ms = cell.commit_delay_us.map_or(0.0, |us| us as f64 / 1000.0);
    let times = r.db_activity.as_ref().and_then(|d| d.statements.as_ref());
    let hold = Hold {
        rtt_ms: a.db_rtt_ms,
        flush_ms: flush_ms + delay_ms,
        exec_ms: times.and_then(|t| t.mean_other_ms()).unwrap_or(0.0),
        batch_exec_ms: times.and_then(|t| t.mean_batch_ms()).unwrap_or(0.0),
    };
    let mut predicted = ceiling(a.persist_batch_max, &hold, POOL);
    if let Some(rate) = cell
        .open_rate
        .filter(|r| f64::from(*r) < predicted.orders_per_s)
    {
        // An open model's orders/s is its rate, as long as the API keeps up.
        predicted = Ceiling {
            orders_per_s: f64::from(rate),
            bound: "offered",
            formula: format!("{rate}/s, open model"),
        };
    }
    let api_cpu_share = s.api_cpu_seconds.map(|c| c / s.duration_s.max(1e-9));
    let machine: Vec<f64> = r
        .seconds
        .iter()
        .filter_map(|x| x.harness.machine_cpu_percent)
        .collect();
    let cores = f64::from(r.environment.cores.max(1));
    let machine_cpu_share = (!machine.is_empty())
        .then(|| machine.iter().sum::<f64>() / machine.len() as f64 / (100.0 * cores));
    let orders_per_s = ok / window;
    let api_cpu_ms = s.api_cpu_seconds.and_then(per_order);
    let db = r.db_activity.as_ref();
    Row {
        api: r.api.clone(),
        batch_max: a.persist_batch_max,
        db_rtt_ms: a.db_rtt_ms,
        commit_delay_us: cell.commit_delay_us,
        load: if cell.open_rate.is_some() {
            "open"
        } else {
            "closed"
        },
        open_rate: cell.open_rate,
        orders_per_s,
        p50_ms: s.ok_latency_ms.map(|l| l.p50),
        p99_ms: s.ok_latency_ms.map(|l| l.p99),
        commits_per_s: db.map(|d| d.commits_per_s()),
        wal_syncs_per_s: db.map(|d| d.wal_syncs_per_s()),
        mean_batch: db.and_then(|d| d.mean_batch()),
        api_cpu_ms_per_order: api_cpu_ms,
        pg_cpu_ms_per_order: pg_cpu_s.and_then(per_order),
        api_cpu_share,
        machine_cpu_share,
        errors: s.errors,
        reason: reason(
            r,
            orders_per_s,
            &predicted,
            api_cpu_share,
            api_cpu_ms,
            machine_cpu_share,
        ),
        predicted,
        original_adds_per_s: ORIGINAL
            .iter()
            .find(|(n, _)| *n == a.persist_batch_max)
            .map(|(_, adds)| *adds),
    }
}

/// Why a row is off its ceiling by more than [`WITHIN`], if it is.
fn reason(
    r: &RunResults,
    measured: f64,
    predicted: &Ceiling,
    api_cpu_share: Option<f64>,
    api_cpu_ms: Option<f64>,
    machine_cpu_share: Option<f64>,
) -> Option<String> {
    let ratio = measured / predicted.orders_per_s;
    if (ratio - 1.0).abs() <= WITHIN {
        return None;
    }
    if ratio > 1.0 {
        return Some(format!(
            "{:.0} % above the ceiling: the model misses something (see its report)",
            100.0 * (ratio - 1.0)
        ));
    }
    let mut why = Vec::new();
    if let (Some(share), Some(ms)) = (api_cpu_share, api_cpu_ms)
        && share >= CPU_BOUND
    {
        why.push(format!(
            "API CPU-bound: {:.0} % of its 1-CPU quota, 1 CPU ÷ {ms:.2} ms per order = {:.0}/s",
            100.0 * share,
            1000.0 / ms
        ));
    }
    if let Some(h) = &r.harness_bound {
        why.push(format!("harness-bound: {h}"));
    } else if let Some(m) = machine_cpu_share.filter(|m| *m >= CPU_BOUND) {
        why.push(format!(
            "the machine's CPU at {:.0} % of its {} cores (API, PostgreSQL, mock-deps and the \
             generator share them)",
            100.0 * m,
            r.environment.cores
        ));
    }
    if why.is_empty() {
        why.push(format!(
            "{:.0} % of the ceiling with the API at {} of its CPU quota: waits the ceiling leaves \
             out, such as the latency proxy's own forwarding on a busy machine and the hand-off of \
             a released connection to its next user (see its report)",
            100.0 * ratio,
            api_cpu_share.map_or("?".to_owned(), |s| format!("{:.0} %", 100.0 * s))
        ));
    }
    Some(why.join("; "))
}

/// A reason for the table: each clause of a harness-bound reason without its details (the full
/// text is in `scenario.json` and the run's own report).
fn short_reason(reason: &str) -> String {
    reason
        .split("; ")
        .map(|part| {
            let cut = part.find(" while ").unwrap_or(part.len());
            part[..cut].trim_end_matches(',').to_owned()
        })
        .collect::<Vec<_>>()
        .join("; ")
}

pub fn table(
    done: &[(Cell, Vec<RunResults>)],
    fsync: Result<&FsyncFigure, &String>,
    server: &ServerSettings,
) -> ScenarioTable {
    let rows = rows(done, fsync);
    let base = |r: &Row| {
        rows.iter()
            .find(|b| {
                b.api == r.api
                    && b.batch_max == 1
                    && b.db_rtt_ms == r.db_rtt_ms
                    && b.commit_delay_us.is_none()
                    && b.open_rate == r.open_rate
            })
            .map(|b| b.orders_per_s)
    };
    let original_base = ORIGINAL[1].1;
    let body = rows
        .iter()
        .map(|r| {
            let mut batch = match r.commit_delay_us {
                Some(us) => format!("1 + commit_delay {us} µs"),
                None => r.batch_max.to_string(),
            };
            if let Some(rate) = r.open_rate {
                batch.push_str(&format!(" (open, {rate}/s)"));
            }
            vec![
                r.api.clone(),
                batch,
                format!("{} ms", r.db_rtt_ms),
                format!("{:.0}", r.orders_per_s),
                base(r).map_or("—".to_owned(), |b| format!("×{:.2}", r.orders_per_s / b)),
                format!("{} · {}", ms_or_s(r.p50_ms), ms_or_s(r.p99_ms)),
                format!(
                    "{} ({})",
                    fixed(r.commits_per_s, 0),
                    fixed(r.commits_per_s.map(|c| c / r.orders_per_s), 2)
                ),
                fixed(r.wal_syncs_per_s, 0),
                fixed(r.mean_batch, 1),
                format!(
                    "{} · {}",
                    fixed(r.api_cpu_ms_per_order, 2),
                    fixed(r.pg_cpu_ms_per_order, 2)
                ),
                format!(
                    "{:.0} ({}: {})",
                    r.predicted.orders_per_s, r.predicted.bound, r.predicted.formula
                ),
                format!("{:.0} %", 100.0 * r.orders_per_s / r.predicted.orders_per_s),
                r.reason
                    .as_deref()
                    .map_or("within 15 %".to_owned(), short_reason),
                r.original_adds_per_s
                    .filter(|_| r.commit_delay_us.is_none() && r.open_rate.is_none())
                    .map_or("—".to_owned(), |a| {
                        format!("{a:.0} (×{:.2})", a / original_base)
                    }),
                r.errors.to_string(),
            ]
        })
        .collect();
    let settings: Vec<String> = server.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let flush = match fsync {
        Ok(f) => format!(
            "pg_test_fsync on this machine ({} in {}): one 8 kB write + {} = {:.0} µs ({:.0} flushes/s)",
            f.fs_type, f.dir, f.method, f.usecs_per_op, f.ops_per_s
        ),
        Err(why) => format!("pg_test_fsync could not be run ({why}): ceilings assume a free flush"),
    };
    let mut notes = vec![
        format!("Flush cost: {flush}. PostgreSQL: {}.", settings.join(", ")),
        "What is batched: the final persist of each created order (complete the key, insert \
         customer, order and items) — one multi-row statement per batch, one commit, one WAL flush. \
         The reservation and the CHARGING mark stay one autocommit statement (one commit) per \
         order; declines and refusals too. So commits per order fall from 3 to 2 + 1/batch, never \
         below 2."
            .to_owned(),
        "Ceiling: an autocommit statement holds its connection for RTT + its execution \
         (pg_stat_statements' mean over the run) + one flush (neither API's pool tests a \
         connection on its way back); batch 1: pool ÷ (3 × that); \
         batch B: the lower of (pool − 1, the writer keeps one) ÷ (2 × that) and B ÷ (RTT + the \
         batch statement's execution + flush), one writer, one batch at a time. CPU and the wait \
         for a connection are left out: a row CPU-bound or harness-bound below its ceiling says so."
            .to_owned(),
        format!(
            "Latency price: each batched order waits up to PERSIST_BATCH_WAIT_MS = {WAIT_MS} ms for \
             its batch to fill, then for the batch's one commit. Under the closed model's {} \
             clients the API is saturated and p50 ≈ clients ÷ throughput, so the price hides in the \
             queue (it shows where the one writer is the bottleneck: batch 2); the open-model rows \
             at a rate the API serves without queueing show it.",
            CLIENTS
        ),
        "The original (directory server, one client injecting entries) scaled 108 → 400 adds/s \
         from 1 to 1000 updates per transaction because each commit paid a disk flush of several \
         ms. Here a flush costs the figure above, each order also pays two unbatched commits, and \
         batches cannot hold more orders than are waiting (at most the clients in flight, less \
         what the pool and CPU serve meanwhile): see the mean batch column."
            .to_owned(),
    ];
    if let Ok(f) = fsync {
        let most = rows
            .iter()
            .filter_map(|r| r.wal_syncs_per_s)
            .fold(0.0, f64::max);
        notes.push(format!(
            "WAL flushes/s stay below 1 ÷ the flush time ({:.0}/s here, at most {most:.0}/s \
             measured): PostgreSQL flushes the WAL one flush at a time, and commits that arrive \
             during a flush share the next one — its own group commit, already at work at batch 1 \
             (commits/s ÷ WAL flushes/s = commits per flush).",
            f.ops_per_s
        ));
    }
    let bound = rows.iter().filter(|r| {
        r.reason
            .as_deref()
            .is_some_and(|w| w.contains("harness-bound"))
    });
    let bound = bound.count();
    if bound > 0 {
        notes.push(format!(
            "{bound} of {} runs were harness-bound (the machine's cores, shared by the API, \
             PostgreSQL, mock-deps, the generator and any other tenant, were saturated while the \
             API was below its quota): their orders/s are the machine's, not the design's; compare \
             the ratios (vs batch 1, commits per order) more than the absolute rates.",
            rows.len()
        ));
    }
    for r in rows
        .iter()
        .filter(|r| r.open_rate.is_some() && r.batch_max > 1)
    {
        let one = rows
            .iter()
            .find(|b| b.api == r.api && b.open_rate == r.open_rate && b.batch_max == 1);
        if let (Some(one), Some(p50), Some(p50_one)) = (one, r.p50_ms, one.and_then(|o| o.p50_ms)) {
            notes.push(format!(
                "Latency price, {} unsaturated ({}/s, open model): p50 {} with batch {} against \
                 {} with batch 1 ({:+.1} ms; PERSIST_BATCH_WAIT_MS is {WAIT_MS}), p99 {} against \
                 {}; mean batch {} — at this rate a batch rarely finds a second order within the \
                 wait.",
                r.api,
                r.open_rate.unwrap_or(0),
                ms_or_s(p50),
                r.batch_max,
                ms_or_s(p50_one),
                p50 - p50_one,
                ms_or_s(r.p99_ms),
                ms_or_s(one.p99_ms),
                fixed(r.mean_batch, 1),
            ));
        }
    }
    for r in rows.iter().filter(|r| r.commit_delay_us.is_some()) {
        notes.push(format!(
            "{} with commit_delay (PostgreSQL's group commit: a committing backend waits \
             commit_delay µs when at least commit_siblings others are in a transaction, so one \
             flush serves several commits): {:.0} orders/s, {} commits/s, {} WAL flushes/s.",
            r.api,
            r.orders_per_s,
            fixed(r.commits_per_s, 0),
            fixed(r.wal_syncs_per_s, 0)
        ));
    }
    notes.extend(lab_report::scenario::tables::checks_and_limits(
        done.iter().flat_map(|(_, runs)| runs),
    ));
    ScenarioTable {
        title: "Group commit: orders/s against persist batch size (experiment E)".into(),
        intro: format!(
            "Closed model, {} clients for {} s per run ({}) after a {} s warm-up; mocks at 0 ms; \
             DB_POOL_SIZE {POOL}; durable PostgreSQL; PERSIST_BATCH_MAX as in the batch column, \
             PERSIST_BATCH_WAIT_MS {WAIT_MS}; a TCP proxy adds the database RTT. Commits and WAL \
             flushes are PostgreSQL's own counters (pg_stat_database.xact_commit, \
             pg_stat_wal.wal_sync) over the measured run; CPU per order is CPU-seconds over the run \
             ÷ orders. Beside each row: the ceiling its unbatched round trips and flushes allow, \
             and the original's adds/s at as many updates per transaction.",
            CLIENTS,
            done.first()
                .and_then(|(_, runs)| runs.first())
                .and_then(|r| r.elapsed_s)
                .map_or("?".to_owned(), |s| format!("{s:.1}")),
            done.first()
                .map_or("?", |(c, _)| c.variant.args.load.profile.as_str()),
            done.first()
                .and_then(|(_, runs)| runs.first())
                .map_or(f64::NAN, |r| r.config.warmup_s)
        ),
        columns: [
            "API",
            "batch max",
            "DB RTT",
            "orders/s",
            "vs batch 1",
            "p50 · p99",
            "commits/s (per order)",
            "WAL flushes/s",
            "mean batch",
            "CPU ms/order: API · PostgreSQL",
            "predicted ceiling",
            "of ceiling",
            "if not within 15 %",
            "original adds/s",
            "errors",
        ]
        .map(String::from)
        .to_vec(),
        rows: body,
        notes,
        links: done
            .iter()
            .map(|(c, _)| {
                (
                    c.variant.slug.clone(),
                    format!("{}/report.html", c.variant.slug),
                )
            })
            .collect(),
        // API, batch max, DB RTT, orders/s, vs batch 1, p50 · p99; the rest folded.
        main_columns: 6,
        ..ScenarioTable::default()
    }
}

/// `scenario.json`: the rows (with the keys the issue names, and more), the flush figure, the
/// server's settings and the original's table.
pub fn json(
    done: &[(Cell, Vec<RunResults>)],
    fsync: Result<&FsyncFigure, &String>,
    server: &ServerSettings,
) -> serde_json::Value {
    serde_json::json!({
        "scenario": "batching",
        "clients": CLIENTS,
        "db_pool_size": POOL,
        "persist_batch_wait_ms": WAIT_MS,
        "pg_test_fsync": match fsync {
            Ok(f) => serde_json::to_value(f).unwrap_or_default(),
            Err(why) => serde_json::json!({ "error": why }),
        },
        "postgresql": server.0.iter().cloned().collect::<std::collections::BTreeMap<_, _>>(),
        "original_adds_per_s": ORIGINAL
            .iter()
            .map(|(n, a)| serde_json::json!({ "updates_per_txn": n, "adds_per_s": a }))
            .collect::<Vec<_>>(),
        "rows": rows(done, fsync),
    })
}

#[cfg(test)]
#[path = "batching_table_tests.rs"]
mod tests;
