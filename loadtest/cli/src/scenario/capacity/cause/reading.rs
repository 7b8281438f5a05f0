//! What the rules read from a run, worked out once: the plateau's seconds and figures, the API's
//! settings, its refusals and the CPU figures several rules share.

use lab_results::settings::RecordedSettings;
use lab_results::{OUTCOME_OVERLOADED, Refusals, RunResults, SecondSample, Summary};

use super::super::refusals::refusals;
use super::super::throttling::throttled_share;
use super::{SLOW_TX_FACTOR, SLOW_TX_MIN_MS};

/// A run that missed the objective, as the rules ([`super::RULES`]) read it.
pub struct Reading<'a> {
    pub(super) r: &'a RunResults,
    /// The seconds the cause is read over: the plateau's, else every second with arrivals.
    pub(super) secs: Vec<&'a SecondSample>,
    /// The plateau's figures (the whole run's when it had none).
    pub(super) summary: &'a Summary,
    pub(super) settings: RecordedSettings,
    /// The rate offered over the plateau, orders/s.
    pub(super) offered: f64,
    /// Orders served 2xx over the plateau, /s.
    pub(super) served: f64,
    /// The clients' `overloaded` answers.
    pub(super) overloaded: u64,
    /// The API's own count of its refusals by reason, where it kept one.
    pub(super) refused: Option<Refusals>,
    /// The pod's CPU quota, cores (1 without one).
    pub(super) cores: f64,
    /// The API's mean CPU over the plateau, % of a core.
    pub(super) cpu: Option<f64>,
    /// Share of the plateau's CFS periods throttled.
    pub(super) throttled: Option<f64>,
    /// Its threads' mean wait for the CPU, % of a core (schedstat's run delay, summed).
    pub(super) run_queue: Option<f64>,
    /// Plateau seconds in which requests waited for a pooled connection.
    pub(super) waiting: usize,
}

