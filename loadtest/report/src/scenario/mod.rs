//! The pages of `loadtest lab --scenario NAME` (and `loadtest crossover`): a scenario's table
//! ([`ScenarioTable`]) with its conclusion, trust line, conditions and charts, written as
//! `summary.md` ([`render_markdown`]) and as `scenario.html` ([`render_html`], in the style of
//! report.html, `page.rs`); the charts drawn from a `scenario.json`'s rows ([`charts`],
//! [`capacity_charts`], and `capacity_roles`: CPU per order by thread role), and capacity's whole page from its rows ([`capacity_table`]). Each
//! scenario's table is built here from its runs' results, handed over as plain data
//! ([`VariantRuns`]: a slug and the runs): [`tables`] (remotecall, db-latency, slow-dependency,
//! and every table's links and checks), [`faults`], [`overload`], [`batching`], [`events`], [`soak`]; `loadtest crossover`'s page
//! ([`crossover`]).
//!
//! Presentation only, and so here beside the report's: the scenario modules of `loadtest/cli`
//! run the runs and work out what they mean — the conclusion, which rows were harness-bound —
//! and hand this module the runs or a [`ScenarioTable`]; the charts read only the rows
//! (`lab_results::scenario`), so a committed result is drawn again the same way. One table
//! writer ([`crate::markdown_table`]), one chart module ([`crate::svg`], its bars included) for
//! the report and every scenario page.

pub mod batching;
pub mod capacity_charts;
mod capacity_roles;
pub mod capacity_table;
pub mod charts;
pub mod crossover;
pub mod events;
pub mod faults;
mod faults_figures;
pub mod figures;
pub mod overload;
mod page;
mod shown;
pub mod soak;
pub mod tables;

pub use page::render_html;

use lab_results::RunResults;

use crate::markdown_table::Table;

/// One variant's runs as a scenario's table reads them: its slug (the folder of its full report
/// and the row's key) and its repeats' results.
pub type VariantRuns<'a> = (&'a str, &'a [RunResults]);

/// A table with the words around it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScenarioTable {
    pub title: String,
    pub intro: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub notes: Vec<Note>,
    /// (variant, relative path of its full report).
    pub links: Vec<(String, String)>,
    /// What the scenario found, in one or two sentences computed from its rows (empty: none
    /// computed for this scenario).
    pub conclusion: Vec<String>,
    /// Per row: was the run harness-bound? Empty when the scenario does not record it.
    pub harness_bound: Vec<bool>,
    /// The long form of a column kept short so that the table reads on a phone (e.g. what
    /// stopped each step: one word in the table, the measurement here), listed under the table.
    pub evidence: Option<Evidence>,
    /// The scenario's charts, in page order (empty: none).
    pub charts: Vec<ScenarioChart>,
    /// How many leading columns the page shows above the fold (0: all); the rest are under a
    /// `<details>` element.
    pub main_columns: usize,
    /// The column a reader opens the page for (e.g. what stopped each step), by its heading:
    /// marked `key` in the page, where a phone shows it without scrolling sideways
    /// (scripts/report-screenshots.sh checks it in Chromium).
    pub key_column: Option<String>,
    /// How, when and where the rows were measured (command, commit, build, machine): on the page.
    pub conditions: Vec<String>,
}

/// A list under the table, with its heading.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Evidence {
    pub heading: String,
    pub items: Vec<String>,
}

/// A note under a scenario's table: a remark, or a consistency check that failed — which makes
/// the command's exit status 3 ([`ScenarioTable::check_failed`]). Either is shown as its text
/// ([`std::fmt::Display`]); a failed check behind the one prefix that marks it on the page.
#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    Said(String),
    /// What failed, without the prefix.
    CheckFailed(String),
}

impl Note {
    pub fn is_failed_check(&self) -> bool {
        matches!(self, Note::CheckFailed(_))
    }

    /// What it says (for a failed check, what failed, without the prefix).
    pub fn text(&self) -> &str {
        match self {
            Note::Said(text) | Note::CheckFailed(text) => text,
        }
    }
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::Said(text) => f.write_str(text),
            Note::CheckFailed(what) => write!(f, "CHECK FAILED: {what}"),
        }
    }
}

impl From<String> for Note {
    fn from(text: String) -> Note {
        Note::Said(text)
    }
}

impl From<&str> for Note {
    fn from(text: &str) -> Note {
        Note::Said(text.to_owned())
    }
}

