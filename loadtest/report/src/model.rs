//! What the report is built from: runs grouped by API (repeats together), the spread of a figure
//! across repeats, and the number formats every table and chart label shares.

use lab_results::numbers;
use lab_results::{Limits, RunResults};

use super::svg::PALETTE;

/// All repeats of one API, in repeat order, with the colour that API has in every chart.
#[derive(Debug, Clone)]
pub struct ApiRuns<'a> {
    pub api: &'a str,
    pub runs: Vec<&'a RunResults>,
    pub colour: &'static str,
}

/// Groups runs by API, keeping the order in which APIs first appear (the lab interleaves
/// blocking 0, reactive 0, blocking 1, …, so the blocking API usually comes first).
pub fn group(runs: &[RunResults]) -> Vec<ApiRuns<'_>> {
    // Vermillion, blue, then the rest of the palette: the two main APIs get the most distinct pair.
    const ORDER: [usize; 7] = [1, 0, 2, 3, 4, 5, 6];
    let mut groups: Vec<ApiRuns<'_>> = Vec::new();
    for run in runs {
        match groups.iter_mut().find(|g| g.api == run.api) {
            Some(g) => g.runs.push(run),
            None => {
                let colour = PALETTE[ORDER[groups.len() % ORDER.len()]];
                groups.push(ApiRuns {
                    api: &run.api,
                    runs: vec![run],
                    colour,
                });
            }
        }
    }
    for g in &mut groups {
        g.runs.sort_by_key(|r| r.repeat_index);
    }
    groups
}

impl<'a> ApiRuns<'a> {
    /// The first repeat (every group has at least one run).
    pub fn first(&self) -> Option<&'a RunResults> {
        self.runs.first().copied()
    }

    /// Spread over repeats of a figure taken from each run (`None` values are skipped).
    pub fn spread(&self, figure: impl Fn(&RunResults) -> Option<f64>) -> Option<Spread> {
        Spread::of(self.runs.iter().filter_map(|r| figure(r)))
    }
}

/// Minimum, median and maximum of a figure over the repeats of one API.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
    /// How many repeats had the figure.
    pub n: usize,
}

impl Spread {
    /// `None` when no finite value is given. The median is the lab's one rule
    /// ([`lab_results::median`]: the mean of the two middles of an even count).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        let (min, max) = v
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
        Some(Spread {
            min,
            median: lab_results::median(v.iter().copied())?,
            max,
            n: v.len(),
        })
    }

    /// `true` when repeats disagree, i.e. the range is worth showing.
    pub fn varies(&self) -> bool {
        self.n > 1 && self.min != self.max
    }
}

/// How a figure is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Whole number with thousands separators: `12,345`.
    Count,
    /// Requests per second: `91.3 req/s`.
    Rate,
    /// Milliseconds, switching to seconds from 1 s: `850 ms`, `2.31 s`.
    Millis,
    /// Already a percentage: `99.2 %`.
    Percent,
    /// Bytes written as MiB: `42.0 MiB`.
    Bytes,
    /// Plain number with two decimals (CPU-seconds and the like), followed by the given suffix.
    Decimal(&'static str),
}

/// Formats `v` in `unit`; non-finite values become an en dash.
pub fn fmt(v: f64, unit: Unit) -> String {
    if !v.is_finite() {
        return "–".to_owned();
    }
    match unit {
        Unit::Count => numbers::grouped(v),
        Unit::Rate => format!("{v:.1} req/s"),
        Unit::Millis if v.abs() >= 1000.0 => format!("{:.2} s", v / 1000.0),
        Unit::Millis if v.abs() >= 10.0 => format!("{v:.0} ms"),
        Unit::Millis => format!("{v:.1} ms"),
        Unit::Percent => format!("{v:.1} %"),
        Unit::Bytes => numbers::mib(v),
        Unit::Decimal("") => format!("{v:.2}"),
        Unit::Decimal(suffix) => format!("{v:.2} {suffix}"),
    }
}

