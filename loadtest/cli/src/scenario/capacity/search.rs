//! The capacity search's step logic, apart from the runs: which rate to try next given what the
//! rates tried so far did. Doubling from `start` while a rate meets the objective (up to `max`),
//! or halving while it misses (down to 1/s), then bisecting between the highest rate that met it
//! and the lowest that missed, until the two are at most the [`Resolution`] apart: 5 % of the
//! rate found by default, or a width given in rate units (`--resolution`). With a share the
//! midpoint is geometric, so each step halves the ratio of the bracket whatever the rate's order
//! of magnitude (a capacity of 20/s and one of 1,200/s take as many steps); with a width it is
//! arithmetic. Rates are whole (profile
//! `hold-R`), so a bracket never narrows below 1/s. A step flagged harness-bound (the runner
//! measures such a step twice, `capacity::worth_measuring_again`) ends the search: past it the
//! rig, not the API, sets the figures.

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

/// How narrow the bracket [highest met, lowest missed] must be for the search to end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Resolution {
    /// At most this share of the highest rate that met the objective (0.05: 5 %).
    Relative(f64),
    /// At most this many requests per second.
    Absolute(f64),
}

/// The default: the bracket within 5 % of the rate found.
pub const DEFAULT_RESOLUTION: Resolution = Resolution::Relative(0.05);

/// The lowest rate tried, /s.
const MIN_RPS: f64 = 1.0;

impl Resolution {
    /// The widest bracket that ends the search when `met` is the highest rate that met it.
    pub fn width_at(self, met: f64) -> f64 {
        match self {
            Resolution::Relative(share) => share * met,
            Resolution::Absolute(rps) => rps,
        }
    }

    /// Halfway between `met` and `missed` as this resolution measures the gap: geometric for a
    /// share (each step halves the ratio), arithmetic for a width in rate units.
    fn midpoint(self, met: f64, missed: f64) -> f64 {
        match self {
            Resolution::Relative(_) => (met * missed).sqrt(),
            Resolution::Absolute(_) => (met + missed) / 2.0,
        }
    }

    /// `5 % of the rate found`, `25/s`.
    pub fn describe(self) -> String {
        match self {
            Resolution::Relative(share) => format!("{} % of the rate found", share * 100.0),
            Resolution::Absolute(rps) => format!("{rps}/s"),
        }
    }
}

/// The rates tried and what each showed.
#[derive(Debug, Clone)]
pub struct Search {
    pub start: f64,
    pub resolution: Resolution,
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
    /// The lowest rate that missed the objective with the API the limit (`None`: none did).
    pub lowest_missed: Option<f64>,
    /// The search ended on a harness-bound step: the capacity is "above `capacity`".
    pub harness_bound: bool,
}

impl Search {
    pub fn new(start: f64, resolution: Resolution, max: f64) -> Search {
        Search {
            start: whole(start.min(max)),
            resolution,
            max,
            tried: Vec::new(),
        }
    }

    pub fn record(&mut self, rate: f64, step: Step) {
        self.tried.push((rate, step));
    }

    fn highest(&self, which: impl Fn(Step) -> bool) -> Option<f64> {
        let rates = self
            .tried
            .iter()
            .filter(|(_, s)| which(*s))
            .map(|(r, _)| *r);
        rates.reduce(f64::max)
    }

    fn lowest(&self, which: impl Fn(Step) -> bool) -> Option<f64> {
        let rates = self
            .tried
            .iter()
            .filter(|(_, s)| which(*s))
            .map(|(r, _)| *r);
        rates.reduce(f64::min)
    }

    /// The next rate to run, or `None` when the search is over.
    pub fn next(&self) -> Option<f64> {
        if self.tried.iter().any(|(_, s)| *s == Step::HarnessBound) {
            return None;
        }
        let met = self.highest(|s| s == Step::Met);
        let failed = self.lowest(|s| s != Step::Met);
        let rate = match (met, failed) {
            (None, None) => self.start,
            (Some(m), None) if m >= self.max => return None,
            (Some(m), None) => whole((2.0 * m).min(self.max)),
            (None, Some(f)) if f <= MIN_RPS => return None,
            (None, Some(f)) => whole(f / 2.0),
            (Some(m), Some(f)) => {
                if f - m <= self.resolution.width_at(m).max(1.0) + 1e-9 {
                    return None;
                }
                // The midpoint in the resolution's own measure, a whole rate strictly between.
                whole(self.resolution.midpoint(m, f)).clamp(m + 1.0, f - 1.0)
            }
        };
        (!self.tried.iter().any(|(r, _)| (*r - rate).abs() < 1e-9)).then_some(rate)
    }

