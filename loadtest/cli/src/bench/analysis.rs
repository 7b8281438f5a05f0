//! What `loadtest bench` makes of its counters: each cell's figures per order, RSS against busy
//! work, why a cell's rate is not the API's CPU capacity, and the bench's targets with whether
//! each was met. Pure functions of the counters the bench recorded (`lab_results::bench`), kept
//! beside the bench that owns the targets; the results crate holds only what they are written
//! into, so an older `bench.json` is read with the figures it was written with.

use lab_results::ApiKind;
use lab_results::bench::{
    BUSY_THREADS, BenchCell, IN_FLIGHT, MemoryFigures, MemorySlope, PerOrder, StatementCalls,
    TargetCheck, WindowCounts,
};

/// The bench's CPU target for reactive-api, µs of API CPU per order (mocks at 0 ms, 1 CPU).
pub const TARGET_REACTIVE_CPU_US: f64 = 250.0;
/// The bench's CPU target for blocking-api, µs of API CPU per order (mocks at 0 ms, 1 CPU).
pub const TARGET_BLOCKING_CPU_US: f64 = 400.0;
/// The bench's target: SQL statements per order on the normal path.
pub const TARGET_STATEMENTS: f64 = 3.0;
/// The bench's memory target for reactive-api: RSS per in-flight order, bytes (32 KiB).
pub const TARGET_REACTIVE_RSS_PER_IN_FLIGHT: f64 = 32.0 * 1024.0;
/// A slope of RSS against busy work is only computed across at least this much difference in
/// busy threads / in-flight orders (below it, allocator noise dominates).
pub const MIN_BUSY_SPREAD: f64 = 50.0;

/// The window's counters divided by its orders; `None` when the window has no order.
pub fn per_order(w: &WindowCounts) -> Option<PerOrder> {
    if w.orders == 0 {
        return None;
    }
    let n = w.orders as f64;
    let us = |s: f64| s * 1e6 / n;
    let each = |c: u64| c as f64 / n;
    Some(PerOrder {
        api_cpu_us: us(w.api_cpu_s()),
        api_user_us: us(w.api_user_s),
        api_system_us: us(w.api_system_s),
        context_switches: each(w.api_voluntary_switches + w.api_involuntary_switches),
        voluntary_switches: each(w.api_voluntary_switches),
        involuntary_switches: each(w.api_involuntary_switches),
        sql_statements: w.sql_statements.map(each),
        http_calls: w.http_calls.map(each),
        generator_cpu_us: w.generator_cpu_s.map(us),
        mock_deps_cpu_us: w.mock_deps_cpu_s.map(us),
        postgres_cpu_us: w.postgres_cpu_s.map(us),
        latency_proxy_cpu_us: w.latency_proxy_cpu_s.map(us),
        harness_cpu_us: us(w.harness_cpu_s()),
        other_cpu_us: w.other_cpu_s().map(us),
        postgres: w.postgres.and_then(|p| p.per_order(w.orders)),
    })
}

/// [`MemoryFigures::rss_growth_per_busy_bytes`] from the other fields; `None` with less than one
/// busy unit on average.
pub fn growth_per_busy(m: &MemoryFigures) -> Option<f64> {
    let busy = m.window_mean_busy.filter(|b| *b >= 1.0)?;
    Some((m.window_mean_rss_bytes as f64 - m.idle_rss_bytes as f64) / busy)
}

/// One unit of a busy kind, for names: `busy thread`, `in-flight order`.
pub fn busy_unit(kind: &str) -> &str {
    match kind {
        BUSY_THREADS => "busy thread",
        IN_FLIGHT => "in-flight order",
        other => other,
    }
}

/// The slope between two cells of the same API, from the one with less busy work to the one
/// with more; `None` when either lacks a busy figure or they differ by less than
/// [`MIN_BUSY_SPREAD`].
pub fn memory_slope(a: &BenchCell, b: &BenchCell) -> Option<MemorySlope> {
    if a.api != b.api {
        return None;
    }
    let (ba, bb) = (a.memory.window_mean_busy?, b.memory.window_mean_busy?);
    let (lo, hi, lo_busy, hi_busy) = if ba <= bb {
        (a, b, ba, bb)
    } else {
        (b, a, bb, ba)
    };
    if hi_busy - lo_busy < MIN_BUSY_SPREAD {
        return None;
    }
    let (r0, r1) = (
        lo.memory.window_mean_rss_bytes,
        hi.memory.window_mean_rss_bytes,
    );
    Some(MemorySlope {
        api: a.api.clone(),
        busy_kind: a.memory.busy_kind.clone(),
        from_mocks: lo.mocks.clone(),
        to_mocks: hi.mocks.clone(),
        from_busy: lo_busy,
        to_busy: hi_busy,
        from_rss_bytes: r0,
        to_rss_bytes: r1,
        bytes_per_busy: (r1 as f64 - r0 as f64) / (hi_busy - lo_busy),
    })
}

/// Every API's slope between its least and its most busy cell.
pub fn memory_slopes(cells: &[BenchCell]) -> Vec<MemorySlope> {
    let mut apis: Vec<&str> = cells.iter().map(|c| c.api.as_str()).collect();
    apis.dedup();
    apis.iter()
        .filter_map(|api| {
            let mine: Vec<&BenchCell> = cells
                .iter()
                .filter(|c| c.api == *api && c.memory.window_mean_busy.is_some())
                .collect();
            let busy = |c: &&BenchCell| c.memory.window_mean_busy.unwrap_or(0.0);
            let lo = mine.iter().min_by(|a, b| busy(a).total_cmp(&busy(b)))?;
            let hi = mine.iter().max_by(|a, b| busy(a).total_cmp(&busy(b)))?;
            memory_slope(lo, hi)
        })
        .collect()
}

