//! Where every request's fate is written down, as it happens.
//!
//! Events are bucketed by the second they happen in (`offered`/`not_sent` by the arrival's intended
//! time, `sent` by the actual start, `completed` by the finish), and also accumulated per phase of
//! the arrival (the plateau summary, the stress steps) and for the whole run. Latencies go into
//! HdrHistograms in microseconds: 3 significant digits for the phase and whole-run histograms (so a
//! whole-run p99 is computed from every value, never averaged from per-second figures), 2 digits
//! for the per-second ones (1 % resolution keeps a minute-long series small).

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::gave_up::ClientKeys;

use lab_results::{
    LatencyPercentiles, Lateness, OUTCOME_CREATED, OUTCOME_REPLAYED, SecondArrivals, WindowFate,
    window_fate,
};

/// Largest value a histogram holds, µs (one hour; larger values are clamped).
const MAX_US: u64 = 3_600_000_000;
/// A completed request slower than this counts as "slow" for the stress rule.
pub const SLOW_US: u64 = 10_000_000;

pub(crate) fn histogram(sigfig: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, sigfig).expect("valid histogram bounds")
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros())
        .unwrap_or(u64::MAX)
        .clamp(1, MAX_US)
}

/// Counts and histograms over a set of requests.
#[derive(Debug, Clone)]
pub struct Acc {
    pub offered: u64,
    pub sent: u64,
    pub not_sent: u64,
    pub completed: u64,
    /// Completed requests by outcome kind.
    pub outcomes: BTreeMap<String, u64>,
    /// Latency of every completed request, µs, from its intended send time.
    pub latency: Histogram<u64>,
    /// The same latencies by outcome kind (`201`, `overloaded`, `timeout`, …); they add up to
    /// `latency`, which is how a results file stores them (`crate::histograms`).
    pub by_outcome: BTreeMap<String, Histogram<u64>>,
    /// Actual − intended send time, µs.
    pub lateness: Histogram<u64>,
    /// Completed requests slower than [`SLOW_US`].
    pub slow: u64,
    /// Of a second: its arrivals (by intended send time) by when their answer came —
    /// `answered_after[k]` in second `t + k` (`lab_results::window_fate` reads it). Empty for a
    /// phase or the run, whose answers are already counted by arrival.
    pub answered_after: Vec<u64>,
    /// Significant digits of its histograms.
    pub sigfig: u8,
}

/// Adds every value of `from` into `to`; both have the recorder's bounds, so nothing is out of
/// range (a value recorded was clamped to them).
fn add_all(to: &mut Histogram<u64>, from: &Histogram<u64>) {
    to.add(from)
        .expect("histograms with the recorder's bounds add up");
}

impl Acc {
    pub(crate) fn new(sigfig: u8) -> Self {
        Acc {
            offered: 0,
            sent: 0,
            not_sent: 0,
            completed: 0,
            outcomes: BTreeMap::new(),
            latency: histogram(sigfig),
            by_outcome: BTreeMap::new(),
            lateness: histogram(sigfig),
            slow: 0,
            answered_after: Vec::new(),
            sigfig,
        }
    }

    /// Latency of the requests that ended as `kind`, µs (empty when none did).
    pub fn latency_of(&self, kind: &str) -> Histogram<u64> {
        self.by_outcome
            .get(kind)
            .cloned()
            .unwrap_or_else(|| histogram(self.sigfig))
    }

    /// Adds `other`'s counts and histograms to these (`Histogram::add`: every value of both, so
    /// a percentile of the sum is exact, never an average of percentiles).
    pub fn add(&mut self, other: &Acc) {
        self.offered += other.offered;
        self.sent += other.sent;
        self.not_sent += other.not_sent;
        self.completed += other.completed;
        self.slow += other.slow;
        for (kind, n) in &other.outcomes {
            *self.outcomes.entry(kind.clone()).or_default() += n;
        }
        for (kind, h) in &other.by_outcome {
            let sigfig = self.sigfig;
            let mine = self
                .by_outcome
                .entry(kind.clone())
                .or_insert_with(|| histogram(sigfig));
            add_all(mine, h);
        }
        add_all(&mut self.latency, &other.latency);
        add_all(&mut self.lateness, &other.lateness);
        if self.answered_after.len() < other.answered_after.len() {
            self.answered_after.resize(other.answered_after.len(), 0);
        }
        for (mine, theirs) in self.answered_after.iter_mut().zip(&other.answered_after) {
            *mine += theirs;
        }
    }

    /// Fresh `201`s.
    pub fn ok(&self) -> u64 {
        self.outcomes.get(OUTCOME_CREATED).copied().unwrap_or(0)
    }

    /// Idempotent replays.
    pub fn replayed(&self) -> u64 {
        self.outcomes.get(OUTCOME_REPLAYED).copied().unwrap_or(0)
    }

    /// Completed with any other outcome.
    pub fn errors(&self) -> u64 {
        self.completed - self.ok() - self.replayed()
    }

    /// Outcomes other than `201` and `201_replayed`.
    pub fn errors_by_kind(&self) -> BTreeMap<String, u64> {
        self.outcomes
            .iter()
            .filter(|(k, _)| *k != OUTCOME_CREATED && *k != OUTCOME_REPLAYED)
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }

    /// Sent and not finished.
    pub fn in_flight(&self) -> u64 {
        self.sent.saturating_sub(self.completed)
    }

    /// The stress rule, judged once every request of the step is at least 10 s old: more than 1 %
    /// errors (not-sent included), or more than 1 % slower than 10 s (p99 > 10 s; requests still
    /// open count as slow).
    pub fn step_failed(&self) -> bool {
        if self.offered == 0 {
            return false;
        }
        let limit = self.offered as f64 * crate::profile::STRESS_MAX_ERROR_RATIO;
        let bad = (self.errors() + self.not_sent) as f64;
        let slow = (self.slow + self.in_flight()) as f64;
        bad > limit || slow > limit
    }

