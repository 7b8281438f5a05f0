//! The batching scenario's table: each run's orders/s, latency, PostgreSQL's commits and WAL
//! flushes, CPU per order, beside the original's adds/s and beside the ceiling the round trips and
//! flushes left unbatched predict, with the reason a row is off it. The rows, their ceilings and
//! reasons are the lab's (`lab_results::batching`); this module only formats them, with the
//! plan's settings it states ([`Plan`]).

use lab_results::batching::{BatchRow as Row, FsyncFigure};
use lab_results::numbers::{fixed, ms_or_s};

use super::tables::checks_and_limits;
use super::{Note, ScenarioTable, VariantRuns};

/// What the page states of the plan the lab ran.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    /// Closed-model clients.
    pub clients: u64,
    /// `DB_POOL_SIZE` of every run.
    pub pool: u32,
    /// `PERSIST_BATCH_WAIT_MS` of every run.
    pub wait_ms: u64,
    /// The original's adds/s at one update per transaction: what its column is relative to.
    pub original_base: f64,
    /// The first run's load profile (`None`: no run).
    pub profile: Option<&'a str>,
    /// What the database ran with, as it says itself.
    pub server: &'a [(String, String)],
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

/// The batching scenario's table: a row per run ([`Row`], as the lab computed it), the notes
/// around it and a link to each run's full report.
pub fn table(
    done: &[VariantRuns],
    rows: &[Row],
    fsync: Result<&FsyncFigure, &String>,
    plan: &Plan,
) -> ScenarioTable {
    let notes: Vec<Note> = method_notes(fsync, plan)
        .into_iter()
        .chain(measured_notes(rows, fsync, plan.wait_ms))
        .map(Note::from)
        .chain(checks_and_limits(done.iter().flat_map(|(_, runs)| *runs)))
        .collect();
    ScenarioTable {
        title: "Group commit: orders/s against persist batch size (experiment E)".into(),
        intro: intro(done, plan),
        columns: COLUMNS.map(String::from).to_vec(),
        rows: rows
            .iter()
            .map(|r| row(r, rows, plan.original_base))
            .collect(),
        notes,
        links: done
            .iter()
            .map(|(slug, _)| ((*slug).to_owned(), format!("{slug}/report.html")))
            .collect(),
        // API, batch max, DB RTT, orders/s, vs batch 1, p50 · p99; the rest folded.
        main_columns: 6,
        ..ScenarioTable::default()
    }
}

const COLUMNS: [&str; 15] = [
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
];

/// How the runs were made, for the page's intro.
fn intro(done: &[VariantRuns], plan: &Plan) -> String {
    let (clients, pool, wait_ms) = (plan.clients, plan.pool, plan.wait_ms);
    format!(
        "Closed model, {} clients for {} s per run ({}) after a {} s warm-up; mocks at 0 ms; \
         DB_POOL_SIZE {pool}; durable PostgreSQL; PERSIST_BATCH_MAX as in the batch column, \
         PERSIST_BATCH_WAIT_MS {wait_ms}; a TCP proxy adds the database RTT. Commits and WAL \
         flushes are PostgreSQL's own counters (pg_stat_database.xact_commit, \
         pg_stat_wal.wal_sync) over the measured run; CPU per order is CPU-seconds over the run \
         ÷ orders. Beside each row: the ceiling its unbatched round trips and flushes allow, \
         and the original's adds/s at as many updates per transaction.",
        clients,
        done.first()
            .and_then(|(_, runs)| runs.first())
            .and_then(|r| r.elapsed_s)
            .map_or("?".to_owned(), |s| format!("{s:.1}")),
        plan.profile.unwrap_or("?"),
        done.first()
            .and_then(|(_, runs)| runs.first())
            .map_or(f64::NAN, |r| r.config.warmup_s)
    )
}

/// The run's row; `rows` for the same API's batch-1 run it is compared with.
fn row(r: &Row, rows: &[Row], original_base: f64) -> Vec<String> {
    let base = rows
        .iter()
        .find(|b| {
            b.api == r.api
                && b.batch_max == 1
                && b.db_rtt_ms == r.db_rtt_ms
                && b.commit_delay_us.is_none()
                && b.open_rate == r.open_rate
        })
        .map(|b| b.orders_per_s);
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
        base.map_or("—".to_owned(), |b| format!("×{:.2}", r.orders_per_s / b)),
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
}

/// The notes on how the table was made: the flush's cost, what is batched, the ceiling, the
/// latency's price, the original.
fn method_notes(fsync: Result<&FsyncFigure, &String>, plan: &Plan) -> Vec<String> {
    let (clients, wait_ms) = (plan.clients, plan.wait_ms);
    let settings: Vec<String> = plan
        .server
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let flush = match fsync {
        Ok(f) => format!(
            "pg_test_fsync on this machine ({} in {}): one 8 kB write + {} = {:.0} µs ({:.0} flushes/s)",
            f.fs_type, f.dir, f.method, f.usecs_per_op, f.ops_per_s
        ),
        Err(why) => format!("pg_test_fsync could not be run ({why}): ceilings assume a free flush"),
    };
    vec![
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
            "Latency price: each batched order waits up to PERSIST_BATCH_WAIT_MS = {wait_ms} ms for \
             its batch to fill, then for the batch's one commit. Under the closed model's {} \
             clients the API is saturated and p50 ≈ clients ÷ throughput, so the price hides in the \
             queue (it shows where the one writer is the bottleneck: batch 2); the open-model rows \
             at a rate the API serves without queueing show it.",
            clients
        ),
        "The original (directory server, one client injecting entries) scaled 108 → 400 adds/s \
         from 1 to 1000 updates per transaction because each commit paid a disk flush of several \
         ms. Here a flush costs the figure above, each order also pays two unbatched commits, and \
         batches cannot hold more orders than are waiting (at most the clients in flight, less \
         what the pool and CPU serve meanwhile): see the mean batch column."
            .to_owned(),
    ]
}

/// The notes the rows bear out: WAL flushes against the flush time, harness-bound runs, the
/// latency price unsaturated, commit_delay's rows.
fn measured_notes(rows: &[Row], fsync: Result<&FsyncFigure, &String>, wait_ms: u64) -> Vec<String> {
    let mut notes = Vec::new();
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
                 {} with batch 1 ({:+.1} ms; PERSIST_BATCH_WAIT_MS is {wait_ms}), p99 {} against \
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
    notes
}

#[cfg(test)]
mod tests {
    use super::short_reason;

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
}
