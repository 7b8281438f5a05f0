//! The capacity model: an API's capacity in a pod is the least of three rates, each computed
//! from the unit costs ([`super::costs`]) with its arithmetic kept for the page.
//!
//! - **cpu**: cores × the capacity per core the measured searches found (= the quota's share
//!   used at the limit ÷ CPU-ms per order, both measured). reactive-api serves its orders on
//!   `HTTP_WORKERS` event loops, one core each at most: the model gives it ⌈cores⌉ workers, as a
//!   team running it at its best would (the lab's runs use 1, which caps it at one core).
//! - **cfs stall**: a pod spends its quota `cores × period` and then stalls to the period's end,
//!   `period × (1 − cores)` at most. Where critical path + stall fits in the objective's p99, a
//!   stall cannot fail an order. Where it does not (a 100 ms period at 0.125 CPU stalls 87.5 ms,
//!   past the 220 ms row's 33 ms margin), an order that finds the quota spent misses: with
//!   Poisson arrivals, `N` orders in a period of which `k = (quota + burst) ÷ CPU-ms per order`
//!   fit, the share that wait is `E[(N − k)⁺] ÷ E[N]`, and the objective allows 1 %.
//! - **memory**: RSS = base + orders in flight × RSS per order in flight (reactive-api: rate ×
//!   critical path in flight; blocking-api: its Erlang-B pool for rate × hold, each thread's
//!   stack and buffers) up to [`MEMORY_SHARE`] of the limit, the capacity rules' threshold.

use serde::{Deserialize, Serialize};

use super::costs::UnitCosts;
use crate::lab_args::{AUTO_THREADS_LOSS, erlang_b_servers};
use crate::scenario::capacity::cause::MEMORY_SHARE;

/// A pod, a critical path and the API to predict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub api: String,
    pub cpu_cores: f64,
    pub memory_mib: u64,
    pub critical_path_ms: u64,
    pub cfs_period_ms: f64,
    pub cfs_burst_ms: f64,
}

impl Cell {
    /// The cell's first four columns in a page's table: API, pod, CFS period and burst, path.
    pub fn columns(&self) -> String {
        format!(
            "| {} | {} CPU, {} MiB | {} ms, {} ms | {} ms |",
            self.api,
            self.cpu_cores,
            self.memory_mib,
            self.cfs_period_ms,
            self.cfs_burst_ms,
            self.critical_path_ms
        )
    }
}

/// One prediction, as `predictions.json` holds it: the cell's fields, then the prediction's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    #[serde(flatten)]
    pub cell: Cell,
    pub capacity_rps: f64,
    /// The same arithmetic on the least and the most capacity per core a search found.
    pub band_rps: [f64; 2],
    /// `cpu`, `cfs_stall` or `memory`.
    pub stopped_by: String,
    /// The critical path whose searches gave the unit costs.
    pub costs_from_path_ms: u64,
    /// Every step of the computation, in words and numbers.
    pub arithmetic: Vec<String>,
}

/// The objective's p99 at a critical path, ms, as the crossover's cells ran it: 22 ms with
/// `--slo p99<=122ms` (×1.15 would leave 3 ms, less than one 10 ms period's stall), the longer
/// paths with the default, critical path × 1.15.
pub fn objective_p99_ms(path_ms: u64) -> f64 {
    if path_ms < 100 {
        path_ms as f64 + 100.0
    } else {
        path_ms as f64 * 1.15
    }
}

/// The share of Poisson(`mean`) orders beyond the first `k` of a period: `E[(N − k)⁺] ÷ mean`.
pub fn share_beyond(mean: f64, k: f64) -> f64 {
    if mean <= 0.0 {
        return 0.0;
    }
    let top = (mean + 12.0 * mean.sqrt() + k + 12.0).ceil() as u64;
    let (mut pmf, mut excess) = ((-mean).exp(), 0.0);
    for n in 0..=top {
        if n > 0 {
            pmf *= mean / n as f64;
        }
        excess += pmf * (n as f64 - k).max(0.0);
    }
    excess / mean
}

