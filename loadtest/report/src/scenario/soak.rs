//! The `soak` scenario's table: per API, what its run showed in a window early in the steady
//! phase and in its last — orders/s, p99 per second, RSS, open files, threads — with the change,
//! then the order path's tables at the end and per order. The windows are read here
//! ([`windows`], [`figures`]), as the lab's conclusion reads them too; what counts as growth is
//! the lab's, handed over in the [`Plan`].

use lab_results::numbers::{MIB, ms_or_s};
use lab_results::{RunResults, SecondSample};

use super::figures::constant_seconds;
use super::{Note, ScenarioTable, VariantRuns};

/// The first and the last window compared, s (shortened with the run, at least 5 s).
pub const WINDOW_S: f64 = 60.0;
/// The first window starts this share of the run in (at least 5 s): by then the first arrivals'
/// answers are in (the critical path is 2.2 s), and the pools and the allocator have warmed up.
pub const SETTLE: f64 = 0.05;

/// What the page states of the plan the lab ran.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// The steady rate, orders/s.
    pub rate: u64,
    /// The run's length at `--duration-scale 1`, s.
    pub duration_s: u64,
    /// Growth from the first window to the last above this share is called growth.
    pub growth: f64,
}

/// A table's size at the end of a run: bytes with its indexes and TOAST, and its rows.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSize {
    pub table: String,
    pub bytes: i64,
    pub rows: i64,
}

/// The first `window` seconds of `constant` (a run's constant phase) after [`settle_for`] it, and
/// its last.
pub fn windows<'a>(
    constant: &'a [&'a SecondSample],
    window: f64,
) -> Option<(&'a [&'a SecondSample], &'a [&'a SecondSample])> {
    let n = (window.round() as usize).max(1);
    let settle = settle_for(constant.len() as f64).round() as usize;
    if constant.len() < settle + 2 * n {
        return None;
    }
    Some((
        &constant[settle..settle + n],
        &constant[constant.len() - n..],
    ))
}

/// Where the first window starts, s into the constant phase: [`SETTLE`] of it, at least 5 s.
pub fn settle_for(constant_s: f64) -> f64 {
    (SETTLE * constant_s).round().max(5.0)
}

/// One window's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub orders_per_s: f64,
    /// The median and the highest of its seconds' p99 (all answers), ms.
    pub p99_median_ms: f64,
    pub p99_max_ms: f64,
    pub rss_mean_bytes: f64,
    pub fds_max: u64,
    pub threads_max: u64,
}

pub fn figures(seconds: &[&SecondSample]) -> Window {
    let n = seconds.len().max(1) as f64;
    let orders: u64 = seconds
        .iter()
        .map(|s| s.outcomes.get("201").copied().unwrap_or(0))
        .sum();
    let mut p99: Vec<f64> = seconds
        .iter()
        .filter_map(|s| s.latency_ms.as_ref().map(|l| l.p99))
        .collect();
    p99.sort_by(f64::total_cmp);
    let process: Vec<_> = seconds
        .iter()
        .filter_map(|s| s.api_process.as_ref())
        .collect();
    Window {
        orders_per_s: orders as f64 / n,
        p99_median_ms: p99.get(p99.len() / 2).copied().unwrap_or(f64::NAN),
        p99_max_ms: p99.last().copied().unwrap_or(f64::NAN),
        rss_mean_bytes: process.iter().map(|p| p.rss_bytes as f64).sum::<f64>()
            / process.len().max(1) as f64,
        fds_max: process.iter().map(|p| p.fds).max().unwrap_or(0),
        threads_max: process.iter().map(|p| p.threads).max().unwrap_or(0),
    }
}

/// `+12.5 %`, or `—` from nothing.
fn change(from: f64, to: f64) -> String {
    if from > 0.0 && from.is_finite() && to.is_finite() {
        format!("{:+.1} %", 100.0 * (to - from) / from)
    } else {
        "—".to_owned()
    }
}

/// The window the run's length allows: a minute, or a tenth of a shortened run (at least 5 s).
pub fn window_for(constant_s: f64) -> f64 {
    WINDOW_S.min((constant_s / 10.0).floor()).max(5.0)
}