    fn complete(&mut self, latency_us: u64, outcome: &str) {
        self.completed += 1;
        *self.outcomes.entry(outcome.to_owned()).or_default() += 1;
        self.latency.saturating_record(latency_us);
        let sigfig = self.sigfig;
        self.by_outcome
            .entry(outcome.to_owned())
            .or_insert_with(|| histogram(sigfig))
            .saturating_record(latency_us);
        if latency_us > SLOW_US {
            self.slow += 1;
        }
    }
}

/// Percentiles of a µs histogram, in ms; `None` when empty.
pub fn percentiles(h: &Histogram<u64>) -> Option<LatencyPercentiles> {
    (!h.is_empty()).then(|| LatencyPercentiles {
        count: h.len(),
        mean: h.mean() / 1000.0,
        p50: h.value_at_quantile(0.50) as f64 / 1000.0,
        p90: h.value_at_quantile(0.90) as f64 / 1000.0,
        p99: h.value_at_quantile(0.99) as f64 / 1000.0,
        p999: h.value_at_quantile(0.999) as f64 / 1000.0,
        max: h.max() as f64 / 1000.0,
    })
}

/// p99 and max of a µs histogram, in ms; `None` when empty.
pub fn lateness(h: &Histogram<u64>) -> Option<Lateness> {
    (!h.is_empty()).then(|| Lateness {
        p99: h.value_at_quantile(0.99) as f64 / 1000.0,
        max: h.max() as f64 / 1000.0,
    })
}

/// The whole run's record.
#[derive(Debug, Clone)]
pub struct Recorder {
    /// Per second; index = whole seconds since the start of the run.
    pub seconds: Vec<Acc>,
    /// Per phase of the arrival.
    pub phases: Vec<Acc>,
    /// Everything.
    pub total: Acc,
    /// Each key by what its client saw (for the orders made after a client gave up).
    pub keys: ClientKeys,
}

impl Recorder {
    /// A recorder for a profile with `phases` phases (at least one is kept).
    pub fn new(phases: usize) -> Self {
        Recorder {
            seconds: Vec::new(),
            phases: (0..phases.max(1)).map(|_| Acc::new(3)).collect(),
            total: Acc::new(3),
            keys: ClientKeys::default(),
        }
    }

    fn second(&mut self, t: f64) -> &mut Acc {
        let i = second_of(t);
        while self.seconds.len() <= i {
            self.seconds.push(Acc::new(2));
        }
        &mut self.seconds[i]
    }

    fn phase(&mut self, phase: usize) -> &mut Acc {
        let last = self.phases.len() - 1;
        &mut self.phases[phase.min(last)]
    }

    /// Adds `other` (another shard of the same schedule) into this record, its second `t` landing
    /// on second `t + shift` here (shards whose clocks started whole seconds apart).
    pub fn add(&mut self, other: &Recorder, shift: usize) {
        for (t, acc) in other.seconds.iter().enumerate() {
            self.second((t + shift) as f64).add(acc);
        }
        while self.phases.len() < other.phases.len() {
            self.phases.push(Acc::new(3));
        }
        for (mine, theirs) in self.phases.iter_mut().zip(&other.phases) {
            mine.add(theirs);
        }
        self.total.add(&other.total);
    }

    /// An arrival due at `t` (seconds since start).
    pub fn offered(&mut self, t: f64, phase: usize) {
        self.second(t).offered += 1;
        self.phase(phase).offered += 1;
        self.total.offered += 1;
    }

    /// An arrival due at `t` refused by the in-flight cap.
    pub fn not_sent(&mut self, t: f64, phase: usize) {
        self.second(t).not_sent += 1;
        self.phase(phase).not_sent += 1;
        self.total.not_sent += 1;
    }

    /// A request started at `t`, `late` after its intended time.
    pub fn sent(&mut self, t: f64, late: Duration, phase: usize) {
        let us = micros(late);
        let s = self.second(t);
        s.sent += 1;
        s.lateness.saturating_record(us);
        let p = self.phase(phase);
        p.sent += 1;
        p.lateness.saturating_record(us);
        self.total.sent += 1;
        self.total.lateness.saturating_record(us);
    }

    /// A request due at `intended` finished at `t` with `outcome`, `latency` after its intended
    /// send time.
    pub fn completed(
        &mut self,
        intended: f64,
        t: f64,
        latency: Duration,
        phase: usize,
        outcome: &str,
    ) {
        let us = micros(latency);
        let after = second_of(t).saturating_sub(second_of(intended));
        let due = &mut self.second(intended).answered_after;
        if due.len() <= after {
            due.resize(after + 1, 0);
        }
        due[after] += 1;
        self.second(t).complete(us, outcome);
        self.phase(phase).complete(us, outcome);
        self.total.complete(us, outcome);
    }

    /// What became of the arrivals due in `[from, to)` (whole seconds): answered within it,
    /// after it, or never.
    pub fn window(&self, from: u32, to: u32) -> WindowFate {
        window_fate(
            self.seconds
                .iter()
                .enumerate()
                .map(|(t, s)| SecondArrivals {
                    t: t as u32,
                    offered: s.offered,
                    not_sent: s.not_sent,
                    answered_after: &s.answered_after,
                }),
            from,
            to,
        )
    }
}

/// The whole second `t` (seconds since the start) falls in; 0 before the start.
fn second_of(t: f64) -> usize {
    if t.is_finite() && t > 0.0 {
        t as usize
    } else {
        0
    }
}

#[cfg(test)]
#[path = "recorder_tests.rs"]
mod tests;
