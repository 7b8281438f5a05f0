//! The side-by-side summary table: one row per figure, one column per API, for the plateau
//! (constant phase) and for the whole run. Built once here; `html` and `markdown` only lay it out.

use lab_results::{RunResults, Summary};

use super::drain::{answering_s, drain, open_at_plateau_end, plateau_fate};
use super::model::{ApiRuns, Spread, Unit, fmt, plateau_seconds, schedule_s};
use super::throttling::throttled;

/// Which span of the run a summary covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    Plateau,
    Whole,
}

impl Span {
    pub fn title(self) -> &'static str {
        match self {
            Span::Plateau => "Plateau (constant phase)",
            Span::Whole => "Whole run",
        }
    }

    pub fn of(self, run: &RunResults) -> Option<&Summary> {
        match self {
            Span::Plateau => run.plateau.as_ref(),
            Span::Whole => Some(&run.summary),
        }
    }
}

/// One figure for every API: `cells[i]` belongs to the i-th API.
#[derive(Debug, Clone)]
pub struct Row {
    /// The group heading the row belongs to ("Requests", "Latency", …).
    pub group: &'static str,
    pub metric: String,
    pub unit: Unit,
    pub cells: Vec<Option<Spread>>,
}

/// A figure of one run over a span; `None` = not measured.
type Get = Box<dyn Fn(&RunResults, Span) -> Option<f64>>;
/// A row definition: name, unit, how to get it.
type Def = (String, Unit, Get);

/// A row read from the span's [`Summary`].
fn f(name: &str, unit: Unit, get: impl Fn(&Summary) -> Option<f64> + 'static) -> Def {
    (
        name.to_owned(),
        unit,
        Box::new(move |run, span| span.of(run).and_then(&get)),
    )
}

/// A row read from the whole run (the per-second series), for the spans it applies to.
fn run_row(name: &str, unit: Unit, get: fn(&RunResults, Span) -> Option<f64>) -> Def {
    (name.to_owned(), unit, Box::new(get))
}

/// The API's cgroup CPU throttling over the span (see [`throttled`]).
fn throttled_over(run: &RunResults, span: Span) -> Option<(f64, f64)> {
    let window = match span {
        Span::Whole => None,
        Span::Plateau => Some(plateau_seconds(run)?),
    };
    throttled(&run.seconds, window)
}

/// A rate row, per second of the span's schedule (see [`rates`]).
fn rate(name: &str, get: fn(&Rates) -> f64) -> Def {
    (
        name.to_owned(),
        Unit::Rate,
        Box::new(move |run, span| rates(run, span).map(|r| get(&r))),
    )
}

/// A span's rates. Offered: per second of the span's *schedule* — the plateau's own seconds, or
/// for the whole run the seconds from the first arrival to the last scheduled one, the same for
/// every API. Answers (completed, orders): the plateau's answers within its own seconds; for the
/// whole run, every answer per second from the first arrival to the API's *last answer* (see
/// `drain`), so that an API which answered late, during a long drain, does not read as if it had
/// answered at the offered rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub offered: f64,
    pub completed: f64,
    /// Fresh 201s per second.
    pub orders: f64,
}

pub fn rates(run: &RunResults, span: Span) -> Option<Rates> {
    let s = span.of(run)?;
    match (span, schedule_s(run), answering_s(run)) {
        (Span::Whole, Some(schedule), Some(answering)) => Some(Rates {
            offered: s.offered as f64 / schedule,
            completed: s.completed as f64 / answering,
            orders: s.ok as f64 / answering,
        }),
        // The plateau's summary is already per second of the plateau; a closed run has no
        // schedule, so its rates are per second of the run.
        _ => Some(Rates {
            offered: s.offered_rps,
            completed: s.throughput_rps,
            orders: s.ok_throughput_rps,
        }),
    }
}