impl maud::Render for Note {
    fn render_to(&self, buffer: &mut String) {
        self.to_string().render_to(buffer);
    }
}

impl ScenarioTable {
    /// Did any of the runs fail a consistency check?
    pub fn check_failed(&self) -> bool {
        self.notes.iter().any(Note::is_failed_check)
    }
}

/// The scenario's chart: an SVG drawn by [`crate::svg`] (every string in it escaped there).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScenarioChart {
    pub title: String,
    pub caption: String,
    pub svg: String,
}

/// `3 of 26 rows were harness-bound …`; for a scenario whose runs record no such verdict (events'
/// own closed-model runs), that it was not recorded; `None` without rows.
pub fn trust_line(t: &ScenarioTable) -> Option<String> {
    if t.rows.is_empty() {
        return None;
    }
    if t.harness_bound.is_empty() {
        return Some(
            "Whether the rig kept up was not recorded for these runs (no harness-bound verdict): \
             a rate here may be the machine's as much as the API's."
                .to_owned(),
        );
    }
    let (n, of) = (t.harness_bound.iter().filter(|b| **b).count(), t.rows.len());
    Some(match n {
        0 => format!(
            "None of the {of} rows was harness-bound: the APIs, not the rig, set every figure."
        ),
        n if n == of => format!(
            "All {of} rows were harness-bound (marked ⚠): the machine, not only the API, may have \
             set every figure — compare them with care, and rerun on a quieter machine."
        ),
        n => format!(
            "{n} of {of} rows were harness-bound (marked ⚠): for those, the machine, not only the \
             API, may have set the figure."
        ),
    })
}

/// APIs (or any names) in the order they first appear: the order of a chart's legend and of a
/// conclusion's sentences.
pub fn apis<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for n in names {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// `summary.md`: the page's words and its table as Markdown.
pub fn render_markdown(t: &ScenarioTable) -> String {
    let mut md = format!("# {}\n\n", t.title);
    if !t.conclusion.is_empty() {
        md.push_str(&format!("**{}**\n\n", t.conclusion.join(" ")));
    }
    if let Some(trust) = trust_line(t) {
        md.push_str(&format!("{trust}\n\n"));
    }
    md.push_str(&format!("{}\n\n", t.intro));
    if !t.conditions.is_empty() {
        md.push_str(&format!("Run conditions: {}\n\n", t.conditions.join(" ")));
    }
    let shown = shown::Shown::of(t);
    let mut table = Table::left(shown.columns.iter().map(|&c| &t.columns[c]));
    for (i, row) in t.rows.iter().enumerate() {
        let mut row: Vec<String> = shown
            .columns
            .iter()
            .filter_map(|&c| row.get(c).cloned())
            .collect();
        if let Some(first) = row.first_mut()
            && t.harness_bound.get(i).copied().unwrap_or(false)
        {
            first.insert_str(0, "⚠ ");
        }
        table.push_row(row);
    }
    md.push_str(&format!("{table}\n"));
    if let Some(same) = shown.same_line() {
        md.push_str(&format!("{same}\n\n"));
    }
    if let Some(e) = t.evidence.as_ref().filter(|e| !e.items.is_empty()) {
        md.push_str(&format!("{}:\n\n", e.heading));
        for item in &e.items {
            md.push_str(&format!("- {item}\n"));
        }
        md.push('\n');
    }
    for note in &t.notes {
        md.push_str(&format!("- {note}\n"));
    }
    if !t.links.is_empty() {
        md.push_str("\nFull report of each run:\n");
        for (name, path) in &t.links {
            md.push_str(&format!("- [{name}]({path})\n"));
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_escapes_every_value_from_the_results() {
        let t = ScenarioTable {
            title: "a <b>".into(),
            intro: "x & y".into(),
            columns: vec!["<th>".into()],
            rows: vec![vec!["<script>alert(1)</script>".into()]],
            notes: vec!["n\"q".into()],
            links: vec![("r".into(), "\" onmouseover=\"x".into())],
            conclusion: vec!["<i>found</i>".into()],
            conditions: vec!["<b>".into()],
            ..ScenarioTable::default()
        };
        let page = render_html(&t);
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("<title>a &lt;b&gt;</title>"));
        assert!(page.contains("href=\"&quot; onmouseover=&quot;x\""));
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("&lt;i&gt;found&lt;/i&gt;") && page.contains("&lt;b&gt;"));
    }
}