/// Runs that share a text (e.g. the same limits note), labelled as briefly as possible: the API name
/// when every repeat of it shares the text, else the run names. Runs whose text is `None` are left out.
pub fn by_api<T: PartialEq + Clone>(
    groups: &[ApiRuns<'_>],
    text: impl Fn(&RunResults) -> Option<T>,
) -> Vec<(String, T)> {
    let mut out = Vec::new();
    for g in groups {
        let texts: Vec<(String, Option<T>)> =
            g.runs.iter().map(|r| (run_name(r), text(r))).collect();
        let mut seen: Vec<&T> = Vec::new();
        for t in texts.iter().filter_map(|(_, t)| t.as_ref()) {
            if seen.contains(&t) {
                continue;
            }
            seen.push(t);
            let names: Vec<&str> = texts
                .iter()
                .filter(|(_, x)| x.as_ref() == Some(t))
                .map(|(n, _)| n.as_str())
                .collect();
            let label = match (names.len(), g.runs.len()) {
                (n, all) if n == all && all > 1 => format!("{} (all {all} repeats)", g.api),
                (n, all) if n == all => g.api.to_owned(),
                _ => names.join(", "),
            };
            out.push((label, t.clone()));
        }
    }
    out
}

/// Seconds of the arrival schedule (the end of the last phase): the denominator of every whole-run
/// rate, the same for every API under the same profile however long each one took to drain.
/// `None` for the closed model, which has no schedule.
pub fn schedule_s(run: &RunResults) -> Option<f64> {
    let p = &run.config.profile;
    let end = p
        .phases
        .iter()
        .map(|ph| ph.start_s + ph.duration_s)
        .fold(0.0, f64::max);
    (p.model == "open" && end > 0.0).then_some(end)
}

/// The plateau (the `constant` phase) as whole seconds `[from, to)` of the per-second series.
pub fn plateau_seconds(run: &RunResults) -> Option<(u32, u32)> {
    let p = run
        .config
        .profile
        .phases
        .iter()
        .find(|p| p.name == "constant")?;
    let from = p.start_s.ceil() as u32;
    Some((from, ((p.start_s + p.duration_s).floor() as u32).max(from)))
}

/// A CPU limit in words: `1 CPU core`, `1.5 CPU cores`, `0.125 CPU`.
pub fn cores(n: f64) -> String {
    numbers::cpus(n)
}

/// A memory limit in words, in whole MiB: `1024 MiB`.
pub fn memory(bytes: u64) -> String {
    format!("{:.0} MiB", bytes as f64 / numbers::MIB)
}

/// An API's CPU and memory limits in words (its pod as run, [`Limits::pod`]): `0.125 CPU (period
/// 10 ms), 128 MiB`, `1 CPU core, 1024 MiB`, `no CPU limit, no memory limit`.
pub fn cpu_and_memory(l: &Limits) -> String {
    l.pod()
}

/// A short human name for one run: `blocking-api`, or `blocking-api #2` when there are repeats.
pub fn run_name(run: &RunResults) -> String {
    if run.repeats > 1 {
        format!("{} #{}", run.api, run.repeat_index + 1)
    } else {
        run.api.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab_results::numbers::MIB;

    #[test]
    fn spread_of_repeats() {
        let s = Spread::of([3.0, 1.0, f64::NAN, 2.0]).expect("values");
        assert_eq!((s.min, s.median, s.max, s.n), (1.0, 2.0, 3.0, 3));
        assert!(s.varies());
        let even = Spread::of([1.0, 2.0, 4.0, 10.0]).expect("values");
        assert_eq!(even.median, 3.0);
        assert!(Spread::of([f64::INFINITY]).is_none());
        assert!(!Spread::of([5.0]).expect("one").varies());
    }

    #[test]
    fn formats() {
        assert_eq!(fmt(1_234_567.0, Unit::Count), "1,234,567");
        assert_eq!(fmt(999.0, Unit::Count), "999");
        assert_eq!(fmt(850.4, Unit::Millis), "850 ms");
        assert_eq!(fmt(2310.0, Unit::Millis), "2.31 s");
        assert_eq!(fmt(3.25, Unit::Millis), "3.2 ms");
        assert_eq!(fmt(42.0 * MIB, Unit::Bytes), "42.0 MiB");
        assert_eq!(fmt(f64::NAN, Unit::Rate), "–");
        assert_eq!(fmt(0.5, Unit::Decimal("s")), "0.50 s");
    }
}
