//! The charts over time: one [`Figure`] per question a reader asks (did the API keep up? how slow
//! did it get? what ran out?), every API overlaid in its own colour, every repeat drawn (the first
//! one bold, the others faint), phase boundaries and injected events marked.

use crate::results::{OUTCOME_CREATED, OUTCOME_REPLAYED, RunResults};

use super::chart_specs::{PerSecond, SPECS};
use super::model::{ApiRuns, Unit, cores, fmt};
use super::svg::{Dash, LineChart, Marker, MarkerKind, PALETTE, RefLine, Series, TickFormat};

/// A chart with the words around it.
pub struct Figure {
    pub id: String,
    pub title: String,
    pub caption: String,
    pub chart: LineChart,
}

/// One series per run of every API for `value`, named `<api> <what>`.
fn lines(groups: &[ApiRuns<'_>], what: &str, dash: Dash, value: PerSecond) -> Vec<Series> {
    let mut out = Vec::new();
    for g in groups {
        for (i, run) in g.runs.iter().enumerate() {
            let points: Vec<(f64, f64)> = run
                .seconds
                .iter()
                .map(|s| (f64::from(s.t), value(s).unwrap_or(f64::NAN)))
                .collect();
            // A gauge this API does not have (e.g. blocking pool on the reactive API) is no line at all.
            if points.iter().all(|p| p.1.is_nan()) {
                continue;
            }
            let name = if what.is_empty() {
                g.api.to_owned()
            } else {
                format!("{} {what}", g.api)
            };
            let mut s = Series::new(name, points, g.colour, dash);
            s.secondary = i > 0;
            out.push(s);
        }
    }
    out
}

/// Phase boundaries (from the profiles) and every other event (from the runs), without repeats.
pub fn markers(runs: &[&RunResults]) -> Vec<Marker> {
    let mut out: Vec<Marker> = Vec::new();
    let mut add = |x: f64, label: String, kind| {
        if !out
            .iter()
            .any(|m| m.label == label && (m.x - x).abs() < 0.5)
        {
            out.push(Marker { x, label, kind });
        }
    };
    for run in runs {
        for p in run.config.profile.phases.iter().filter(|p| p.start_s > 0.0) {
            add(p.start_s, p.name.clone(), MarkerKind::Phase);
        }
        if let Some(last) = run.config.profile.phases.last() {
            add(
                last.start_s + last.duration_s,
                "drain".to_owned(),
                MarkerKind::Phase,
            );
        }
        // Phase changes are also logged as events ("<phase> a→b/s"); the profile already placed
        // them, and the start of measurement is the axis' origin.
        let phases: Vec<&str> = run
            .config
            .profile
            .phases
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        let is_phase = |label: &str| {
            label.starts_with("phase") || phases.iter().any(|n| label.starts_with(&format!("{n} ")))
        };
        for e in run
            .events
            .iter()
            .filter(|e| e.t > 0.0 && !is_phase(&e.label))
        {
            add(e.t, e.label.clone(), MarkerKind::Event);
        }
    }
    out.sort_by(|a, b| a.x.total_cmp(&b.x));
    out
}

fn figure(
    id: &str,
    title: &str,
    caption: &str,
    y_label: &str,
    y_format: TickFormat,
    series: Vec<Series>,
    markers: &[Marker],
) -> Figure {
    let chart = LineChart {
        title: title.to_owned(),
        x_label: "time since the start of the measured part".to_owned(),
        y_label: y_label.to_owned(),
        x_format: TickFormat::Seconds,
        y_format,
        series,
        markers: markers.to_vec(),
        ..LineChart::default()
    };
    Figure {
        id: id.to_owned(),
        title: title.to_owned(),
        caption: caption.to_owned(),
        chart,
    }
}

/// Every chart of the report, in reading order.
pub fn figures(groups: &[ApiRuns<'_>]) -> Vec<Figure> {
    let all: Vec<&RunResults> = groups.iter().flat_map(|g| g.runs.iter().copied()).collect();
    let m = markers(&all);
    let mut out: Vec<Figure> = SPECS
        .iter()
        .map(|spec| {
            let series = spec
                .lines
                .iter()
                .flat_map(|&(what, dash, value)| lines(groups, what, dash, value))
                .collect();
            let mut f = figure(
                spec.id,
                spec.title,
                spec.caption,
                spec.y_label,
                spec.y_format,
                series,
                &m,
            );
            f.chart.y_scale = spec.y_scale;
            f.chart.ref_lines = ref_lines(spec.id, groups);
            f
        })
        .collect();
    let errors = error_figures(groups, &m);
    out.splice(2..2, errors);
    out
}

/// Horizontal reference lines: the Little's-law bound, the CPU limit, the blocking pool size.
fn ref_lines(id: &str, groups: &[ApiRuns<'_>]) -> Vec<RefLine> {
    match id {
        "rate" => groups
            .iter()
            .filter_map(|g| {
                g.first()?
                    .littles_law
                    .as_ref()
                    .map(|ll| (g.api, ll.bound_rps))
            })
            .map(|(api, y)| RefLine {
                y,
                label: format!("Little's-law bound, {api}: {}", fmt(y, Unit::Rate)),
            })
            .collect(),
        "cpu" => groups
            .iter()
            .find_map(|g| {
                Some(&g.first()?.config.limits)
                    .filter(|l| l.limits_enforced)?
                    .cpu_cores
            })
            .map(|c| RefLine {
                y: c * 100.0,
                label: format!("CPU limit ({})", cores(c)),
            })
            .into_iter()
            .collect(),
        "blocking-pool" => groups
            .iter()
            .find_map(|g| g.first()?.littles_law.as_ref().map(|ll| ll.threads))
            .map(|t| RefLine {
                y: t as f64,
                label: format!("BLOCKING_THREADS = {t}"),
            })
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// One errors-per-second chart per API, one line per error kind that API had. A kind keeps its
/// colour and dash in every chart.
fn error_figures(groups: &[ApiRuns<'_>], m: &[Marker]) -> Vec<Figure> {
    let kinds_of = |runs: &[&RunResults]| {
        let mut k: Vec<String> = runs
            .iter()
            .flat_map(|r| &r.seconds)
            .flat_map(|s| s.outcomes.iter().filter(|(_, n)| **n > 0).map(|(k, _)| k))
            .filter(|k| k.as_str() != OUTCOME_CREATED && k.as_str() != OUTCOME_REPLAYED)
            .cloned()
            .collect();
        k.sort_unstable();
        k.dedup();
        k
    };
    let all_kinds = kinds_of(
        &groups
            .iter()
            .flat_map(|g| g.runs.iter().copied())
            .collect::<Vec<_>>(),
    );
    groups
        .iter()
        .map(|g| {
            let mut series = Vec::new();
            for kind in kinds_of(&g.runs) {
                let ki = all_kinds.iter().position(|k| *k == kind).unwrap_or(0);
                for (i, run) in g.runs.iter().enumerate() {
                    let points = run.seconds.iter().map(|s| (f64::from(s.t), s.outcomes.get(&kind).copied().unwrap_or(0) as f64)).collect();
                    let mut s = Series::new(kind.clone(), points, PALETTE[ki % PALETTE.len()], Dash::ALL[ki % Dash::ALL.len()]);
                    s.secondary = i > 0;
                    series.push(s);
                }
            }
            let caption = if series.is_empty() {
                "No request failed."
            } else {
                "Failed requests per second by kind: an error code from the API, http_<status>, or a transport failure (timeout, connect_error, io_error)."
            };
            let title = format!("Errors per second — {}", g.api);
            figure(&format!("errors-{}", g.api), &title, caption, "errors per second", TickFormat::Number, series, m)
        })
        .collect()
}
