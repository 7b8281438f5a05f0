//! Comparison reports from load-test results: a self-contained `report.html` (inline CSS and SVG
//! charts, nothing fetched from anywhere, readable offline and on paper) and a `summary.md` to
//! paste into a pull request.
//!
//! Input is any number of [`RunResults`] (one per API per repeat). Runs are grouped by API; with
//! repeats, every figure shows the median and the min – max spread. The report only reads the
//! results: each number in it is one the generator recorded, and the page says how it was measured.
//!
//! Layout of this module: `model` (grouping, spreads, number formats), `tables` (the summary
//! table), `charts` + `svg` (charts over time), `fairness` (settings that differ), `html`,
//! `sections` and `method` (the page), `money` (the money line of each run), `markdown` (the PR
//! summary).

mod chart_specs;
mod charts;
mod fairness;
mod html;
mod markdown;
mod method;
mod model;
mod money;
mod sections;
pub mod svg;
mod tables;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::results::RunResults;

/// Where [`write_report`] put its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportPaths {
    pub html: PathBuf,
    pub markdown: PathBuf,
}

/// Writes `report.html` and `summary.md` into `out_dir` (created if missing).
pub fn write_report(runs: &[RunResults], out_dir: &Path) -> Result<ReportPaths> {
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let paths = ReportPaths {
        html: out_dir.join("report.html"),
        markdown: out_dir.join("summary.md"),
    };
    std::fs::write(&paths.html, render_html(runs))
        .with_context(|| format!("writing {}", paths.html.display()))?;
    std::fs::write(&paths.markdown, render_markdown(runs))
        .with_context(|| format!("writing {}", paths.markdown.display()))?;
    Ok(paths)
}

/// The HTML report as one self-contained page.
pub fn render_html(runs: &[RunResults]) -> String {
    html::render(runs)
}

/// The summary table (plateau and whole run), the Little's-law line and the limits line as Markdown.
pub fn render_markdown(runs: &[RunResults]) -> String {
    markdown::render(runs)
}
