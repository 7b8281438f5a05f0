//! # lab-report — report.html, summary.md and the scenario pages, from results only
//!
//! Part of the lab (`loadtest/report`). Comparison reports from load-test results: a self-contained `report.html` (inline CSS and SVG
//! charts, nothing fetched from anywhere, readable offline and on paper) and a `summary.md` to
//! paste into a pull request.
//!
//! Input is any number of [`RunResults`] (one per API per repeat). Runs are grouped by API; with
//! repeats, every figure shows the median and the min – max spread. The report only reads the
//! results: each number in it is one the generator recorded, and the page says how it was measured.
//!
//! The page opens with the answer: a verdict generated from the results (`verdict`, `causes`),
//! the trust strip (`trust`), and the rate and latency charts; the detail follows.
//!
//! The page is written with [`maud`] templates, which escape every value set into them; the
//! charts are SVG drawn by our own `svg` module (every string from the results in them escaped
//! by the same escaper) and set into the page whole.
//!
//! ## Why the charts are drawn by hand, not by plotters
//!
//! Weighed against plotters 0.3.7 and its SVG backend (docs/lab.md, "The charts", says what it
//! lacks, checked against its source): its backend draws no dashed line (each dash is an
//! element of its own), places text by font metrics it needs
//! system fonts for, and has none of the markers, reference lines, point labels and shared time
//! axis that the report's charts are for. So `svg` stays (no dependency); plotters would be worth
//! it for chart kinds we do not draw (histograms, heat maps, bitmaps). Every chart `svg` writes is
//! a standalone SVG (namespace, look in attributes, white ground), opened as an image by resvg in
//! `tests/charts_render.rs`.
//!
//! It depends on the results schema ([`lab_results`]) and nothing of the generator: no goose,
//! reqwest or sqlx, so it builds and tests on its own, and re-renders old results files.
//!
//! Layout of this crate: `model` (grouping, spreads, number formats), `tables` (the summary
//! table, its rates and notes), `drain` (late answers and each API's drain), `littles` (Little's law), `facts`, `verdict` + `causes`
//! (who kept up, and why), `conditions` (what the result holds under), `slo` + `slo_verdict` (the objective and who met it), `trust` (the strip), `rich` (sentences laid out as HTML or Markdown),
//! `charts`, `chart_specs`, `chart_errors` + `svg` (charts), `fairness` (settings that differ), `html`,
//! `sections` and `method` (the page), `money` (the money line of each run), `shards` (the generators of a merged run), `goose` (goose's
//! own reports beside ours), `markdown` (the PR summary), `markdown_table` (the lab's one Markdown
//! table writer: the report's, the scenarios' and the bench's tables), `thread_roles` (CPU per
//! order by thread role: its tables and stacked bars, for the report, the bench and capacity), `scenario` (the scenarios'
//! pages, `summary.md` and `scenario.html`, and their charts, from what the scenario worked out).

mod causes;
mod chart_errors;
mod chart_specs;
mod charts;
mod conditions;
mod distribution;
mod drain;
mod facts;
mod fairness;
pub mod goose;
mod html;
mod littles;
mod markdown;
pub mod markdown_table;
mod method;
mod model;
mod money;
mod rich;
pub mod scenario;
mod sections;
mod shards;
pub mod slo;
mod slo_verdict;
pub mod svg;

pub use html::CSS;
mod tables;
pub mod thread_roles;
mod throttling;
mod trust;
mod trust_item;
mod verdict;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use lab_results::RunResults;
use slo::Slo;

/// Where [`write_report`] put its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportPaths {
    pub html: PathBuf,
    pub markdown: PathBuf,
}

/// Writes `report.html` and `summary.md` into `out_dir` (created if missing); returns their paths
/// and the summary's text (with goose's counts, read beside the page), for the terminal. The
/// verdict judges the runs by the default objective (see [`slo`]).
pub fn write_report(runs: &[RunResults], out_dir: &Path) -> Result<(ReportPaths, String)> {
    write_report_with_slo(runs, out_dir, None)
}

/// [`write_report`], judging the runs by `slo` instead of the default objective when given.
pub fn write_report_with_slo(
    runs: &[RunResults],
    out_dir: &Path,
    slo: Option<&Slo>,
) -> Result<(ReportPaths, String)> {
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let paths = ReportPaths {
        html: out_dir.join("report.html"),
        markdown: out_dir.join("summary.md"),
    };
    // goose's reports are linked (and their counts read) when they sit beside the page.
    let goose = goose::read(runs, out_dir);
    std::fs::write(&paths.html, html::render(runs, &goose, slo))
        .with_context(|| format!("writing {}", paths.html.display()))?;
    let summary = markdown::render(runs, &goose, slo);
    std::fs::write(&paths.markdown, &summary)
        .with_context(|| format!("writing {}", paths.markdown.display()))?;
    Ok((paths, summary))
}

/// The HTML report as one self-contained page (goose's reports named, not read).
pub fn render_html(runs: &[RunResults]) -> String {
    html::render(runs, &[], None)
}

/// The verdict, the trust strip, the summary table (plateau and whole run) and the Little's-law
/// line as Markdown.
pub fn render_markdown(runs: &[RunResults]) -> String {
    markdown::render(runs, &[], None)
}

/// One line per API that missed `slo` (the default objective when `None`), for `--fail-on-slo`;
/// empty when every API met it or there is no objective.
pub fn slo_missed(runs: &[RunResults], slo: Option<&Slo>) -> Vec<String> {
    let groups = model::group(runs);
    Slo::given_or_default(slo, &groups)
        .map(|slo| slo_verdict::missed(&slo, &groups, facts::span(&groups)))
        .unwrap_or_default()
}
