//! # lab-report — report.html and summary.md, from results only
//!
//! Comparison reports from load-test results: a self-contained `report.html` (inline CSS and SVG
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
//! Decided by putting plotters 0.3.7's SVG backend (`svg_backend` + `line_series`, no font
//! feature) beside `svg` on the rate chart of the test fixture, both in one page, in headless
//! Chromium at 1400 px and 390 px and in greyscale (the comparison was a throw-away program outside
//! the workspace, so plotters is no dependency). plotters drew the lines correctly, in 0.6 ms, but:
//! its SVG was 49 kB against our 7.7 kB (every dash of a dashed line is its own `<polyline>`, 290
//! of them, plus 180 grid `<line>`s); it carries fixed `width`/`height`, so it does not scale with
//! the page as ours does (`viewBox` + CSS, a minimum width that scrolls on a phone); ticks read
//! `120.0` and `10.0` until a formatter per unit is written (ours: `s`, `ms`, `%`, nines for the
//! latency distribution); without a font feature (`ttf` pulls font-kit and system fonts) text
//! sizes are guessed; and what the report's charts are for is not in it: phase and event markers
//! with staggered labels, reference lines with their labels, names at the lines' ends pushed apart
//! so each line reads without colour, legend swatches with the line's own dash. Each of those would
//! be drawn by hand on top of plotters as custom elements — most of what `svg` is. So `svg` stays
//! (about 850 lines and 200 of tests, no dependency); plotters would be worth it for chart kinds we do
//! not draw (histograms, heat maps, bitmaps).
//!
//! It depends on the results schema ([`lab_results`]) and nothing of the generator: no goose,
//! reqwest or sqlx, so it builds and tests on its own, and re-renders old results files.
//!
//! Layout of this crate: `model` (grouping, spreads, number formats), `tables` (the summary
//! table, rates per second of the schedule), `littles` (Little's law), `facts`, `verdict` + `causes`
//! (who kept up, and why), `trust` (the strip), `rich` (sentences laid out as HTML or Markdown),
//! `charts`, `chart_specs` + `svg` (charts), `fairness` (settings that differ), `html`,
//! `sections` and `method` (the page), `money` (the money line of each run), `shards` (the generators of a merged run), `goose` (goose's
//! own reports beside ours), `markdown` (the PR summary).

mod causes;
mod chart_specs;
mod charts;
mod distribution;
mod facts;
mod fairness;
pub mod goose;
mod html;
mod littles;
mod markdown;
mod method;
mod model;
mod money;
mod rich;
mod sections;
mod shards;
pub mod svg;

pub use html::CSS;
mod tables;
mod trust;
mod verdict;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use lab_results::RunResults;

/// Where [`write_report`] put its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportPaths {
    pub html: PathBuf,
    pub markdown: PathBuf,
}

/// Writes `report.html` and `summary.md` into `out_dir` (created if missing); returns their paths
/// and the summary's text (with goose's counts, read beside the page), for the terminal.
pub fn write_report(runs: &[RunResults], out_dir: &Path) -> Result<(ReportPaths, String)> {
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let paths = ReportPaths {
        html: out_dir.join("report.html"),
        markdown: out_dir.join("summary.md"),
    };
    // goose's reports are linked (and their counts read) when they sit beside the page.
    let goose = goose::read(runs, out_dir);
    std::fs::write(&paths.html, html::render(runs, &goose))
        .with_context(|| format!("writing {}", paths.html.display()))?;
    let summary = markdown::render(runs, &goose);
    std::fs::write(&paths.markdown, &summary)
        .with_context(|| format!("writing {}", paths.markdown.display()))?;
    Ok((paths, summary))
}

/// The HTML report as one self-contained page (goose's reports named, not read).
pub fn render_html(runs: &[RunResults]) -> String {
    html::render(runs, &[])
}

/// The verdict, the trust strip, the summary table (plateau and whole run) and the Little's-law
/// line as Markdown.
pub fn render_markdown(runs: &[RunResults]) -> String {
    markdown::render(runs, &[])
}
