//! The batching scenario's table and `scenario.json`: each run's orders/s, latency, PostgreSQL's
//! commits and WAL flushes, CPU per order, beside the original's adds/s and beside the ceiling the
//! round trips and flushes left unbatched predict.
//!
//! The ceiling (Little's law, as beside the blocking plateau: connections ÷ time each order holds
//! one). An autocommit statement holds its pooled connection for one round trip, its execution in
//! PostgreSQL (pg_stat_statements' mean over the run) and one WAL flush (`pg_test_fsync`'s one 8 kB
//! write; with `commit_delay`, plus that delay): `t = RTT + exec + flush`. Neither API's pool
//! tests a connection on its way back (`order_core::plumbing::connections`). CPU and the wait for a
//! connection are left out, so this is a ceiling, not an estimate.
//! - Batch 1: three statements per order (reservation, `CHARGING`, persist):
//!   `POOL ÷ (3 t)` orders/s.
//! - Batch B > 1: two statements per order stay unbatched, on the pool less the writer's
//!   connection (it keeps it while orders keep coming), `(POOL − 1) ÷ (2 t)`; and the one writer
//!   commits at most B orders per batch statement, `B ÷ t_batch` (its own execution time; no
//!   release between batches). The ceiling is the lower of the two.
//!
//! A row more than 15 % below its ceiling gets the reason its report shows: the API at its 1-CPU
//! quota (the ceiling is then the CPU's, 1 CPU ÷ its CPU per order), or a harness-bound run.

use serde::Serialize;

use lab_results::RunResults;
use lab_results::numbers::{fixed, ms_or_s};

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

/// The predicted ceiling of one row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ceiling {
    pub orders_per_s: f64,
    /// `pool` or `writer`: which bound is lower.
    pub bound: &'static str,
    /// The arithmetic, for the table.
    pub formula: String,
}

/// What one statement holds its connection for, ms (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hold {
    pub rtt_ms: f64,
    /// One WAL flush, plus any `commit_delay`.
    pub flush_ms: f64,
    /// Mean execution of the requests' own statements (reservation, `CHARGING`, one-order persist).
    pub exec_ms: f64,
    /// Mean execution of the writer's batch statement.
    pub batch_exec_ms: f64,
}

impl Hold {
    /// A statement that executes for `exec_ms`: how long it holds its connection, ms, and that
    /// sum written out for the formula.
    fn of(&self, exec_ms: f64) -> (f64, String) {
        let text = format!(
            "({:.1} + {:.2} + {:.2}) ms",
            self.rtt_ms, exec_ms, self.flush_ms
        );
        (self.rtt_ms + exec_ms + self.flush_ms, text)
    }
}

