//! The API's cgroup throttling over a run's plateau, as the stopping-resource rules
//! ([`super::cause`]) read it: the share of CFS periods throttled, the seconds throttled in most
//! of their periods (bursts), and the seconds throttled at all with how closely each second's
//! p99 followed its throttled periods (stalls).

use lab_results::{OUTCOME_OVERLOADED, SecondSample};

/// Throttled in this share of the plateau's CFS periods (over the plateau, or in one second of
/// a burst): the quota held it back.
pub const THROTTLED_SHARE: f64 = 0.5;

/// CFS periods in a second: `period_us` long (the limits' `cpu_period_us`; a file without it ran
/// the kernel's default of 100 ms).
pub(super) fn periods_per_second(period_us: Option<u64>) -> f64 {
    1e6 / period_us.unwrap_or(100_000).max(1) as f64
}

/// Share of the plateau's CFS periods in which the cgroup was throttled.
pub(super) fn throttled_share(secs: &[&SecondSample], period_us: Option<u64>) -> Option<f64> {
    let counter: Vec<f64> = secs
        .iter()
        .filter_map(|s| s.api_metrics.and_then(|m| m.cgroup_throttled_periods))
        .collect();
    let (first, last) = (counter.first()?, counter.last()?);
    let per_second = periods_per_second(period_us);
    let periods = per_second * (counter.len().saturating_sub(1)) as f64;
    (periods > 0.0).then(|| (last - first) / periods)
}

/// Of the plateau's seconds with a throttling reading (the counter's rise from the second
/// before), how many were throttled in at least one period, and how closely each second's p99
/// followed its throttled periods (`None` when either never varied).
pub(super) struct Stalls {
    pub(super) seconds: usize,
    pub(super) throttled: usize,
    pub(super) p99_correlation: Option<f64>,
}

/// Each plateau second with a throttling reading before it: the periods it was throttled in (the
/// cumulative counter's rise), and the second.
fn rises<'a>(secs: &[&'a SecondSample]) -> Vec<(f64, &'a SecondSample)> {
    let counter = |s: &SecondSample| s.api_metrics.and_then(|m| m.cgroup_throttled_periods);
    secs.windows(2)
        .filter_map(|w| Some((counter(w[1])? - counter(w[0])?, w[1])))
        .collect()
}

pub(super) fn throttled_seconds(secs: &[&SecondSample]) -> Option<Stalls> {
    let rises = rises(secs);
    let paired: Vec<(f64, f64)> = rises
        .iter()
        .filter_map(|(rise, s)| Some((*rise, s.latency_ms?.p99)))
        .collect();
    (!rises.is_empty()).then(|| Stalls {
        seconds: rises.len(),
        throttled: rises.iter().filter(|(d, _)| *d >= 1.0).count(),
        p99_correlation: pearson(&paired),
    })
}

/// Pearson's correlation coefficient of the pairs; `None` for fewer than three, or when either
/// side never varies.
fn pearson(pairs: &[(f64, f64)]) -> Option<f64> {
    let n = pairs.len() as f64;
    if pairs.len() < 3 {
        return None;
    }
    let (mx, my) = (
        pairs.iter().map(|p| p.0).sum::<f64>() / n,
        pairs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in pairs {
        (sxy, sxx, syy) = (
            sxy + (x - mx) * (y - my),
            sxx + (x - mx).powi(2),
            syy + (y - my).powi(2),
        );
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// Plateau seconds whose cgroup was throttled in at least [`THROTTLED_SHARE`] of their CFS
/// periods: how many, the least and most share among them, and the orders refused overloaded in
/// them. `None` when there is none.
pub(super) struct Bursts {
    pub(super) seconds: usize,
    pub(super) least: f64,
    pub(super) most: f64,
    pub(super) refused: u64,
}

impl Bursts {
    /// `99 %`, or `92–99 %` when the seconds differ.
    pub(super) fn shares(&self) -> String {
        let (least, most) = (100.0 * self.least, 100.0 * self.most);
        if format!("{least:.0}") == format!("{most:.0}") {
            format!("{most:.0} %")
        } else {
            format!("{least:.0}–{most:.0} %")
        }
    }
}

pub(super) fn throttled_bursts(secs: &[&SecondSample], period_us: Option<u64>) -> Option<Bursts> {
    let per_second = periods_per_second(period_us);
    let mut found: Option<Bursts> = None;
    for (rise, second) in rises(secs) {
        let share = rise / per_second;
        if share < THROTTLED_SHARE {
            continue;
        }
        let refused = second
            .outcomes
            .get(OUTCOME_OVERLOADED)
            .copied()
            .unwrap_or(0);
        let f = found.get_or_insert(Bursts {
            seconds: 0,
            least: f64::MAX,
            most: 0.0,
            refused: 0,
        });
        f.seconds += 1;
        (f.least, f.most) = (f.least.min(share), f.most.max(share));
        f.refused += refused;
    }
    found
}