/// The statements one order runs: for each statement, its calls per order rounded to a whole
/// number, summed (a statement an order runs once counts 1 whether the window caught 0.98 or 1.02
/// of it per order; the recovery loop's rare statements count 0). `None` without statements.
pub fn order_path_statements(statements: &[StatementCalls]) -> Option<u64> {
    if statements.is_empty() {
        return None;
    }
    Some(
        statements
            .iter()
            .map(|s| s.per_order.round().max(0.0) as u64)
            .sum(),
    )
}

/// What [`bound_reason`] weighs besides the window's counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoundContext {
    /// Closed-loop clients.
    pub clients: u64,
    /// Mean of the API's busy gauge over the window.
    pub busy: Option<f64>,
    /// blocking-api's BLOCKING_THREADS (`None` for reactive-api).
    pub pool: Option<u64>,
    /// CPUs of the machine.
    pub cores: f64,
    /// CPUs the harness was pinned to (`None`: not pinned, it shares all of them).
    pub harness_cpus: Option<f64>,
}

/// Why a cell's rate is not the API's CPU capacity: the API used less than 90 % of its CPU.
/// Names the likely bound, first that applies: blocking-api's thread pool (its mean busy threads
/// ≥ 90 % of BLOCKING_THREADS), the harness's own CPUs (pinned, and ≥ 85 % busy with the harness), the
/// whole machine (≥ 90 % busy: harness and other tenants), else the clients and the time an order
/// spends outside the API. `None` when the API was saturated.
pub fn bound_reason(w: &WindowCounts, ctx: &BoundContext) -> Option<String> {
    let share = w.api_cpu_share();
    if share >= 0.9 || w.seconds <= 0.0 {
        return None;
    }
    let per_s = |x: f64| x / w.seconds;
    let machine = w.machine_busy_s.map(per_s);
    let harness = per_s(w.harness_cpu_s());
    let pool_full = match (ctx.busy, ctx.pool) {
        // A client's turnaround between two orders leaves a thread idle for a moment.
        (Some(b), Some(p)) => b >= 0.9 * p as f64,
        _ => false,
    };
    let why = if pool_full {
        format!(
            "its {} blocking threads were all busy: the thread pool and the dependencies' latency \
             bound the rate",
            ctx.pool.unwrap_or(0)
        )
    } else if let Some(h) = ctx.harness_cpus.filter(|h| harness >= 0.85 * h) {
        format!(
            "the harness (PostgreSQL, mock-deps, generator) used {harness:.2} of its {h} CPU(s): it \
             bounds the rate"
        )
    } else if machine.is_some_and(|m| m >= 0.9 * ctx.cores) {
        format!(
            "the machine was busy ({:.1} of its {} CPUs): the harness and other tenants bound the \
             rate",
            machine.unwrap_or(0.0),
            ctx.cores
        )
    } else {
        format!(
            "{} clients and the time an order waits outside the API bound the rate",
            ctx.clients
        )
    };
    Some(format!("API at {:.0} % of its CPU: {why}", share * 100.0))
}

/// `measured` against `limit`: met when it does not exceed it.
fn check(name: String, measured: Option<f64>, limit: Option<f64>, unit: &str) -> TargetCheck {
    let met = match (measured, limit) {
        (Some(m), Some(l)) => Some(m <= l),
        _ => None,
    };
    TargetCheck {
        name,
        measured,
        limit,
        unit: unit.to_owned(),
        met,
    }
}

/// The bench's targets against the cells: CPU per order at 0 ms (reactive ≤ 250 µs, blocking ≤
/// 400 µs), statements per order in every cell (≤ 3, [`order_path_statements`]), reactive RSS per in-flight order (≤ 32 KiB)
/// and blocking RSS per busy thread (reported, no number set), from the memory slopes.
pub fn targets(cells: &[BenchCell], slopes: &[MemorySlope]) -> Vec<TargetCheck> {
    let mut out = Vec::new();
    for (kind, limit) in [
        (ApiKind::Reactive, TARGET_REACTIVE_CPU_US),
        (ApiKind::Blocking, TARGET_BLOCKING_CPU_US),
    ] {
        let api = kind.name();
        for c in cells.iter().filter(|c| c.api == api && c.mocks == "0ms") {
            let m = c.per_order.as_ref().map(|p| p.api_cpu_us);
            out.push(check(
                format!("{api} CPU per order (mocks 0 ms)"),
                m,
                Some(limit),
                "µs",
            ));
        }
    }
    for c in cells {
        let m = c.order_path_statements.map(|n| n as f64);
        out.push(check(
            format!("{} SQL statements per order (mocks {})", c.api, c.mocks),
            m,
            Some(TARGET_STATEMENTS),
            "statements",
        ));
    }
    for s in slopes {
        let limit = (ApiKind::of(&s.api) == Some(ApiKind::Reactive))
            .then_some(TARGET_REACTIVE_RSS_PER_IN_FLIGHT);
        out.push(check(
            format!(
                "{} RSS per {} (slope {} → {})",
                s.api,
                busy_unit(&s.busy_kind),
                s.from_mocks,
                s.to_mocks
            ),
            Some(s.bytes_per_busy),
            limit,
            "bytes",
        ));
    }
    out
}

#[cfg(test)]
#[path = "analysis_tests.rs"]
mod tests;