/// The highest rate below `ceiling` for which `fits` holds (it holds at 0 and, once broken,
/// stays broken), to 0.1/s.
fn highest(ceiling: f64, fits: impl Fn(f64) -> bool) -> f64 {
    let (mut lo, mut hi) = (0.0, ceiling);
    while hi - lo > 0.1 {
        let mid = (lo + hi) / 2.0;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The costs measured nearest `path_ms` (in ratio) for `api`.
pub fn nearest<'a>(costs: &'a [UnitCosts], api: &str, path_ms: u64) -> Option<&'a UnitCosts> {
    let distance = |c: &UnitCosts| (c.critical_path_ms as f64 / path_ms as f64).ln().abs();
    costs
        .iter()
        .filter(|c| c.api == api)
        .min_by(|a, b| distance(a).total_cmp(&distance(b)))
}

pub fn predict(cell: &Cell, costs: &[UnitCosts]) -> Option<Prediction> {
    let u = nearest(costs, &cell.api, cell.critical_path_ms)?;
    let blocking = u.threads.is_some();
    let mut lines = vec![format!(
        "unit costs from {} search(es) of {} at {} ms: {:.3} CPU-ms per order (median; {:.3}–{:.3}) \
         with {:.0} % of the quota used at the limit, {:.0} orders/s per core ({:.0}–{:.0})",
        u.searches,
        cell.api,
        u.critical_path_ms,
        u.cpu_ms.median,
        u.cpu_ms.min,
        u.cpu_ms.max,
        100.0 * u.quota_used.median,
        u.per_core.median,
        u.per_core.min,
        u.per_core.max
    )];
    let usable = if blocking {
        cell.cpu_cores
    } else {
        let workers = cell.cpu_cores.ceil().max(1.0);
        lines.push(format!(
            "{workers} event loop(s) (HTTP_WORKERS = ⌈cores⌉), each at most one core"
        ));
        cell.cpu_cores.min(workers)
    };
    lines.push(format!(
        "cpu: {usable} cores × {:.0}/s per core = {:.0}/s",
        u.per_core.median,
        usable * u.per_core.median
    ));
    // The median costs, then the same arithmetic on the cheapest and the dearest search's.
    let median = bound(
        cell,
        u,
        usable,
        (u.per_core.median, u.cpu_ms.median),
        &mut lines,
    );
    let mut quiet = Vec::new();
    let low = bound(cell, u, usable, (u.per_core.min, u.cpu_ms.max), &mut quiet);
    let high = bound(cell, u, usable, (u.per_core.max, u.cpu_ms.min), &mut quiet);
    let (stopped_by, capacity) = median;
    let band = [low.1.min(capacity), high.1.max(capacity)];
    lines.push(format!(
        "capacity: {capacity:.0}/s ({:.0}–{:.0} on the searches' extremes), stopped by {stopped_by}",
        band[0], band[1]
    ));
    Some(Prediction {
        cell: cell.clone(),
        capacity_rps: capacity.round(),
        band_rps: band.map(f64::round),
        stopped_by: stopped_by.to_owned(),
        costs_from_path_ms: u.critical_path_ms,
        arithmetic: lines,
    })
}

