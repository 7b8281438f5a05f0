//! `loadtest predict --check predictions.json DIR…`: the committed predictions against the
//! searches of the cells they predicted — each cell's measured median and min–max (three
//! searches, as the crossover's cells), the prediction's error against the median, and whether
//! it is within [`TOLERANCE`]. A cell no search measured is listed as not measured yet.

use lab_results::scenario::{CapacityFile, CapacityPoint};

use super::model::{Cell, Prediction};
use crate::scenario::capacity::ranges::Range;

/// The model's aim: every cell's median within 15 % of its prediction.
pub const TOLERANCE: f64 = 0.15;

/// A prediction and what the searches of its cell found.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked<'a> {
    pub prediction: &'a Prediction,
    pub measured: Option<Range>,
    /// The capacities of the cell's searches that the rig stopped (harness-bound) or that met
    /// the top rate: lower bounds, the API served at least each.
    pub at_least: Vec<f64>,
}

impl Checked<'_> {
    /// (predicted − measured median) ÷ measured median.
    pub fn error(&self) -> Option<f64> {
        let m = self.measured.as_ref()?;
        (m.median > 0.0).then(|| (self.prediction.capacity_rps - m.median) / m.median)
    }
}

/// Whether `file` searched `p`'s cell: the same critical path, and the pod as the kernel held
/// it — cores, memory, CFS period (a file without one ran the kernel's 100 ms) and burst.
fn same_cell(file: &CapacityFile, p: &Cell) -> bool {
    let Some(l) = &file.limits else {
        return false;
    };
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
    let period_us = l.cpu_period_us.map_or(100_000.0, |us| us as f64);
    let period_ms = period_us / 1e3;
    let burst_ms = l.cpu_burst_us.unwrap_or(0) as f64 / 1e3;
    // The kernel holds the quota in whole µs (0.09375 CPU of a 10,667 µs period reads back as
    // 1,000 µs, 0.0937470…): the same pod when the quotas round to the same µs.
    let same_quota = |c: f64| (c - p.cpu_cores).abs() * period_us <= 0.5;
    file.critical_path_ms == p.critical_path_ms
        && l.cpu_cores.is_some_and(same_quota)
        && l.memory_bytes == Some(p.memory_mib << 20)
        && close(period_ms, p.cfs_period_ms)
        && close(burst_ms, p.cfs_burst_ms)
        && file.superseded.is_none()
}

pub fn check<'a>(predictions: &'a [Prediction], files: &[CapacityFile]) -> Vec<Checked<'a>> {
    predictions
        .iter()
        .map(|p| {
            let searched: Vec<&CapacityPoint> = files
                .iter()
                .filter(|f| same_cell(f, &p.cell))
                .flat_map(|f| &f.capacities)
                .filter(|c| c.api == p.cell.api)
                .collect();
            Checked {
                prediction: p,
                measured: Range::of(searched.iter().copied()),
                at_least: searched
                    .iter()
                    .filter(|c| c.is_lower_bound())
                    .filter_map(|c| c.capacity_rps)
                    .collect(),
            }
        })
        .collect()
}

/// What the cell's searches measured, for the page: `median/s (min–max), N`, and beside it (or
/// alone, when the rig stopped every search) the rate served in the searches the rig stopped.
fn measured_text(c: &Checked) -> Option<String> {
    let found = c.measured.as_ref().map(|m| {
        format!(
            "{:.0}/s ({:.0}–{:.0}), {}",
            m.median, m.min, m.max, m.searches
        )
    });
    let least = c.at_least.iter().copied().min_by(f64::total_cmp);
    let bound = least.map(|r| {
        let n = c.at_least.len();
        format!("≥ {r:.0}/s in {n} search(es) the rig stopped")
    });
    match (found, bound) {
        (Some(f), Some(b)) => Some(format!("{f}; {b}")),
        (f, b) => f.or(b),
    }
}

