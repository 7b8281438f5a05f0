//! goose's own reports of each run, linked from the page, with goose's request counts beside
//! ours: a second, independent count of the same requests (the scheduler hands every finished
//! request to goose too, see `loadtest/README.md`). The counts are read from goose's JSON report
//! when the page is written next to it; the page itself only links to the files, by relative
//! name, so it stays self-contained and offline.

use std::fmt::Write as _;
use std::path::Path;

use maud::{Markup, html};
use serde::Deserialize;

use lab_results::RunResults;

use super::model::{ApiRuns, Unit, fmt, run_name};

/// What was found of one run's goose reports.
#[derive(Debug, Clone, PartialEq)]
pub struct GooseRun {
    /// [`run_name`] of the run.
    pub run: String,
    /// Each report file named in the results, and whether it is beside the page.
    pub files: Vec<(String, bool)>,
    /// goose's counts, when its JSON report was read.
    pub counts: Option<GooseCounts>,
}

/// goose's request metrics: `/orders` (finished requests) and `/orders (not sent)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GooseCounts {
    pub requests: u64,
    pub failures: u64,
    pub not_sent: u64,
}

#[derive(Deserialize)]
struct Report {
    raw_request_metrics: Vec<RequestMetric>,
}

#[derive(Deserialize)]
struct RequestMetric {
    name: String,
    number_of_requests: u64,
    number_of_failures: u64,
}

/// Parses goose's JSON report (goose 0.19's `raw_request_metrics`).
pub fn parse(json: &str) -> serde_json::Result<GooseCounts> {
    let report: Report = serde_json::from_str(json)?;
    let mut c = GooseCounts::default();
    for m in report.raw_request_metrics {
        match m.name.as_str() {
            "/orders" => (c.requests, c.failures) = (m.number_of_requests, m.number_of_failures),
            "/orders (not sent)" => c.not_sent = m.number_of_requests,
            _ => {}
        }
    }
    Ok(c)
}

/// Looks for each run's goose reports in `dir` (where the page is written) and reads the counts.
pub fn read(runs: &[RunResults], dir: &Path) -> Vec<GooseRun> {
    runs.iter()
        .map(|r| {
            let files: Vec<(String, bool)> = r
                .goose_reports
                .iter()
                .map(|f| (f.clone(), dir.join(f).is_file()))
                .collect();
            let counts = files
                .iter()
                .filter(|(f, here)| *here && f.ends_with(".json"))
                .find_map(|(f, _)| parse(&std::fs::read_to_string(dir.join(f)).ok()?).ok());
            GooseRun {
                run: run_name(r),
                files,
                counts,
            }
        })
        .collect()
}

/// Ours beside goose's: `(ours, goose's, same?)` for requests, failures and not sent.
fn compare(run: &RunResults, g: &GooseCounts) -> [(&'static str, u64, u64); 3] {
    let s = &run.summary;
    [
        ("answered", s.completed, g.requests),
        ("failed", s.errors, g.failures),
        ("not sent", s.not_sent, g.not_sent),
    ]
}

/// One sentence per run: `goose 18,000 answered / 10,673 failed / 0 not sent — ours the same`.
fn sentence(run: &RunResults, found: Option<&GooseRun>) -> String {
    let Some(c) = found.and_then(|f| f.counts) else {
        return "goose's counts not read (its JSON report is not beside this page)".to_owned();
    };
    let rows = compare(run, &c);
    let goose: Vec<String> = rows
        .iter()
        .map(|(what, _, g)| format!("{} {what}", fmt(*g as f64, Unit::Count)))
        .collect();
    let differ: Vec<String> = rows
        .iter()
        .filter(|(_, ours, g)| ours != g)
        .map(|(what, ours, _)| format!("{what} {}", fmt(*ours as f64, Unit::Count)))
        .collect();
    let ours = if differ.is_empty() {
        "ours the same".to_owned()
    } else {
        format!("ours DIFFER: {}", differ.join(", "))
    };
    format!("goose counted {} — {ours}", goose.join(", "))
}

fn find<'a>(goose: &'a [GooseRun], run: &RunResults) -> Option<&'a GooseRun> {
    let name = run_name(run);
    goose.iter().find(|g| g.run == name)
}

/// The page's section ("not measured" when no run names a goose report: the contents link here).
pub fn html(groups: &[ApiRuns<'_>], goose: &[GooseRun]) -> Markup {
    let runs: Vec<&RunResults> = groups.iter().flat_map(|g| g.runs.iter().copied()).collect();
    if runs.iter().all(|r| r.goose_reports.is_empty()) {
        return html! { section id="goose" {
            h2 { "goose's own reports" }
            p { "Not measured: no run wrote a goose report to compare our counts with." }
        } };
    }
    html! { section id="goose" {
        h2 { "goose's own reports" }
        p class="note" {
            "goose counts the same requests independently (latency from the intended send time \
             too). Its figures are per run; its \"users\" is 1 for an open profile, the one \
             scheduler. A difference between its counts and ours would mean a request was recorded \
             in one place and not the other."
        }
        ul class="goose" {
            @for run in &runs {
                @let found = find(goose, run);
                li {
                    strong { (run_name(run)) } ": "
                    @for (i, f) in run.goose_reports.iter().enumerate() {
                        @if i > 0 { " · " }
                        @if found.is_some_and(|g| g.files.iter().any(|(n, h)| n == f && *h)) {
                            a href=(f) { (f) }
                        } @else {
                            code { (f) } " (not beside this page)"
                        }
                    }
                    " · " (sentence(run, found))
                }
            }
        }
    } }
}

/// The `summary.md` lines.
pub fn markdown(s: &mut String, groups: &[ApiRuns<'_>], goose: &[GooseRun]) {
    for run in groups.iter().flat_map(|g| g.runs.iter().copied()) {
        if run.goose_reports.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            "**goose** — {}: {} ({})\n",
            run_name(run),
            sentence(run, find(goose, run)),
            run.goose_reports.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_goose_request_metrics() {
        let json = r#"{"goose_version":"0.19.0","raw_request_metrics":[
            {"method":"POST","name":"/orders","number_of_requests":18000,"number_of_failures":10673},
            {"method":"POST","name":"/orders (not sent)","number_of_requests":5,"number_of_failures":5},
            {"method":"","name":"Aggregated","number_of_requests":18005,"number_of_failures":10678}]}"#;
        let c = parse(json).expect("parses");
        assert_eq!(
            c,
            GooseCounts {
                requests: 18000,
                failures: 10673,
                not_sent: 5
            }
        );
        assert!(parse("{}").is_err());
    }
}
