//! The batching scenario's rows and `scenario.json`: each run's orders/s, latency, PostgreSQL's
//! commits and WAL flushes, CPU per order, the original's adds/s and the ceiling the round trips
//! and flushes left unbatched predict (`lab_results::batching::BatchRow`), computed from the runs;
//! the page's table formats them (`lab_report::scenario::batching`).
//!
//! The ceiling each row is held against is `ceiling.rs`'s.
//!
//! A row more than 15 % below its ceiling gets the reason its report shows: the API at its CPU
//! quota (the ceiling is then the CPU's, the quota ÷ its CPU per order), or a harness-bound run.

use lab_results::RunResults;
use lab_results::batching::{BatchRow as Row, Ceiling};

use super::ceiling::{Hold, ceiling};
use super::fsync::FsyncFigure;
use super::plan::{CLIENTS, Cell, POOL, ServerSettings, WAIT_MS};
use crate::scenario::ScenarioName;
use lab_report::scenario::batching::{self, Plan};
use lab_report::scenario::{ScenarioTable, VariantRuns};

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
        rtt_ms: a.harness.db_rtt_ms,
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
    let api_cpu_share = s
        .api_cpu_seconds
        .map(|c| c / s.duration_s.max(1e-9) / quota(r));
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
        db_rtt_ms: a.harness.db_rtt_ms,
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

/// The API's CPU quota in cores (1 where none was enforced: a share of one core).
fn quota(r: &RunResults) -> f64 {
    let l = &r.config.limits;
    l.cpu_cores.filter(|_| l.limits_enforced).unwrap_or(1.0)
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
        let cpus = lab_results::numbers::cpus(quota(r));
        why.push(format!(
            "API CPU-bound: {:.0} % of its quota ({cpus}), {cpus} ÷ {ms:.2} ms per order = {:.0}/s",
            100.0 * share,
            1000.0 * quota(r) / ms
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

/// The table of the runs (`lab_report::scenario::batching`), from their rows.
pub fn table(
    done: &[(Cell, Vec<RunResults>)],
    fsync: Result<&FsyncFigure, &String>,
    server: &ServerSettings,
) -> ScenarioTable {
    let runs: Vec<VariantRuns> = done
        .iter()
        .map(|(c, runs)| (c.variant.slug.as_str(), runs.as_slice()))
        .collect();
    let plan = Plan {
        clients: CLIENTS,
        pool: POOL,
        wait_ms: WAIT_MS,
        original_base: ORIGINAL[1].1,
        profile: done
            .first()
            .map(|(c, _)| c.variant.args.load.profile.as_str()),
        server: &server.0,
    };
    batching::table(&runs, &rows(done, fsync), fsync, &plan)
}

/// `scenario.json`: the rows (API, batch size, database round trip, orders/s, p50, p99, commits/s
/// and WAL flushes/s, and more), the flush figure, the server's settings and the original's table.
pub fn json(
    done: &[(Cell, Vec<RunResults>)],
    fsync: Result<&FsyncFigure, &String>,
    server: &ServerSettings,
) -> serde_json::Value {
    serde_json::json!({
        "scenario": ScenarioName::Batching.as_str(),
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
#[path = "rows_tests.rs"]
mod tests;
