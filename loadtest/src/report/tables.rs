//! The side-by-side summary table: one row per figure, one column per API, for the plateau
//! (constant phase) and for the whole run. Built once here; `html` and `markdown` only lay it out.

use crate::results::{RunResults, Summary};

use super::model::{ApiRuns, Spread, Unit, fmt};

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

/// A figure of a [`Summary`]; `None` = not measured.
type Get = Box<dyn Fn(&Summary) -> Option<f64>>;
/// A row definition: name, unit, how to get it.
type Def = (String, Unit, Get);

fn f(name: &str, unit: Unit, get: impl Fn(&Summary) -> Option<f64> + 'static) -> Def {
    (name.to_owned(), unit, Box::new(get))
}

/// The figures of the table, in groups; one `errors: <kind>` row per error kind.
fn figures(kinds: &[String]) -> Vec<(&'static str, Vec<Def>)> {
    let count = |v: u64| Some(v as f64);
    let mut requests = vec![
        f("offered", Unit::Count, move |s| count(s.offered)),
        f("sent", Unit::Count, move |s| count(s.sent)),
        f("not sent (in-flight cap)", Unit::Count, move |s| {
            count(s.not_sent)
        }),
        f("completed", Unit::Count, move |s| count(s.completed)),
        f("2xx share", Unit::Percent, |s| {
            (s.completed > 0).then(|| 100.0 * (s.ok + s.replayed) as f64 / s.completed as f64)
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
    let latency = vec![
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
    ];
    let rates = vec![
        f("offered rate", Unit::Rate, |s| Some(s.offered_rps)),
        f("throughput (completed)", Unit::Rate, |s| {
            Some(s.throughput_rps)
        }),
        f("orders per second (201)", Unit::Rate, |s| {
            Some(s.ok_throughput_rps)
        }),
    ];
    let resources = vec![
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
    ];
    let generator = vec![
        f("generator lateness p99", Unit::Millis, |s| {
            Some(s.lateness_ms.p99)
        }),
        f("generator lateness max", Unit::Millis, |s| {
            Some(s.lateness_ms.max)
        }),
    ];
    vec![
        ("Requests", requests),
        ("Latency, from intended send time", latency),
        ("Rates", rates),
        ("API process", resources),
        ("Generator", generator),
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
            cells: groups
                .iter()
                .map(|g| g.spread(|r| span.of(r).and_then(&get)))
                .collect(),
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

/// The Little's-law line for each run that has one: `(api, threads, critical path ms, bound,
/// measured plateau orders/s)` as spreads over repeats.
pub struct LittleRow<'a> {
    pub api: &'a str,
    pub threads: Spread,
    pub critical_path_ms: Spread,
    pub bound_rps: Spread,
    pub measured_rps: Option<Spread>,
    /// The first run's note (a slowdown during the plateau), as plain text.
    pub note: Option<&'a str>,
}

pub fn littles_law<'a>(groups: &[ApiRuns<'a>]) -> Vec<LittleRow<'a>> {
    groups
        .iter()
        .filter_map(|g| {
            let ll = |f: fn(&crate::results::LittlesLaw) -> Option<f64>| {
                g.spread(|r| r.littles_law.as_ref().and_then(f))
            };
            Some(LittleRow {
                api: g.api,
                threads: ll(|l| Some(l.threads as f64))?,
                critical_path_ms: ll(|l| Some(l.critical_path_ms))?,
                bound_rps: ll(|l| Some(l.bound_rps))?,
                measured_rps: ll(|l| l.measured_plateau_rps),
                note: g
                    .runs
                    .iter()
                    .find_map(|r| r.littles_law.as_ref()?.note.as_deref()),
            })
        })
        .collect()
}

/// The one-sentence Little's-law statement used by both the page and `summary.md`; `strong`
/// marks up the two numbers to compare (`**x**` in Markdown, `<strong>` in HTML).
pub fn littles_law_sentence(row: &LittleRow<'_>, strong: fn(&str) -> String) -> String {
    let measured = match &row.measured_rps {
        Some(m) => format!(
            "measured plateau: {} ({} of the bound)",
            strong(&fmt(m.median, Unit::Rate).replace("req/s", "orders/s")),
            fmt(100.0 * m.median / row.bound_rps.median, Unit::Percent)
        ),
        None => "no plateau was measured".to_owned(),
    };
    let note = row.note.map(|n| format!(" Note: {n}.")).unwrap_or_default();
    format!(
        "{}: {} threads ÷ {} critical path = at most {}; {measured}.{note}",
        row.api,
        fmt(row.threads.median, Unit::Count),
        fmt(row.critical_path_ms.median, Unit::Millis),
        strong(&fmt(row.bound_rps.median, Unit::Rate).replace("req/s", "orders/s")),
    )
}
