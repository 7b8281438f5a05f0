//! `summary.md`: the verdict, the trust strip and the side-by-side table as Markdown, short enough
//! to paste into a pull request. Every sentence comes from the same builders as the page's.

use std::fmt::Write as _;

use crate::markdown_table::{Column, Table};
use lab_results::RunResults;

use super::goose::GooseRun;
use super::model::group;
use super::slo::Slo;
use super::tables::{self, cell_text};
use super::{littles, trust, verdict};

/// Renders the Markdown summary.
pub fn render(runs: &[RunResults], goose: &[GooseRun], slo: Option<&Slo>) -> String {
    let groups = group(runs);
    let slo = Slo::given_or_default(slo, &groups);
    let slo = slo.as_ref();
    let apis: Vec<&str> = groups.iter().map(|g| g.api).collect();
    let mut s = format!("## Load test: {}\n\n", apis.join(" vs "));
    if let Some(run) = runs.first() {
        let p = &run.config.profile;
        let _ = writeln!(
            s,
            "Profile `{}` ({} model), started {}, git `{}`, {} results file(s).\n",
            p.name,
            p.model,
            run.started_at,
            run.environment.git_sha,
            runs.len()
        );
    }
    if let Some(v) = verdict::verdict(&groups, slo) {
        let _ = writeln!(s, "**Verdict:** {}\n", v.lead.markdown());
        if let Some(c) = super::conditions::line(&groups) {
            let _ = writeln!(s, "_{c}_\n");
        }
        if let Some(line) = &v.slo {
            let _ = writeln!(s, "{}\n", line.markdown());
        }
        for w in &v.why {
            let _ = writeln!(s, "- {}", w.markdown());
        }
        if !v.why.is_empty() {
            s.push('\n');
        }
        if !v.caveats.is_empty() {
            let c: Vec<String> = v.caveats.iter().map(|c| c.markdown()).collect();
            let _ = writeln!(s, "Caveats: {}.\n", c.join("; "));
        }
        trust::markdown(&mut s, &groups, slo);
    }
    super::money::markdown(&mut s, &groups);
    super::shards::markdown(&mut s, &groups);
    if groups.iter().any(|g| g.runs.len() > 1) {
        s.push_str("Cells: median over the repeats, (min – max) when they differ.\n\n");
    }
    for note in tables::notes(&groups) {
        let _ = writeln!(s, "{note}\n");
    }
    for (span, rows) in tables::summary(&groups) {
        let _ = writeln!(s, "### {}\n", span.title());
        let mut table = Table::new(
            std::iter::once(Column::left("metric")).chain(apis.iter().map(|a| Column::right(*a))),
        );
        for row in rows.iter().filter(|r| r.cells.iter().any(Option::is_some)) {
            let cells = row
                .cells
                .iter()
                .map(|c| match cell_text(c.as_ref(), row.unit) {
                    (main, None) => main,
                    (main, Some(range)) => format!("{main} ({range})"),
                });
            table.push_row(std::iter::once(row.metric.clone()).chain(cells));
        }
        let _ = writeln!(s, "{table}");
    }
    super::thread_roles::markdown(&mut s, &groups);
    for row in littles::rows(&groups) {
        let _ = writeln!(
            s,
            "**Little's law** — {}: {}\n",
            row.api,
            littles::sentence(&row).markdown()
        );
    }
    super::goose::markdown(&mut s, &groups, goose);
    s
}
