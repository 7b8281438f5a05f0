//! CPU throttling of the API's cgroup over a span: the difference of its cumulative CFS counters
//! (`cgroup_cpu_nr_throttled`, `cgroup_cpu_throttled_seconds` on the API's `/metrics`) between
//! the span's first and last samples. A thread-per-request service under a CFS quota is held back
//! in bursts even when its average CPU stays below the limit; the report shows it beside CPU.

use lab_results::SecondSample;

/// Throttled periods and seconds over the seconds in `window` (`[from, to]`, or all of them);
/// `None` where the API could not read its cgroup.
pub fn throttled(seconds: &[SecondSample], window: Option<(u32, u32)>) -> Option<(f64, f64)> {
    let counters = seconds
        .iter()
        .filter(|s| window.is_none_or(|(from, to)| (from..=to).contains(&s.t)))
        .filter_map(|s| {
            let m = s.api_metrics?;
            Some((m.cgroup_throttled_periods?, m.cgroup_throttled_seconds?))
        });
    let (mut first, mut last) = (None, None);
    for c in counters {
        first.get_or_insert(c);
        last = Some(c);
    }
    let ((p0, s0), (p1, s1)) = (first?, last?);
    // A restarted API starts its counters again; never report a negative difference.
    Some(((p1 - p0).max(0.0), (s1 - s0).max(0.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab_results::ApiMetrics;

    fn seconds(counters: &[Option<(f64, f64)>]) -> Vec<SecondSample> {
        counters
            .iter()
            .enumerate()
            .map(|(t, c)| SecondSample {
                t: t as u32,
                api_metrics: Some(ApiMetrics {
                    cgroup_throttled_periods: c.map(|c| c.0),
                    cgroup_throttled_seconds: c.map(|c| c.1),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect()
    }

    #[test]
    fn the_difference_between_the_first_and_last_readable_samples() {
        let s = seconds(&[
            None,
            Some((10.0, 0.5)),
            Some((14.0, 0.7)),
            Some((30.0, 1.5)),
            None,
        ]);
        assert_eq!(throttled(&s, None), Some((20.0, 1.0)));
        assert_eq!(throttled(&s, Some((2, 3))), Some((16.0, 0.8)));
    }

    #[test]
    fn nothing_when_the_cgroup_was_not_readable() {
        assert_eq!(throttled(&seconds(&[None, None]), None), None);
    }
}