/// The page: one row per prediction, measured or not.
pub fn page(checked: &[Checked]) -> String {
    let mut out = String::from(
        "# Capacity predicted against measured\n\n\
         | API | pod | CFS period, burst | critical path | predicted | measured: median (min–max), searches | error | within 15 % |\n\
         |---|---|---|---:|---:|---|---:|---|\n",
    );
    for c in checked {
        let p = c.prediction;
        let (measured, error, within) = match (measured_text(c), c.error()) {
            (Some(m), Some(e)) => (
                m,
                format!("{:+.0} %", 100.0 * e),
                if e.abs() <= TOLERANCE { "yes" } else { "no" }.to_owned(),
            ),
            // Only lower bounds: the prediction is refuted if it is below them by more than
            // the aim, and cannot be judged otherwise.
            (Some(m), None) => {
                let below = c
                    .at_least
                    .iter()
                    .any(|&r| p.capacity_rps < (1.0 - TOLERANCE) * r);
                let within = if below { "no" } else { "cannot tell" };
                (m, "—".to_owned(), within.to_owned())
            }
            (None, _) => (
                "not measured yet".to_owned(),
                "—".to_owned(),
                "—".to_owned(),
            ),
        };
        out.push_str(&format!(
            "{} {}/s ({}–{}) | {measured} | {error} | {within} |\n",
            p.cell.columns(),
            p.capacity_rps,
            p.band_rps[0],
            p.band_rps[1],
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab_results::Limits;
    use lab_results::scenario::StoppedBy;

    fn prediction(api: &str, period_ms: f64, capacity: f64) -> Prediction {
        Prediction {
            cell: Cell {
                api: api.into(),
                cpu_cores: 0.125,
                memory_mib: 128,
                critical_path_ms: 220,
                cfs_period_ms: period_ms,
                cfs_burst_ms: 0.0,
            },
            capacity_rps: capacity,
            band_rps: [capacity, capacity],
            stopped_by: "cpu".into(),
            costs_from_path_ms: 220,
            arithmetic: vec![],
        }
    }

    fn search(period_us: u64, blocking: f64, reactive: f64) -> CapacityFile {
        let point = |api: &str, rate: f64| -> CapacityPoint {
            serde_json::from_value(serde_json::json!({
                "api": api, "blocking_threads": null, "allocator": null, "capacity_rps": rate,
                "resolution_rps": 5.0, "first_failing_rps": null, "stopped_by": "cpu",
                "evidence": null, "steps": []
            }))
            .unwrap()
        };
        CapacityFile {
            scenario: lab_results::ScenarioName::Capacity,
            objective: "p99 <= 253 ms".into(),
            critical_path_ms: 220,
            limits: Some(Limits {
                limits_enforced: true,
                cpu_cores: Some(0.125),
                cpu_period_us: Some(period_us),
                cpu_burst_us: Some(0),
                memory_bytes: Some(128 << 20),
                mechanism: "cgroup v1".into(),
                note: String::new(),
                pinning: None,
            }),
            capacities: vec![
                point("blocking-api", blocking),
                point("reactive-api", reactive),
            ],
            sweep: vec![],
            superseded: None,
            cell_settings: Default::default(),
        }
    }

    #[test]
    fn a_prediction_is_set_against_the_median_of_its_own_cells_searches_only() {
        let predictions = [
            prediction("blocking-api", 100.0, 87.0),
            prediction("reactive-api", 100.0, 103.0),
            prediction("blocking-api", 10.0, 100.0),
        ];
        // Three searches at the 100 ms period; one at the lab's 10 ms, another cell.
        let files = [
            search(100_000, 80.0, 140.0),
            search(100_000, 90.0, 120.0),
            search(100_000, 84.0, 130.0),
            search(10_000, 500.0, 500.0),
        ];
        let checked = check(&predictions, &files);
        let b = checked[0].measured.as_ref().unwrap();
        assert_eq!((b.median, b.min, b.max, b.searches), (84.0, 80.0, 90.0, 3));
        assert!((checked[0].error().unwrap() - 3.0 / 84.0).abs() < 1e-9);
        // reactive-api: 103 against 130 is −21 %: outside the aim, said so.
        assert!((checked[1].error().unwrap() + 27.0 / 130.0).abs() < 1e-9);
        let page = page(&checked);
        assert!(
            page.contains("| 87/s (87–87) | 84/s (80–90), 3 | +4 % | yes |"),
            "{page}"
        );
        assert!(
            page.contains("| 103/s (103–103) | 130/s (120–140), 3 | -21 % | no |"),
            "{page}"
        );
        // The 10 ms cell was searched once, at another rate: its own median, not the others'.
        assert_eq!(checked[2].measured.as_ref().unwrap().median, 500.0);
    }

    #[test]
    fn a_quota_the_kernel_rounded_to_a_whole_microsecond_is_the_same_pod() {
        let mut p = prediction("reactive-api", 10.667, 157.0);
        p.cell.cpu_cores = 0.09375;
        let mut f = search(10_667, 100.0, 114.0);
        f.limits.as_mut().unwrap().cpu_cores = Some(1000.0 / 10_667.0);
        let predictions = [p];
        let checked = check(&predictions, std::slice::from_ref(&f));
        assert_eq!(checked[0].measured.as_ref().unwrap().median, 114.0);
        // A quota a whole µs apart is another pod.
        f.limits.as_mut().unwrap().cpu_cores = Some(1001.0 / 10_667.0);
        assert_eq!(check(&predictions, &[f])[0].measured, None);
    }

    #[test]
    fn a_search_the_rig_stopped_bounds_the_capacity_from_below_only() {
        let mut f = search(100_000, 84.0, 283.0);
        f.capacities[1].stopped_by = StoppedBy::Harness;
        let predictions = [
            prediction("reactive-api", 100.0, 283.0),
            prediction("reactive-api", 100.0, 200.0),
        ];
        let checked = check(&predictions, std::slice::from_ref(&f));
        assert_eq!(checked[0].measured, None);
        assert_eq!(checked[0].at_least, vec![283.0]);
        let page = page(&checked);
        assert!(
            page.contains(
                "| 283/s (283–283) | ≥ 283/s in 1 search(es) the rig stopped | — | cannot tell |"
            ),
            "{page}"
        );
        // 200 is more than 15 % below what the API was seen to serve: refuted.
        assert!(
            page.contains("| 200/s (200–200) | ≥ 283/s in 1 search(es) the rig stopped | — | no |"),
            "{page}"
        );
    }

    #[test]
    fn a_cell_no_search_measured_says_so() {
        let predictions = [prediction("blocking-api", 100.0, 87.0)];
        let checked = check(&predictions, &[]);
        assert_eq!(checked[0].error(), None);
        assert!(page(&checked).contains("| not measured yet | — | — |"));
    }
}
