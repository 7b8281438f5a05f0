//! The figures the scenario tables read from a run's results (and the lab's `scenario.json`
//! rows with them, so a row and its table cell agree): a closed run's rate, the plateau, the
//! added database RTT, connections in use, the repeats' median, the schedule's length. Plain
//! reads of `lab_results` types, in one place so every scenario page computes them one way.

use lab_results::{RunResults, SecondSample, Summary};

/// Requests per second of a closed run, as `ab` reports it: completed ÷ time from first send to
/// last answer (whole per-second buckets when that time was not recorded).
pub fn closed_rate(r: &RunResults) -> f64 {
    match r.elapsed_s {
        Some(t) if t > 0.0 => r.summary.completed as f64 / t,
        _ => r.summary.throughput_rps,
    }
}

pub fn rtt(r: &RunResults) -> f64 {
    r.config.settings().db_rtt_ms.unwrap_or(0.0)
}

pub fn plateau(r: &RunResults) -> &Summary {
    r.plateau.as_ref().unwrap_or(&r.summary)
}

/// Connections in use over the constant phase's seconds, (mean, max); `None` when no second
/// scraped the gauge.
pub fn connections_in_use(r: &RunResults) -> Option<(f64, f64)> {
    let in_use: Vec<f64> = constant_seconds(r)
        .iter()
        .filter_map(|s| s.api_metrics?.db_pool_in_use)
        .collect();
    let mean = in_use.iter().sum::<f64>() / (!in_use.is_empty()).then_some(in_use.len())? as f64;
    Some((mean, in_use.iter().copied().fold(0.0, f64::max)))
}

pub fn constant_seconds(r: &RunResults) -> Vec<&SecondSample> {
    let constant: Vec<&SecondSample> = r.seconds.iter().filter(|s| s.phase == "constant").collect();
    if constant.is_empty() {
        r.seconds.iter().collect()
    } else {
        constant
    }
}

/// Connection-held time per transaction over the samples: Δsum ÷ Δcount of the API's histogram.
pub fn mean_tx_ms(secs: &[&SecondSample]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = secs
        .iter()
        .filter_map(|s| {
            Some((
                s.api_metrics?.db_tx_seconds_sum?,
                s.api_metrics?.db_tx_count?,
            ))
        })
        .collect();
    let (first, last) = (pts.first()?, pts.last()?);
    let count = last.1 - first.1;
    (count > 0.0).then(|| 1000.0 * (last.0 - first.0) / count)
}

/// The repeats' median of a figure (the lab's one rule, [`lab_results::median`]); NaN for none.
pub fn median(runs: &[RunResults], f: impl Fn(&RunResults) -> f64) -> f64 {
    lab_results::median(runs.iter().map(f)).unwrap_or(f64::NAN)
}

/// The schedule's length, s: the end of its last phase (at least 1 s).
pub fn schedule_s(r: &RunResults) -> f64 {
    r.config
        .profile
        .phases
        .iter()
        .map(|p| p.start_s + p.duration_s)
        .fold(1.0, f64::max)
}