/// The least of the three bounds for one set of costs (orders/s per core, CPU-ms per order),
/// named; each bound's arithmetic goes to `lines`.
fn bound(
    cell: &Cell,
    u: &UnitCosts,
    usable: f64,
    (per_core, cpu_ms): (f64, f64),
    lines: &mut Vec<String>,
) -> (&'static str, f64) {
    let cpu = usable * per_core;
    let stall = stall_rate(cell, cpu_ms, cpu, lines);
    let memory = memory_rate(cell, u, cpu, lines);
    [("cpu", Some(cpu)), ("cfs_stall", stall), ("memory", memory)]
        .into_iter()
        .filter_map(|(name, rate)| Some((name, rate?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("the cpu bound is always there")
}

/// The highest rate at which at most 1 % of orders meet a stall longer than the objective's
/// margin; `None` when a stall fits in the margin.
fn stall_rate(cell: &Cell, cpu_ms: f64, ceiling: f64, lines: &mut Vec<String>) -> Option<f64> {
    let period = cell.cfs_period_ms;
    let stall = if cell.cpu_cores < 1.0 {
        period * (1.0 - cell.cpu_cores)
    } else {
        0.0
    };
    let p99 = objective_p99_ms(cell.critical_path_ms);
    if cell.critical_path_ms as f64 + stall <= p99 {
        lines.push(format!(
            "cfs stall: {period} ms period, stall ≤ {stall:.2} ms; {} ms + {stall:.2} ms fits in \
             the objective's p99 ≤ {p99:.0} ms: no bound",
            cell.critical_path_ms
        ));
        return None;
    }
    let fit = (cell.cpu_cores * period + cell.cfs_burst_ms) / cpu_ms;
    let fits = |r: f64| share_beyond(r * period / 1000.0, fit) <= 0.01;
    if fits(ceiling) {
        lines.push(format!(
            "cfs stall: {period} ms period, stall ≤ {stall:.2} ms, past the objective's margin, \
             but {fit:.1} orders fit a period: under 1 % wait below {ceiling:.0}/s, no bound"
        ));
        return None;
    }
    let rate = highest(ceiling, fits);
    lines.push(format!(
        "cfs stall: {period} ms period, stall ≤ {stall:.2} ms; {} ms + {stall:.2} ms > p99 ≤ \
         {p99:.0} ms, so an order that finds the quota spent misses: ({:.2} ms quota + {} ms \
         burst) ÷ {:.3} CPU-ms = {fit:.1} orders fit a period; at {rate:.0}/s ({:.1} per period, \
         Poisson) 1 % wait",
        cell.critical_path_ms,
        cell.cpu_cores * period,
        cell.cfs_burst_ms,
        cpu_ms,
        rate * period / 1000.0
    ));
    Some(rate)
}

/// The highest rate whose RSS stays under [`MEMORY_SHARE`] of the limit; `None` without a
/// measured RSS per order in flight.
fn memory_rate(cell: &Cell, u: &UnitCosts, ceiling: f64, lines: &mut Vec<String>) -> Option<f64> {
    let kib = u.kib_per_in_flight?;
    let room = MEMORY_SHARE * cell.memory_mib as f64 - u.base_mib;
    let path_s = cell.critical_path_ms as f64 / 1000.0;
    let in_flight = |r: f64| match u.hold_beyond_path_ms {
        Some(extra) => f64::from(erlang_b_servers(
            r * (path_s + extra / 1000.0),
            AUTO_THREADS_LOSS,
        )),
        None => r * path_s,
    };
    let fits = |r: f64| in_flight(r) * kib / 1024.0 <= room;
    if fits(ceiling) {
        lines.push(format!(
            "memory: {:.0} in flight at {ceiling:.0}/s × {kib:.0} KiB fit in {room:.1} MiB: no \
             bound",
            in_flight(ceiling)
        ));
        return None;
    }
    let rate = highest(ceiling, fits);
    lines.push(format!(
        "memory: {:.0} % of {} MiB − {:.1} MiB base = {room:.1} MiB for orders in flight at \
         {kib:.0} KiB each{}: {:.0} in flight at {rate:.0}/s",
        100.0 * MEMORY_SHARE,
        cell.memory_mib,
        u.base_mib,
        if u.hold_beyond_path_ms.is_some() {
            " (a thread each, the pool Erlang B sizes for rate × hold)"
        } else {
            " (rate × critical path)"
        },
        in_flight(rate)
    ));
    Some(rate)
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