/// The notes under a summary table: what is counted, and what the rates are divided by.
pub fn notes(groups: &[ApiRuns<'_>]) -> Vec<String> {
    let Some(run) = groups.first().and_then(|g| g.first()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if run.plateau.is_some() {
        out.push(
            "Every share is of the arrivals. The plateau counts its own arrivals wherever their \
             answers came: its answers, errors and percentiles include the answers that came after \
             it ended (late, still open at its end; their latency from the intended send time); \
             its rates count the answers within its seconds. Late and unanswered are counted per \
             arrival by the generator (— in a results file written before it recorded them)."
                .to_owned(),
        );
    }
    if let Some(whole) = schedule_s(run) {
        out.push(format!(
            "Whole run: the offered rate is per second of the schedule ({} s, the same for every \
             API); answer rates are per second from the first arrival to the API's own last \
             answer, its drain included.",
            fmt(whole, Unit::Count)
        ));
    }
    out
}

/// The figures of the table, in groups; one `errors: <kind>` row per error kind.
fn figures(kinds: &[String]) -> Vec<(&'static str, Vec<Def>)> {
    vec![
        ("Requests", requests(kinds)),
        ("Latency, from intended send time", latency()),
        ("After the last arrival", drain_figures()),
        ("Rates, per second (see the note above)", rates_figures()),
        ("API process", resources()),
        ("Generator", generator()),
    ]
}

/// A count as a figure.
fn count(v: u64) -> Option<f64> {
    Some(v as f64)
}

/// Arrivals and answers, an `errors: <kind>` row per error kind.
fn requests(kinds: &[String]) -> Vec<Def> {
    let mut requests = vec![
        f("arrivals", Unit::Count, move |s| count(s.offered)),
        f("sent", Unit::Count, move |s| count(s.sent)),
        f("not sent (in-flight cap)", Unit::Count, move |s| {
            count(s.not_sent)
        }),
        f("answered (late answers included)", Unit::Count, move |s| {
            count(s.completed)
        }),
        run_row(
            "open when the plateau ended (answered late or never)",
            Unit::Count,
            |r, span| (span == Span::Plateau).then(|| open_at_plateau_end(r).map(|n| n as f64))?,
        ),
        run_row(
            "of those, answered late (after the plateau)",
            Unit::Count,
            |r, span| {
                (span == Span::Plateau).then(|| plateau_fate(r).map(|f| f.answered_late as f64))?
            },
        ),
        run_row(
            "of those, unanswered at the run's end",
            Unit::Count,
            |r, span| {
                (span == Span::Plateau).then(|| plateau_fate(r).map(|f| f.unanswered as f64))?
            },
        ),
        f("never answered", Unit::Count, move |s| {
            count(s.offered.saturating_sub(s.completed))
        }),
        f("2xx, share of arrivals", Unit::Percent, |s| {
            (s.offered > 0).then(|| 100.0 * (s.ok + s.replayed) as f64 / s.offered as f64)
        }),
        f("orders created (201)", Unit::Count, move |s| count(s.ok)),
        f("idempotent replays", Unit::Count, move |s| {
            count(s.replayed)
        }),
        f("errors", Unit::Count, move |s| count(s.errors)),
    ];
    for kind in kinds {
        let k = kind.clone();
        requests.push(f(&format!("errors: {kind}"), Unit::Count, move |s| {
            count(s.errors_by_kind.get(&k).copied().unwrap_or(0))
        }));
    }
    requests
}

/// Latency's percentiles, from the intended send time.
fn latency() -> Vec<Def> {
    vec![
        f("latency p50", Unit::Millis, |s| Some(s.latency_ms.p50)),
        f("latency p90", Unit::Millis, |s| Some(s.latency_ms.p90)),
        f("latency p99", Unit::Millis, |s| Some(s.latency_ms.p99)),
        f("latency p99.9", Unit::Millis, |s| Some(s.latency_ms.p999)),
        f("latency max", Unit::Millis, |s| Some(s.latency_ms.max)),
        f("latency mean", Unit::Millis, |s| Some(s.latency_ms.mean)),
        f("latency p99, 201s only", Unit::Millis, |s| {
            s.ok_latency_ms.map(|l| l.p99)
        }),
        f("latency p99, overloaded 503s only", Unit::Millis, |s| {
            s.overloaded_latency_ms.map(|l| l.p99)
        }),
    ]
}

/// The drain after the last arrival (the whole run only).
fn drain_figures() -> Vec<Def> {
    vec![
        run_row(
            "drain: last answer − last arrival",
            Unit::Millis,
            |r, span| (span == Span::Whole).then(|| drain(r).map(|d| 1000.0 * d.seconds))?,
        ),
        run_row("answers during the drain", Unit::Count, |r, span| {
            (span == Span::Whole).then(|| drain(r).map(|d| d.answers as f64))?
        }),
    ]
}

/// The rates per second.
fn rates_figures() -> Vec<Def> {
    vec![
        rate("offered rate", |r| r.offered),
        rate("throughput (completed)", |r| r.completed),
        rate("orders per second (201)", |r| r.orders),
    ]
}

/// The API process's CPU, memory, threads, files and throttling.
fn resources() -> Vec<Def> {
    vec![
        f("API CPU-seconds", Unit::Decimal("s"), |s| s.api_cpu_seconds),
        f("CPU-seconds per 1,000 orders", Unit::Decimal("s"), |s| {
            s.cpu_seconds_per_1000_ok
        }),
        f("peak RSS", Unit::Bytes, |s| {
            s.peak_rss_bytes.map(|b| b as f64)
        }),
        f("peak threads", Unit::Count, |s| {
            s.peak_threads.map(|t| t as f64)
        }),
        f("peak open files", Unit::Count, |s| {
            s.peak_fds.map(|t| t as f64)
        }),
        run_row(
            "CPU throttled periods (cgroup CFS)",
            Unit::Count,
            |r, span| throttled_over(r, span).map(|t| t.0),
        ),
        run_row(
            "CPU throttled time (cgroup CFS)",
            Unit::Decimal("s"),
            |r, span| throttled_over(r, span).map(|t| t.1),
        ),
    ]
}

/// How late the generator sent.
fn generator() -> Vec<Def> {
    vec![
        f("generator lateness p99", Unit::Millis, |s| {
            Some(s.lateness_ms.p99)
        }),
        f("generator lateness max", Unit::Millis, |s| {
            Some(s.lateness_ms.max)
        }),
    ]
}

/// Every error kind seen in any run, sorted, so all tables list the same rows.
pub fn error_kinds(groups: &[ApiRuns<'_>]) -> Vec<String> {
    let mut kinds: Vec<String> = groups
        .iter()
        .flat_map(|g| &g.runs)
        .flat_map(|r| {
            r.summary
                .errors_by_kind
                .keys()
                .chain(r.plateau.iter().flat_map(|p| p.errors_by_kind.keys()))
        })
        .cloned()
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// The summary table: rows for each span that some run has (the plateau is missing for profiles
/// without a constant phase). Every span lists the same figures, in the same order; a figure no
/// run measured in any span (e.g. 201-only latency from an older generator) is left out.
pub fn summary(groups: &[ApiRuns<'_>]) -> Vec<(Span, Vec<Row>)> {
    let runs = || groups.iter().flat_map(|g| &g.runs);
    let mut spans: Vec<(Span, Vec<Row>)> = [Span::Plateau, Span::Whole]
        .into_iter()
        .filter(|span| runs().any(|r| span.of(r).is_some()))
        .map(|span| (span, rows(groups, span)))
        .collect();
    let Some(n) = spans.first().map(|(_, rows)| rows.len()) else {
        return spans;
    };
    let keep: Vec<bool> = (0..n)
        .map(|i| {
            spans
                .iter()
                .any(|(_, rows)| rows[i].cells.iter().any(Option::is_some))
        })
        .collect();
    for (_, rows) in &mut spans {
        let mut k = keep.iter();
        rows.retain(|_| *k.next().unwrap_or(&true));
    }
    spans
}

fn rows(groups: &[ApiRuns<'_>], span: Span) -> Vec<Row> {
    figures(&error_kinds(groups))
        .into_iter()
        .flat_map(|(group, figs)| figs.into_iter().map(move |fig| (group, fig)))
        .map(|(group, (metric, unit, get))| Row {
            group,
            metric,
            unit,
            cells: groups.iter().map(|g| g.spread(|r| get(r, span))).collect(),
        })
        .collect()
}

/// A cell as text: the median (the only value without repeats) and, when repeats disagree, the
/// `min – max` range.
pub fn cell_text(cell: Option<&Spread>, unit: Unit) -> (String, Option<String>) {
    match cell {
        None => ("–".to_owned(), None),
        Some(s) => {
            let (min, max) = (fmt(s.min, unit), fmt(s.max, unit));
            // Repeats that differ below the displayed precision show no range.
            let range = (s.varies() && min != max).then(|| format!("{min} – {max}"));
            (fmt(s.median, unit), range)
        }
    }
}