    pub fn found(&self) -> Found {
        Found {
            capacity: self.highest(|s| s == Step::Met),
            first_failing: self.lowest(|s| s != Step::Met),
            lowest_missed: self.lowest(|s| s == Step::Missed),
            harness_bound: self.tried.iter().any(|(_, s)| *s == Step::HarnessBound),
        }
    }
}

/// `rate` to a whole number of requests per second, at least [`MIN_RPS`].
fn whole(rate: f64) -> f64 {
    rate.round().max(MIN_RPS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the search against a fake API that meets the objective up to `capacity`.
    fn search(capacity: f64, start: f64, resolution: Resolution, max: f64) -> (Search, Found) {
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
    fn finds_a_known_capacity_within_five_percent_at_any_order_of_magnitude() {
        for capacity in [21.7, 37.0, 90.9, 100.0, 299.0, 333.3, 720.0, 1234.0] {
            let (s, found) = search(capacity, 100.0, DEFAULT_RESOLUTION, 1600.0);
            let met = found.capacity.expect("a rate met the objective");
            let missed = found.lowest_missed.expect("a rate missed it");
            assert!(
                met <= capacity && capacity < missed,
                "capacity {capacity} outside [{met}, {missed}] after {:?}",
                s.tried
            );
            // Within 5 % of the rate found, or 1/s where 5 % is less than a whole rate.
            assert!(
                missed - met <= (0.05 * met).max(1.0) + 1e-9,
                "capacity {capacity}: bracket [{met}, {missed}] after {:?}",
                s.tried
            );
            assert!(s.tried.len() <= 10, "{capacity}: {:?}", s.tried);
        }
    }

    #[test]
    fn a_given_resolution_in_rate_units_sets_the_bracket() {
        for capacity in [90.9, 720.0, 1234.0] {
            let (s, found) = search(capacity, 100.0, Resolution::Absolute(25.0), 2000.0);
            let (met, missed) = (found.capacity.unwrap(), found.lowest_missed.unwrap());
            assert!(met <= capacity && capacity < missed, "{:?}", s.tried);
            assert!(missed - met <= 25.0, "{capacity}: {:?}", s.tried);
            assert!(s.tried.len() <= 10, "{capacity}: {:?}", s.tried);
        }
        // 90.9/s: 100 missed, 50 met, then 75, 88, 94 (missed), 91 (missed): between 88 and 91.
        let (s, found) = search(90.9, 100.0, Resolution::Absolute(5.0), 2000.0);
        assert_eq!(
            s.tried.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
            vec![100.0, 50.0, 75.0, 88.0, 94.0, 91.0]
        );
        assert_eq!(
            (found.capacity, found.lowest_missed),
            (Some(88.0), Some(91.0))
        );
    }

    #[test]
    fn an_api_below_the_lowest_rate_has_no_capacity_but_a_bound() {
        let (_, found) = search(0.5, 100.0, DEFAULT_RESOLUTION, 1000.0);
        assert_eq!(found.capacity, None);
        assert_eq!(found.lowest_missed, Some(1.0));
    }

    #[test]
    fn a_top_rate_that_still_passes_ends_the_search_with_nothing_failing() {
        let (s, found) = search(5000.0, 100.0, DEFAULT_RESOLUTION, 800.0);
        assert_eq!(found.capacity, Some(800.0));
        assert_eq!((found.first_failing, found.lowest_missed), (None, None));
        assert_eq!(
            s.tried.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
            vec![100.0, 200.0, 400.0, 800.0]
        );
    }

    #[test]
    fn a_harness_bound_step_ends_the_search() {
        let mut s = Search::new(100.0, DEFAULT_RESOLUTION, 2000.0);
        s.record(100.0, Step::Met);
        s.record(200.0, Step::Met);
        assert_eq!(s.next(), Some(400.0));
        s.record(400.0, Step::HarnessBound);
        assert_eq!(s.next(), None);
        let found = s.found();
        assert!(found.harness_bound);
        assert_eq!(
            (found.capacity, found.first_failing, found.lowest_missed),
            (Some(200.0), Some(400.0), None)
        );
    }
}
