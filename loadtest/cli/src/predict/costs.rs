//! The unit costs a prediction is made from, read from measured capacity searches: per API and
//! critical path, what one order cost at the rate the search found (its highest met step, over
//! that step's judged plateau), and how much of the quota the API could use there.
//!
//! Why at the capacity found and not at a low rate: reactive-api's CPU per order is not a unit
//! cost at a low rate. In its 0.125 CPU pod at 22 ms it spent 1.19 ms per order at 100/s and
//! 0.35 ms at 400/s (search-a's plateaus): its one event loop wakes for each event when the CPU
//! is idle and handles many per wake-up when it is not, so it used 96 % of its quota at 100/s and
//! still served 209/s. What an order costs near the limit is what sets the limit.

use lab_results::scenario::{CapacityFile, StepPoint};

/// An API's costs at one critical path: the median of its searches and their extremes.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitCosts {
    pub api: String,
    pub critical_path_ms: u64,
    /// The searches these come from.
    pub searches: usize,
    /// CPU-ms per order over the capacity step's plateau: median, min, max.
    pub cpu_ms: Spread,
    /// Share of the quota the API used at the capacity found (rate × CPU per order ÷ quota).
    pub quota_used: Spread,
    /// The capacity found per core of quota (orders/s ÷ cores) = `quota_used ÷ cpu_ms`.
    pub per_core: Spread,
    /// blocking-api: how long an order held its thread beyond the critical path, ms (median).
    pub hold_beyond_path_ms: Option<f64>,
    /// blocking-api: the pool at the capacity step (median), which `quota_used` was measured at.
    pub threads: Option<f64>,
    /// RSS per order in flight, KiB (median of the steps that record it; blocking-api: per
    /// busy thread, its stack and buffers).
    pub kib_per_in_flight: Option<f64>,
    /// The process's RSS at the searches' lowest step, MiB (the least over the searches).
    pub base_mib: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// The finite values' median ([`lab_results::median`]) and extremes; `None` without one.
    pub fn of(v: Vec<f64>) -> Option<Spread> {
        let finite = || v.iter().copied().filter(|x| x.is_finite());
        Some(Spread {
            median: lab_results::median(finite())?,
            min: finite().fold(f64::INFINITY, f64::min),
            max: finite().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// CPU-ms per order over a step's plateau: its threads' CPU (every role) over its fresh orders;
/// the whole run's figure where an older file has no per-role reading.
pub fn cpu_ms_per_order(s: &StepPoint) -> Option<f64> {
    match (&s.cpu_by_role, s.plateau_orders) {
        (Some(r), Some(n)) if n > 0 => Some(1000.0 * r.cpu_s() / n as f64),
        _ => s.cpu_s_per_1000,
    }
}

/// One search's readings of one API at the capacity it found.
#[derive(Debug, Clone)]
struct Reading {
    per_core: f64,
    cpu_ms: f64,
    quota_used: f64,
    hold_ms: Option<f64>,
    threads: Option<f64>,
    kib_per_in_flight: Option<f64>,
    base_mib: Option<f64>,
}

fn reading(f: &CapacityFile, api: &str) -> Option<Reading> {
    let cores = f.limits.as_ref()?.cpu_cores?;
    let point = f.capacities.iter().find(|c| c.api == api)?;
    let rate = point.capacity_rps?;
    let step = point
        .steps
        .iter()
        .rev()
        .find(|s| s.met_objective && s.rate_rps == rate)?;
    let cpu_ms = cpu_ms_per_order(step)?;
    let lowest = point
        .steps
        .iter()
        .min_by(|a, b| a.rate_rps.total_cmp(&b.rate_rps))?;
    let kib_per_in_flight = match point.blocking_threads {
        Some(_) => step.rss_per_thread_kib,
        None => step.rss_per_in_flight_kib,
    };
    Some(Reading {
        per_core: rate / cores,
        cpu_ms,
        quota_used: step.orders_rps * cpu_ms / 1000.0 / cores,
        hold_ms: step.thread_hold_ms,
        threads: step.blocking_threads.map(f64::from),
        kib_per_in_flight,
        base_mib: lowest.peak_rss_mib,
    })
}

/// Each API's costs at each critical path of `files` (the searches of the measured cells).
pub fn unit_costs(files: &[CapacityFile]) -> Vec<UnitCosts> {
    let mut keys: Vec<(String, u64)> = files
        .iter()
        .flat_map(|f| {
            f.capacities
                .iter()
                .map(|c| (c.api.clone(), f.critical_path_ms))
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|(api, path)| {
            let readings: Vec<Reading> = files
                .iter()
                .filter(|f| f.critical_path_ms == path)
                .filter_map(|f| reading(f, &api))
                .collect();
            let all = |g: fn(&Reading) -> Option<f64>| readings.iter().filter_map(g).collect();
            Some(UnitCosts {
                critical_path_ms: path,
                searches: readings.len(),
                cpu_ms: Spread::of(all(|r| Some(r.cpu_ms)))?,
                quota_used: Spread::of(all(|r| Some(r.quota_used)))?,
                per_core: Spread::of(all(|r| Some(r.per_core)))?,
                hold_beyond_path_ms: Spread::of(all(|r| r.hold_ms))
                    .map(|h| (h.median - path as f64).max(0.0)),
                threads: Spread::of(all(|r| r.threads)).map(|t| t.median),
                kib_per_in_flight: Spread::of(all(|r| r.kib_per_in_flight)).map(|k| k.median),
                base_mib: Spread::of(all(|r| r.base_mib))?.min,
                api,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_is_the_median_and_the_extremes_whatever_the_order() {
        let s = Spread::of(vec![0.9, 0.6, 0.75]).unwrap();
        assert_eq!((s.median, s.min, s.max), (0.75, 0.6, 0.9));
        assert_eq!(Spread::of(vec![1.0, 3.0]).unwrap().median, 2.0);
        assert_eq!(Spread::of(vec![f64::NAN]), None);
    }
}
