//! What the `faults` scenario reads from a run about each outage: how many requests got an answer
//! before the generator's deadline, the API's CPU while the outage lasted, and whether the orders
//! that kept coming slowed down. Analysis of the run's recorded seconds, kept beside the table
//! that shows it (`faults.rs`); the results crate records the outage, not what it meant.

use lab_results::faults::Outage;
use lab_results::{
    OUTCOME_CONNECT_ERROR, OUTCOME_GAVE_UP, OUTCOME_IO_ERROR, OUTCOME_TIMEOUT, SecondSample,
    Summary,
};

/// The outcomes of a request without an answer: it timed out, could not connect, broke off or
/// gave up.
const UNANSWERED: [&str; 4] = [
    OUTCOME_TIMEOUT,
    OUTCOME_CONNECT_ERROR,
    OUTCOME_IO_ERROR,
    OUTCOME_GAVE_UP,
];

/// Requests (or retrying clients) that got an HTTP answer, any status, before the generator's
/// deadline (`request_timeout_ms`): every finished one but those that timed out, could not
/// connect, broke off or gave up.
pub fn answered_within_deadline(summary: &Summary) -> u64 {
    let unanswered: u64 = UNANSWERED
        .iter()
        .filter_map(|k| summary.errors_by_kind.get(*k))
        .sum();
    summary.completed.saturating_sub(unanswered)
}

/// Requests that ended without an answer in the seconds that overlap `from_s..=to_s` (a quarter
/// of a second either side), and in all the others: `(within, elsewhere)`.
pub fn unanswered_within_and_elsewhere(
    seconds: &[SecondSample],
    from_s: f64,
    to_s: f64,
) -> (u64, u64) {
    let mut counts = (0, 0);
    for s in seconds {
        let n: u64 = UNANSWERED.iter().filter_map(|k| s.outcomes.get(*k)).sum();
        let t = f64::from(s.t);
        if t + 1.0 > from_s - 0.25 && t < to_s + 0.25 {
            counts.0 += n;
        } else {
            counts.1 += n;
        }
    }
    counts
}

/// The seconds of the run that lie wholly inside `window`.
fn inside(seconds: &[SecondSample], window: Outage) -> impl Iterator<Item = &SecondSample> {
    seconds
        .iter()
        .filter(move |s| f64::from(s.t) >= window.at_s && f64::from(s.t + 1) <= window.end_s())
}

/// The API process's CPU over the outage, in cores (CPU seconds ÷ seconds): the mean of the
/// sampler's per-second figures for the seconds wholly inside `window`; `None` when none was
/// sampled (no process, or a window shorter than a second).
pub fn api_cpu_during(seconds: &[SecondSample], window: Outage) -> Option<f64> {
    let cpu: Vec<f64> = inside(seconds, window)
        .filter_map(|s| s.api_process.map(|p| p.cpu_percent / 100.0))
        .collect();
    (!cpu.is_empty()).then(|| cpu.iter().sum::<f64>() / cpu.len() as f64)
}

/// The worst per-second p99 latency (of the requests finished in that second, any outcome) inside
/// `window`, and before it: whether the orders that kept coming slowed down, ms.
pub fn p99_during_and_before(
    seconds: &[SecondSample],
    window: Outage,
) -> (Option<f64>, Option<f64>) {
    let worst = |it: &mut dyn Iterator<Item = &SecondSample>| {
        it.filter_map(|s| s.latency_ms.map(|l| l.p99))
            .reduce(f64::max)
    };
    let during = worst(&mut inside(seconds, window));
    let before = worst(&mut seconds.iter().filter(|s| f64::from(s.t + 1) <= window.at_s));
    (during, before)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab_results::{LatencyPercentiles, ProcessSample};

    fn second(t: u32, cpu: f64, p99: f64) -> SecondSample {
        SecondSample {
            t,
            api_process: Some(ProcessSample {
                cpu_percent: cpu,
                ..ProcessSample::default()
            }),
            latency_ms: Some(LatencyPercentiles {
                p99,
                ..LatencyPercentiles::default()
            }),
            ..SecondSample::default()
        }
    }

    #[test]
    fn the_outage_figures_use_only_the_seconds_inside_it() {
        // Seconds 0..10: 20 % CPU and 50 ms before, 5 % and 3 s during 4..7, then 90 % after.
        let seconds: Vec<SecondSample> = (0..10)
            .map(|t| match t {
                0..=3 => second(t, 20.0, 50.0),
                4..=6 => second(t, 5.0, 3000.0 + f64::from(t)),
                _ => second(t, 90.0, 10.0),
            })
            .collect();
        let window = Outage {
            at_s: 4.0,
            for_s: 3.0,
        };
        let cpu = api_cpu_during(&seconds, window).unwrap();
        assert!((cpu - 0.05).abs() < 1e-9, "{cpu}");
        assert_eq!(
            p99_during_and_before(&seconds, window),
            (Some(3006.0), Some(50.0))
        );
        // A window that starts mid-second leaves that second out; one shorter than a second has none.
        let late = Outage {
            at_s: 3.5,
            for_s: 1.5,
        };
        assert_eq!(api_cpu_during(&seconds, late), Some(0.05));
        let short = Outage {
            at_s: 4.2,
            for_s: 0.5,
        };
        assert_eq!(api_cpu_during(&seconds, short), None);
    }

    #[test]
    fn an_answer_is_any_status_before_the_deadline() {
        let summary = Summary {
            completed: 100,
            errors_by_kind: [
                (OUTCOME_TIMEOUT, 7),
                ("database_unavailable", 20),
                (OUTCOME_IO_ERROR, 2),
                (OUTCOME_GAVE_UP, 1),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
            ..Summary::default()
        };
        assert_eq!(answered_within_deadline(&summary), 90);
    }
}