impl<'a> Reading<'a> {
    pub fn of(r: &'a RunResults) -> Reading<'a> {
        let secs = plateau(r);
        let summary = r.plateau.as_ref().unwrap_or(&r.summary);
        let overloaded = summary
            .errors_by_kind
            .get(OUTCOME_OVERLOADED)
            .copied()
            .unwrap_or(0);
        let cpu = mean(
            secs.iter()
                .filter_map(|s| s.api_process.map(|p| p.cpu_percent)),
        );
        let run_queue = mean(
            secs.iter()
                .filter_map(|s| s.api_process.and_then(|p| p.cpu_wait_percent)),
        );
        let waiting = secs
            .iter()
            .filter(|s| s.api_metrics.and_then(|m| m.db_pool_waiting).unwrap_or(0.0) > 0.0)
            .count();
        Reading {
            r,
            summary,
            settings: r.config.settings(),
            offered: summary.offered_rps,
            served: summary.ok_throughput_rps,
            overloaded,
            refused: refusals(r).0,
            cores: r.config.limits.cpu_cores.unwrap_or(1.0),
            cpu,
            throttled: throttled_share(&secs, r.config.limits.cpu_period_us),
            run_queue,
            waiting,
            secs,
        }
    }

    /// The refusals as evidence: by the reason the API counted, or, in a file without that
    /// record, the clients' `overloaded` answers said to be of unrecorded reason (never a guess
    /// at the rule).
    pub(super) fn refusals_text(&self) -> String {
        let overloaded = self.overloaded;
        match &self.refused {
            Some(r) => format!(
                "{overloaded} refused overloaded ({:.0} by the event loop's lag rule, {:.0} for \
                 want of a place in time, as the API counted)",
                r.loop_lag, r.overloaded
            ),
            None => {
                format!(
                    "{overloaded} refused overloaded (by which rule, this file does not record)"
                )
            }
        }
    }

    /// The mean CPU as evidence, % of a core (`?` unread).
    pub(super) fn cpu_text(&self) -> String {
        self.cpu.map_or("?".to_owned(), |c| format!("{c:.0}"))
    }

    /// Each order's wait for the CPU at `orders_rps`, ms (`?` unread).
    pub(super) fn wait_ms_per_order(&self, orders_rps: f64) -> String {
        self.run_queue
            .filter(|_| orders_rps > 0.0)
            .map_or("?".to_owned(), |w| format!("{:.1}", 10.0 * w / orders_rps))
    }

    /// The critical path of the mocked dependencies, seconds.
    pub(super) fn critical_path_s(&self) -> Option<f64> {
        let ms = self.r.config.mock_latency_ms?.critical_path_ms() as f64;
        (ms > 0.0).then_some(ms / 1000.0)
    }

    /// The run's peak memory and what counted it: the cgroup's charge where the lab read it
    /// (what the limit is enforced against), else the process's peak RSS (older files, no pod).
    pub(super) fn peak_memory(&self) -> Option<(u64, &'static str)> {
        match (
            self.r.cgroup_memory_peak_bytes,
            self.r.summary.peak_rss_bytes,
        ) {
            (Some(b), _) => Some((b, "peak memory charged to its cgroup")),
            (None, Some(b)) => Some((b, "peak RSS")),
            (None, None) => None,
        }
    }

    /// blocking-api's busy threads in each plateau sample that counted them.
    pub(super) fn pool_busy(&self) -> Vec<f64> {
        self.secs
            .iter()
            .filter_map(|s| s.api_metrics.and_then(|m| m.blocking_pool_busy))
            .collect()
    }

    /// Pool acquire timeouts over the plateau (a cumulative counter's rise).
    pub(super) fn acquire_timeouts(&self) -> f64 {
        let counter: Vec<f64> = self
            .secs
            .iter()
            .filter_map(|s| s.api_metrics.and_then(|m| m.db_pool_acquire_timeouts))
            .collect();
        match (counter.first(), counter.last()) {
            (Some(a), Some(b)) => b - a,
            _ => 0.0,
        }
    }

    /// Per plateau second with transactions: the API's mean transaction time, ms (from the
    /// cumulative `db_tx_seconds` sum and count of consecutive samples), and the CFS periods its
    /// cgroup was throttled in over the same second (the same samples' counter).
    pub(super) fn tx_seconds(&self) -> Vec<TxSecond> {
        let counters: Vec<(f64, f64, Option<f64>)> = self
            .secs
            .iter()
            .filter_map(|s| {
                let m = s.api_metrics?;
                Some((
                    m.db_tx_seconds_sum?,
                    m.db_tx_count?,
                    m.cgroup_throttled_periods,
                ))
            })
            .collect();
        counters
            .windows(2)
            .filter(|w| w[1].1 > w[0].1)
            .map(|w| TxSecond {
                tx_ms: 1000.0 * (w[1].0 - w[0].0) / (w[1].1 - w[0].1),
                throttled_periods: w[1].2.zip(w[0].2).map(|(after, before)| after - before),
            })
            .collect()
    }

    /// The plateau's seconds of slow transactions: those at [`SLOW_TX_FACTOR`] × the median
    /// second's mean or more (and [`SLOW_TX_MIN_MS`] more). `None` with fewer than five seconds
    /// of transactions, with requests waiting for a connection (the pool's, not the
    /// transactions'), or with no slow second.
    pub(super) fn slow_tx_seconds(&self) -> Option<SlowSeconds> {
        let mut seconds = self.tx_seconds();
        if seconds.len() < 5 || self.waiting != 0 {
            return None;
        }
        seconds.sort_by(|a, b| a.tx_ms.total_cmp(&b.tx_ms));
        let median = seconds[seconds.len() / 2].tx_ms;
        let is_slow =
            |s: &TxSecond| s.tx_ms >= SLOW_TX_FACTOR * median && s.tx_ms - median >= SLOW_TX_MIN_MS;
        let (mut slow, others): (Vec<TxSecond>, Vec<TxSecond>) =
            seconds.into_iter().partition(is_slow);
        slow.reverse();
        (!slow.is_empty()).then_some(SlowSeconds {
            median_ms: median,
            slow,
            others,
        })
    }
}

/// One plateau second's transactions: their mean time, and the CFS periods the API was
/// throttled in (`None` without the cgroup's counter).
#[derive(Debug, Clone, Copy)]
pub(super) struct TxSecond {
    pub(super) tx_ms: f64,
    pub(super) throttled_periods: Option<f64>,
}

/// The plateau's seconds of transactions split by [`Reading::slow_tx_seconds`].
pub(super) struct SlowSeconds {
    /// The median second's mean transaction time, ms.
    pub(super) median_ms: f64,
    /// The slow seconds, slowest first.
    pub(super) slow: Vec<TxSecond>,
    pub(super) others: Vec<TxSecond>,
}

impl SlowSeconds {
    pub(super) fn worst_ms(&self) -> f64 {
        self.slow[0].tx_ms
    }
}

/// The seconds the cause is read over: the plateau's, else every second with arrivals.
fn plateau(r: &RunResults) -> Vec<&SecondSample> {
    let constant: Vec<&SecondSample> = r.seconds.iter().filter(|s| s.phase == "constant").collect();
    if constant.is_empty() {
        r.seconds.iter().filter(|s| s.offered > 0).collect()
    } else {
        constant
    }
}

pub(super) fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, sum) = values.fold((0u32, 0.0), |(n, s), v| (n + 1, s + v));
    (n > 0).then(|| sum / f64::from(n))
}

/// Bytes as MiB.
pub(super) fn mib(b: f64) -> f64 {
    b / (1024.0 * 1024.0)
}
