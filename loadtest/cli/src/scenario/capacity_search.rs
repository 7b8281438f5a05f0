//! The capacity search's step logic, apart from the runs: which rate to try next given what the
//! rates tried so far did. Doubling from `start` until a rate fails the objective (or `max`
//! passes), then bisecting between the highest rate that passed and the lowest that failed,
//! on a grid of `resolution`, until they are one `resolution` apart. A step flagged
//! harness-bound ends the search: past it the rig, not the API, sets the figures.

/// What one step showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The objective held.
    Met,
    /// The objective failed, the API was the limit.
    Missed,
    /// The harness was flagged: nothing above this rate can be said of the API.
    HarnessBound,
}

/// The rates tried and what each showed.
#[derive(Debug, Clone)]
pub struct Search {
    pub start: f64,
    pub resolution: f64,
    pub max: f64,
    pub tried: Vec<(f64, Step)>,
}

/// Where the search ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Found {
    /// The highest rate that met the objective (`None`: not even the lowest rate tried).
    pub capacity: Option<f64>,
    /// The lowest rate that missed it or was harness-bound (`None`: `max` still met it).
    pub first_failing: Option<f64>,
    /// The search ended on a harness-bound step: the capacity is "above `capacity`".
    pub harness_bound: bool,
}

impl Search {
    pub fn new(start: f64, resolution: f64, max: f64) -> Search {
        Search {
            start: snap(start.min(max), resolution),
            resolution,
            max,
            tried: Vec::new(),
        }
    }

    pub fn record(&mut self, rate: f64, step: Step) {
        self.tried.push((rate, step));
    }

    fn highest_met(&self) -> Option<f64> {
        self.tried
            .iter()
            .filter(|(_, s)| *s == Step::Met)
            .map(|(r, _)| *r)
            .reduce(f64::max)
    }

    fn lowest_failed(&self) -> Option<f64> {
        self.tried
            .iter()
            .filter(|(_, s)| *s != Step::Met)
            .map(|(r, _)| *r)
            .reduce(f64::min)
    }

    /// The next rate to run, or `None` when the search is over.
    pub fn next(&self) -> Option<f64> {
        if self.tried.iter().any(|(_, s)| *s == Step::HarnessBound) {
            return None;
        }
        let (met, failed) = (self.highest_met(), self.lowest_failed());
        let rate = match (met, failed) {
            (None, None) => self.start,
            (Some(m), None) if m >= self.max => return None,
            (Some(m), None) => {
                snap((2.0 * m).min(self.max), self.resolution).max(m + self.resolution)
            }
            (lo, Some(hi)) => {
                let lo = lo.unwrap_or(0.0);
                if hi - lo <= self.resolution + 1e-9 {
                    return None;
                }
                // The midpoint on the grid, strictly between the two.
                let mid = snap(lo + (hi - lo) / 2.0, self.resolution);
                mid.clamp(lo + self.resolution, hi - self.resolution)
            }
        };
        (!self.tried.iter().any(|(r, _)| (*r - rate).abs() < 1e-9)).then_some(rate)
    }

    pub fn found(&self) -> Found {
        Found {
            capacity: self.highest_met(),
            first_failing: self.lowest_failed(),
            harness_bound: self.tried.iter().any(|(_, s)| *s == Step::HarnessBound),
        }
    }
}

/// `rate` down to the nearest multiple of `resolution` (at least one `resolution`).
fn snap(rate: f64, resolution: f64) -> f64 {
    ((rate / resolution).floor() * resolution).max(resolution)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the search against a fake API that meets the objective up to `capacity`.
    fn search(capacity: f64, start: f64, resolution: f64, max: f64) -> (Search, Found) {
        let mut s = Search::new(start, resolution, max);
        while let Some(rate) = s.next() {
            assert!(s.tried.len() < 40, "the search does not end: {:?}", s.tried);
            let step = if rate <= capacity {
                Step::Met
            } else {
                Step::Missed
            };
            s.record(rate, step);
        }
        let found = s.found();
        (s, found)
    }

    #[test]
    fn lands_within_one_step_of_a_known_capacity() {
        for capacity in [25.0, 90.9, 100.0, 299.0, 333.3, 720.0, 1234.0] {
            let (s, found) = search(capacity, 100.0, 25.0, 2000.0);
            let c = found.capacity.unwrap_or(0.0);
            assert!(
                c <= capacity && capacity - c < 25.0,
                "capacity {capacity}: found {c} after {:?}",
                s.tried
            );
            let f = found.first_failing.expect("a failing rate");
            assert!(f - c <= 25.0 + 1e-9, "{c} → {f}");
        }
    }

    #[test]
    fn an_api_below_the_lowest_step_has_no_capacity_but_a_bound() {
        let (_, found) = search(10.0, 100.0, 25.0, 1000.0);
        assert_eq!(found.capacity, None);
        assert_eq!(found.first_failing, Some(25.0));
    }

    #[test]
    fn a_top_rate_that_still_passes_ends_the_search_with_nothing_failing() {
        let (s, found) = search(5000.0, 100.0, 25.0, 800.0);
        assert_eq!(found.capacity, Some(800.0));
        assert_eq!(found.first_failing, None);
        assert_eq!(
            s.tried.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
            vec![100.0, 200.0, 400.0, 800.0]
        );
    }

    #[test]
    fn a_harness_bound_step_ends_the_search() {
        let mut s = Search::new(100.0, 25.0, 2000.0);
        s.record(100.0, Step::Met);
        s.record(200.0, Step::Met);
        assert_eq!(s.next(), Some(400.0));
        s.record(400.0, Step::HarnessBound);
        assert_eq!(s.next(), None);
        let found = s.found();
        assert!(found.harness_bound);
        assert_eq!(
            (found.capacity, found.first_failing),
            (Some(200.0), Some(400.0))
        );
    }

    #[test]
    fn few_steps_for_a_wide_range() {
        let (s, _) = search(720.0, 100.0, 25.0, 2000.0);
        // 100, 200, 400, 800 (missed), then 600, 700, 750, 725: doubling, then bisection.
        assert!(s.tried.len() <= 9, "{:?}", s.tried);
    }
}
