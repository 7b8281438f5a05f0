//! The charts over time: one [`Figure`] per question a reader asks (did the API keep up? how slow
//! did it get? what ran out?), every API overlaid in its own colour, every repeat drawn (the first
//! one bold, the others faint), phase boundaries and the timeline's marks drawn.

use lab_results::RunResults;
use lab_results::settings::RecordedSettings;

use super::chart_specs::{Line, NEUTRAL, SPECS, figure};
use super::model::{ApiRuns, Unit, cores, fmt};
use super::svg::{Figure, Marker, MarkerKind, RefLine, Series};

/// The charts shown right after the verdict, in this order; the rest follow the tables.
pub const KEY: [&str; 3] = ["rate", "latency", "latency-distribution"];

/// One series per run of every API for `line`, named `<api> <what>`; a [`Line::once`] figure
/// that every run shares (the schedule) is one neutral series named `<what>`.
fn lines(groups: &[ApiRuns<'_>], line: &Line) -> Vec<Series> {
    let points = |run: &RunResults| -> Vec<(f64, f64)> {
        run.seconds
            .iter()
            .map(|s| (f64::from(s.t), (line.value)(s).unwrap_or(f64::NAN)))
            .collect()
    };
    let mut out = Vec::new();
    if line.once {
        let mut all = groups.iter().flat_map(|g| g.runs.iter().map(|r| points(r)));
        if let Some(first) = all.next() {
            let mut rest = all.peekable();
            if rest.peek().is_none() || rest.all(|p| same_values(&p, &first)) {
                return vec![Series::new(line.what, first, NEUTRAL, line.dash)];
            }
        }
    }
    for g in groups {
        for (i, run) in g.runs.iter().enumerate() {
            let points = points(run);
            // A gauge this API does not have (e.g. blocking pool on the reactive API) is no line at all.
            if points.iter().all(|p| p.1.is_nan()) {
                continue;
            }
            let name = if line.what.is_empty() {
                g.api.to_owned()
            } else {
                format!("{} {}", g.api, line.what)
            };
            let mut s = Series::new(name, points, g.colour, line.dash);
            s.secondary = i > 0;
            out.push(s);
        }
    }
    out
}

/// The same values at the same times, where both series have them (one drains longer: its
/// extra seconds offer nothing).
fn same_values(a: &[(f64, f64)], b: &[(f64, f64)]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
        && a[n..]
            .iter()
            .chain(&b[n..])
            .all(|p| p.1 == 0.0 || p.1.is_nan())
}

/// Phase boundaries (from the profiles) and every other timeline mark (from the runs), without repeats.
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
        // Phase changes are also on the timeline ("<phase> a→b/s"); the profile already placed
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
            .timeline
            .iter()
            .filter(|e| e.t > 0.0 && !is_phase(&e.label))
        {
            add(e.t, e.label.clone(), MarkerKind::TimelineMark);
        }
    }
    out.sort_by(|a, b| a.x.total_cmp(&b.x));
    out
}

/// Every chart of the report, in reading order. The charts over time share one x domain (from
/// the start to the last second of the longest run), so that stacked on the page, a time lands at
/// the same x in each.
pub fn figures(groups: &[ApiRuns<'_>]) -> Vec<Figure> {
    let all: Vec<&RunResults> = groups.iter().flat_map(|g| g.runs.iter().copied()).collect();
    let m = markers(&all);
    let x_end = all
        .iter()
        .filter_map(|r| r.seconds.last().map(|s| f64::from(s.t)))
        .chain(m.iter().map(|m| m.x))
        .fold(0.0, f64::max);
    let over_time = |mut f: Figure| {
        f.chart.x_range = Some((0.0, x_end.max(1.0)));
        f
    };
    let mut out: Vec<Figure> = Vec::new();
    for spec in SPECS {
        let apis: Vec<Option<&ApiRuns<'_>>> = if spec.per_api {
            groups.iter().map(Some).collect()
        } else {
            vec![None]
        };
        for api in apis {
            let (id, title, series) = match api {
                Some(g) => (
                    format!("{}-{}", spec.id, g.api),
                    format!("{} — {}", spec.title, g.api),
                    spec.lines
                        .iter()
                        .flat_map(|line| lines(std::slice::from_ref(g), line))
                        .map(|mut s| {
                            s.name = s.name.trim_start_matches(g.api).trim().to_owned();
                            s
                        })
                        .collect(),
                ),
                None => (
                    spec.id.to_owned(),
                    spec.title.to_owned(),
                    spec.lines
                        .iter()
                        .flat_map(|line| lines(groups, line))
                        .collect(),
                ),
            };
            let mut f = figure(
                &id,
                &title,
                spec.caption,
                spec.y_label,
                spec.y_format,
                series,
                &m,
            );
            f.chart.y_scale = spec.y_scale;
            f.chart.ref_lines = ref_lines(spec.id, groups);
            out.push(over_time(f));
        }
    }
    out.insert(2, super::distribution::figure(groups));
    let errors = super::chart_errors::figures(groups, &m)
        .into_iter()
        .map(over_time);
    out.splice(3..3, errors);
    for f in &mut out {
        merge_coinciding(&mut f.chart.series);
    }
    out
}

/// Lines with the same values at every second would be drawn one exactly under the other, and
/// the one below would look missing: they are drawn once, named for both (`reactive-api
/// generator = reactive-api API gauge`).
fn merge_coinciding(series: &mut Vec<Series>) {
    let mut i = 0;
    while i < series.len() {
        let mut j = i + 1;
        while j < series.len() {
            let drawn = |s: &Series| -> Vec<(f64, f64)> {
                s.points
                    .iter()
                    .copied()
                    .filter(|p| p.1.is_finite())
                    .collect()
            };
            let same = series[i].secondary == series[j].secondary
                && drawn(&series[i]) == drawn(&series[j]);
            if same {
                let other = series.remove(j);
                series[i].name = format!("{} = {}", series[i].name, other.name);
            } else {
                j += 1;
            }
        }
        i += 1;
    }
}

/// A setting's distinct values over every run that has it, as numbers.
fn setting(groups: &[ApiRuns<'_>], of: fn(&RecordedSettings) -> Option<u64>) -> Vec<f64> {
    let mut v: Vec<f64> = groups
        .iter()
        .flat_map(|g| &g.runs)
        .filter_map(|r| of(&r.config.settings()).map(|n| n as f64))
        .collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// Horizontal reference lines: the Little's-law bound, the CPU limit, the machine's cores, the
/// blocking pool's threads and the database pool's connections.
fn ref_lines(id: &str, groups: &[ApiRuns<'_>]) -> Vec<RefLine> {
    let settings = |of: fn(&RecordedSettings) -> Option<u64>, label: &str| -> Vec<RefLine> {
        setting(groups, of)
            .into_iter()
            .map(|y| RefLine {
                y,
                label: format!("{label} = {y}"),
            })
            .collect()
    };
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
        "harness-cpu" => groups
            .iter()
            .find_map(|g| Some(g.first()?.environment.cores))
            .filter(|&c| c > 0)
            .map(|c| RefLine {
                y: f64::from(c) * 100.0,
                label: format!("machine: {c} cores × 100 %"),
            })
            .into_iter()
            .collect(),
        "threads" | "blocking-pool" => settings(|s| s.blocking_threads, "BLOCKING_THREADS"),
        "db-pool" => settings(|s| s.db_pool_size, "DB_POOL_SIZE"),
        _ => Vec::new(),
    }
}
