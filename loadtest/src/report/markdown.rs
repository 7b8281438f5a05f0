//! `summary.md`: the side-by-side table as Markdown, with the limits line, the Little's-law line
//! and any warning, short enough to paste into a pull request.

use std::fmt::Write as _;

use crate::results::RunResults;

use super::fairness;
use super::model::{ApiRuns, MIB, Unit, by_api, cores, fmt, group};
use super::tables::{self, cell_text};

/// Renders the Markdown summary.
pub fn render(runs: &[RunResults]) -> String {
    let groups = group(runs);
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
    limits_line(&mut s, &groups);
    super::money::markdown(&mut s, &groups);
    for (who, why) in by_api(&groups, |r| r.harness_bound.clone()) {
        let _ = writeln!(s, "> ⚠️ **Harness-bound:** {who}: {why}\n");
    }
    if runs.iter().any(|r| !r.invariants_hold()) {
        s.push_str("> ❌ **An end-of-run consistency check failed** — see report.html.\n\n");
    }
    if groups.iter().any(|g| g.runs.len() > 1) {
        s.push_str("Cells: median over the repeats, (min – max) when they differ.\n\n");
    }
    for (span, rows) in tables::summary(&groups) {
        let _ = writeln!(s, "### {}\n", span.title());
        let _ = writeln!(
            s,
            "| metric | {} |",
            apis.iter().map(|a| cell(a)).collect::<Vec<_>>().join(" | ")
        );
        let _ = writeln!(s, "|---|{}", "---:|".repeat(apis.len()));
        for row in rows {
            let cells: Vec<String> = row
                .cells
                .iter()
                .map(|c| match cell_text(c.as_ref(), row.unit) {
                    (main, None) => main,
                    (main, Some(range)) => format!("{main} ({range})"),
                })
                .collect();
            let _ = writeln!(s, "| {} | {} |", cell(&row.metric), cells.join(" | "));
        }
        s.push('\n');
    }
    for row in tables::littles_law(&groups) {
        let _ = writeln!(
            s,
            "**Little's law** — {}\n",
            tables::littles_law_sentence(&row, |t| format!("**{t}**"))
        );
    }
    let knees: Vec<String> = groups
        .iter()
        .filter_map(|g| {
            g.spread(|r| r.knee_rps)
                .map(|k| format!("{} {}", g.api, fmt(k.median, Unit::Rate)))
        })
        .collect();
    if !knees.is_empty() {
        let _ = writeln!(
            s,
            "**Knee** (highest step rate with ≤ 1 % errors and p99 ≤ 10 s): {}.\n",
            knees.join(", ")
        );
    }
    let differing = fairness::compare(&groups)
        .with(fairness::Status::Differs)
        .iter()
        .map(|d| format!("`{}`", d.name))
        .collect::<Vec<_>>();
    if differing.is_empty() {
        s.push_str(
            "**Fairness:** no setting differs between the runs other than the execution model.\n",
        );
    } else {
        let _ = writeln!(
            s,
            "**Fairness:** ⚠️ settings that differ besides the execution model: {}.",
            differing.join(", ")
        );
    }
    s
}

fn limits_line(s: &mut String, groups: &[ApiRuns<'_>]) {
    let not: Vec<String> = by_api(groups, |r| (!r.config.limits.limits_enforced).then_some(()))
        .into_iter()
        .map(|(who, ())| who)
        .collect();
    if !not.is_empty() {
        let _ = writeln!(
            s,
            "> 🛑 **Resource limits were NOT enforced** for {} — CPU and memory figures are not those \
             of a limited container.\n",
            not.join(", ")
        );
        return;
    }
    let mut seen: Vec<String> = groups
        .iter()
        .flat_map(|g| &g.runs)
        .map(|r| {
            let l = &r.config.limits;
            let cpu = l.cpu_cores.map_or("no CPU limit".to_owned(), cores);
            let mem = l.memory_bytes.map_or("no memory limit".to_owned(), |b| {
                format!("{:.0} MiB", b as f64 / MIB)
            });
            format!("{cpu}, {mem} ({})", l.mechanism)
        })
        .collect();
    seen.sort();
    seen.dedup();
    if !seen.is_empty() {
        let _ = writeln!(s, "**Limits enforced:** {}.\n", seen.join("; "));
    }
}

/// Escapes the one character that breaks a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}