/// The soak's table: per API, each figure in the first and the last window and its change, then
/// its tables' sizes at the end and per order. `sizes` holds each variant's, by slug. The
/// conclusion (what grew) is the lab's.
pub fn table(
    done: &[VariantRuns],
    sizes: &[(String, Vec<TableSize>)],
    plan: &Plan,
) -> ScenarioTable {
    let (rate, duration_s, growth) = (plan.rate, plan.duration_s, plan.growth);
    let mut rows = Vec::new();
    let mut window_used = WINDOW_S;
    let mut settle_used = settle_for(duration_s as f64);
    for (slug, runs) in done {
        let Some(r) = runs.first() else { continue };
        let constant = constant_seconds(r);
        let constant_s = constant.len() as f64;
        let window = window_for(constant_s);
        window_used = window;
        settle_used = settle_for(constant_s);
        let api = r.api.clone();
        let Some((first, last)) = windows(&constant, window) else {
            rows.push(vec![
                api.clone(),
                "too short to compare".to_owned(),
                "—".to_owned(),
                "—".to_owned(),
                "—".to_owned(),
            ]);
            continue;
        };
        let (a, b) = (figures(first), figures(last));
        rows.extend(window_rows(&api, &a, &b));
        let ours = sizes.iter().find(|(s, _)| s == slug);
        rows.extend(size_rows(
            &api,
            r,
            ours.map(|(_, s)| s.as_slice()).unwrap_or_default(),
        ));
    }
    ScenarioTable {
        title: "Soak: what grows at a steady rate".into(),
        intro: format!(
            "Each API alone for {duration_s} s (× --duration-scale) at a constant {rate} orders/s, the seed's \
             latencies (a 2.2 s critical path; blocking-api at 200 threads serves it), durable \
             commits. Compared: {window_used:.0} s from {settle_used:.0} s into the run (the first \
             answers in, the pools and the allocator warmed up) and its last {window_used:.0} s; \
             the tables at the end, which the lab empties before each run, with their indexes."
        ),
        columns: ["API", "measure", "first window", "last window", "change"]
            .map(String::from)
            .to_vec(),
        rows,
        notes: vec![Note::Said(format!(
            "p99 per second: the 99th percentile of the answers finished in each second (all \
             outcomes, from the intended send time); a window's median and highest of those. \
             Growth above {:.0} % from the first window to the last is named in the conclusion. \
             The retention sweep drops stored answers after KEY_RETENTION_DAYS and sent events \
             after OUTBOX_RETENTION_HOURS, so within a soak the tables grow with the orders.",
            100.0 * growth
        ))],
        ..ScenarioTable::default()
    }
}

/// An API's rows of figures: each in the first window and the last, and its change.
fn window_rows(api: &str, a: &Window, b: &Window) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = |measure: &str, from: String, to: String, delta: String| {
        rows.push(vec![api.to_owned(), measure.to_owned(), from, to, delta]);
    };
    row(
        "orders/s (201)",
        format!("{:.1}", a.orders_per_s),
        format!("{:.1}", b.orders_per_s),
        change(a.orders_per_s, b.orders_per_s),
    );
    row(
        "p99 per second, median",
        ms_or_s(a.p99_median_ms),
        ms_or_s(b.p99_median_ms),
        change(a.p99_median_ms, b.p99_median_ms),
    );
    row(
        "p99 per second, highest",
        ms_or_s(a.p99_max_ms),
        ms_or_s(b.p99_max_ms),
        change(a.p99_max_ms, b.p99_max_ms),
    );
    row(
        "RSS, mean",
        format!("{:.1} MiB", a.rss_mean_bytes / MIB),
        format!("{:.1} MiB", b.rss_mean_bytes / MIB),
        change(a.rss_mean_bytes, b.rss_mean_bytes),
    );
    row(
        "open files, highest",
        a.fds_max.to_string(),
        b.fds_max.to_string(),
        change(a.fds_max as f64, b.fds_max as f64),
    );
    row(
        "threads, highest",
        a.threads_max.to_string(),
        b.threads_max.to_string(),
        change(a.threads_max as f64, b.threads_max as f64),
    );
    rows
}

/// An API's rows of its tables at the end: each one's size, and per order (the orders in the
/// database, the money check's count, else the 201s answered).
fn size_rows(api: &str, r: &RunResults, sizes: &[TableSize]) -> Vec<Vec<String>> {
    let orders = r.money.as_ref().map_or(r.summary.ok, |m| m.orders);
    sizes
        .iter()
        .map(|size| {
            let per_order = if orders > 0 {
                format!("{:.0} bytes per order", size.bytes as f64 / orders as f64)
            } else {
                "—".to_owned()
            };
            vec![
                api.to_owned(),
                format!("table {} ({} rows)", size.table, size.rows),
                "emptied".to_owned(),
                format!("{:.1} MiB", size.bytes as f64 / MIB),
                per_order,
            ]
        })
        .collect()
}