/// See the module's doc.
pub fn ceiling(batch_max: usize, h: &Hold, pool: u32) -> Ceiling {
    let (t, t_text) = h.of(h.exec_ms);
    let pool = f64::from(pool);
    if batch_max <= 1 {
        return Ceiling {
            orders_per_s: 1000.0 * pool / (3.0 * t),
            bound: "pool",
            formula: format!("{pool} ÷ (3 × {t_text})"),
        };
    }
    let pooled = 1000.0 * (pool - 1.0) / (2.0 * t);
    let (t_batch, t_batch_text) = h.of(h.batch_exec_ms);
    let writer = 1000.0 * batch_max as f64 / t_batch;
    if writer < pooled {
        Ceiling {
            orders_per_s: writer,
            bound: "writer",
            formula: format!("{batch_max} ÷ {t_batch_text}"),
        }
    } else {
        Ceiling {
            orders_per_s: pooled,
            bound: "pool",
            formula: format!("{} ÷ (2 × {t_text})", pool - 1.0),
        }
    }
}

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
    notes.extend(super::tables::checks_and_limits(
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
mod tests {
    use super::*;
    use crate::scenario::batching_plan::cells;
    use lab_results::DbActivity;

    fn lab_args() -> crate::lab_args::LabArgs {
        crate::lab_args::LabArgs::from_flags::<_, &str>([]).unwrap()
    }

    fn fixture(api: &str) -> RunResults {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../report/tests/fixtures/{api}-0.json"));
        RunResults::load(&path).expect("fixture loads")
    }

    fn figure() -> FsyncFigure {
        FsyncFigure {
            method: "fdatasync".into(),
            ops_per_s: 6666.7,
            usecs_per_op: 150.0,
            dir: "/tmp".into(),
            fs_type: "ext4".into(),
            excerpt: String::new(),
        }
    }

    #[test]
    fn twenty_six_runs_durable_pool_ten_two_with_commit_delay_four_unsaturated() {
        let all = cells(&lab_args(), 75);
        assert_eq!(all.len(), 26);
        for c in all.iter().filter(|c| c.open_rate.is_none()) {
            let a = &c.variant.args;
            assert_eq!(a.load.profile, format!("closed-{CLIENTS}-for-12"));
            assert_eq!((a.db_pool_size, a.apis.len()), (POOL, 1));
            assert_eq!(a.db_durability, crate::lab_args::Durability::On);
            assert_eq!(a.latency.critical_path_ms(), 0);
        }
        let delayed: Vec<&Cell> = all.iter().filter(|c| c.commit_delay_us.is_some()).collect();
        assert_eq!(delayed.len(), 2);
        assert!(
            delayed
                .iter()
                .all(|c| c.variant.args.persist_batch_max == 1 && c.commit_delay_us == Some(75))
        );
        let slugs: std::collections::HashSet<&str> =
            all.iter().map(|c| c.variant.slug.as_str()).collect();
        assert_eq!(slugs.len(), 26, "one folder per run");
        assert!(slugs.contains("reactive-api-batch1000-rtt6.5"));
        let open: Vec<&Cell> = all.iter().filter(|c| c.open_rate.is_some()).collect();
        assert_eq!(open.len(), 4);
        assert!(
            open.iter()
                .all(|c| c.variant.args.load.profile == "constant-50-12")
        );
    }

    #[test]
    fn rows_carry_the_issue_keys_commits_flushes_and_a_reason_when_off_the_ceiling() {
        let cell = cells(&lab_args(), 75)
            .into_iter()
            .find(|c| c.variant.slug == "blocking-api-batch10-rtt6.5")
            .unwrap();
        let mut r = fixture("blocking-api");
        r.elapsed_s = Some(10.0);
        r.summary.ok = 3000;
        r.db_activity = Some(DbActivity {
            window_s: 10.0,
            xact_commit: 6300.0,
            wal_sync: 2000.0,
            wal_write: 2100.0,
            persist_batches: Some(300.0),
            persist_batch_orders: Some(3000.0),
            persist_batch_fallbacks: Some(0.0),
            statements: None,
            detail: String::new(),
        });
        let fig = figure();
        let done = vec![(cell, vec![r])];
        let rows = rows(&done, Ok(&fig));
        let row = &rows[0];
        assert_eq!((row.batch_max, row.db_rtt_ms), (10, 6.5));
        assert_eq!(row.orders_per_s, 300.0);
        assert_eq!(
            (row.commits_per_s, row.wal_syncs_per_s, row.mean_batch),
            (Some(630.0), Some(200.0), Some(10.0))
        );
        assert_eq!(row.predicted.bound, "pool");
        // 300 of a 677/s ceiling, the API far from its quota: a reason is given.
        assert!(row.reason.is_some());
        let json = json(&done, Ok(&fig), &ServerSettings::default());
        for key in [
            "api",
            "batch_max",
            "db_rtt_ms",
            "orders_per_s",
            "p50_ms",
            "p99_ms",
            "commits_per_s",
            "wal_syncs_per_s",
        ] {
            assert!(
                json["rows"][0].get(key).is_some(),
                "scenario.json lacks {key}"
            );
        }
        let table = table(&done, Ok(&fig), &ServerSettings::default());
        assert_eq!(table.rows[0].len(), table.columns.len());
        assert_eq!(table.rows[0][6], "630 (2.10)", "commits/s and per order");
    }

    #[test]
    fn a_harness_bound_reason_is_shortened_for_the_table() {
        let long = "harness-bound: the machine at ≥ 180 % CPU while the API was below its quota, \
                    3 s (first at t=0 s); the API runnable but waiting for a CPU ≥ 20 % of the \
                    time while below its quota, 3 s";
        assert_eq!(
            short_reason(long),
            "harness-bound: the machine at ≥ 180 % CPU; the API runnable but waiting for a CPU \
             ≥ 20 % of the time"
        );
    }

    #[test]
    fn ceilings_from_round_trips_flushes_and_the_pool() {
        let hold = Hold {
            rtt_ms: 6.5,
            flush_ms: 0.15,
            exec_ms: 0.25,
            batch_exec_ms: 1.0,
        };
        // Batch 1 at 6.5 ms: 10 connections, 3 statements of 6.9 ms each.
        let one = ceiling(1, &hold, 10);
        assert_eq!(one.bound, "pool");
        assert!((one.orders_per_s - 483.1).abs() < 0.1, "{one:?}");
        assert!(
            one.formula.contains("(6.5 + 0.25 + 0.15)"),
            "{}",
            one.formula
        );
        // Batch 2: the one writer (2 orders per 7.65 ms) is below the pool's 9 ÷ (2 × 6.9 ms).
        let two = ceiling(2, &hold, 10);
        assert_eq!(two.bound, "writer");
        assert!((two.orders_per_s - 261.4).abs() < 0.1, "{two:?}");
        // Batch 100: the two unbatched statements on 9 connections.
        let hundred = ceiling(100, &hold, 10);
        assert_eq!(hundred.bound, "pool");
        assert!((hundred.orders_per_s - 652.2).abs() < 0.1, "{hundred:?}");
        let local = Hold {
            rtt_ms: 0.0,
            ..hold
        };
        assert!((ceiling(1, &local, 10).orders_per_s - 8333.3).abs() < 0.1);
    }
}
