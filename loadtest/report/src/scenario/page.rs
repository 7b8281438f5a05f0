//! `scenario.html`: a scenario's page, in the style of the lab's report.html (its stylesheet,
//! offline, no script). It says what the scenario found before it shows how: the conclusion
//! computed from the rows, whether to trust them (how many were harness-bound), the conditions they
//! were measured under, one chart, then the table — its key columns, the rest folded under a
//! `<details>` element so the page reads on a phone, a column that does not vary left out
//! (`shown.rs`) — with harness-bound rows marked.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::shown::Shown;
use super::{ScenarioTable, trust_line};

/// The page's own rules on top of report.html's stylesheet: text cells line up left, like their
/// headers (the report's summary table holds figures only, set right), and wrap, so that a long
/// one does not push the table past the page's width (the first, the row's name, stays whole).
const TEXT_CELLS: &str = "table.summary td.text { text-align:left; white-space:normal; }\n\
                          table.summary td.text:first-child { white-space:nowrap; }\n";

/// `scenario.html`: the page, self-contained.
pub fn render_html(t: &ScenarioTable) -> String {
    let shown = Shown::of(t);
    let (main, all) = (shown.main, shown.columns.len());
    let page = html! {
        (DOCTYPE) "\n"
        html lang="en" {
            (crate::html::head(&t.title, TEXT_CELLS))
            body { main {
                header { h1 { (t.title) } }
                @if !t.conclusion.is_empty() {
                    section id="verdict" aria-label="Conclusion" {
                        p class="lead" { @for (i, c) in t.conclusion.iter().enumerate() { @if i > 0 { " " } (c) } }
                        @if let Some(trust) = trust_line(t) { p class="conditions" { (trust) } }
                    }
                } @else if let Some(trust) = trust_line(t) {
                    p { (trust) }
                }
                p { (t.intro) }
                @if !t.conditions.is_empty() {
                    p class="note" id="conditions" { strong { "Run conditions: " } (t.conditions.join(" ")) }
                }
                @for (i, c) in t.charts.iter().enumerate() {
                    figure id=(if i == 0 { "fig-scenario".to_owned() } else { format!("fig-scenario-{}", i + 1) }) {
                        figcaption { strong { (c.title) } " " (c.caption) }
                        // SVG text drawn by crate::svg, which escapes every string it sets in it.
                        (PreEscaped(&c.svg))
                    }
                }
                h2 { "Results" }
                (table(t, &shown, main, "summary"))
                @if main < all {
                    details {
                        summary { "Every column (" (all - main) " more)" }
                        (table(t, &shown, all, "summary wide"))
                    }
                }
                @if let Some(same) = shown.same_line() { p class="note" { (same) } }
                @if let Some(e) = t.evidence.as_ref().filter(|e| !e.items.is_empty()) {
                    h3 { (e.heading) }
                    ul class="evidence" { @for item in &e.items { li { (item) } } }
                }
                @if !t.notes.is_empty() {
                    h2 { "How these were measured" }
                    ul { @for note in &t.notes { li { (note) } } }
                }
                @if !t.links.is_empty() {
                    h2 { "Full report of each run" }
                    ul { @for (name, path) in &t.links { li { a href=(path) { (name) } } } }
                }
                footer { "Written by " code { "loadtest lab --scenario" } ". This file is self-contained: no scripts, fonts or images are loaded from anywhere." }
            } }
        }
        "\n"
    };
    page.into_string()
}

/// The first `n` shown columns, harness-bound rows marked, text cells set left.
fn table(t: &ScenarioTable, shown: &Shown, n: usize, class: &str) -> Markup {
    let columns = &shown.columns[..n];
    html! { div class="scroll" { table class=(class) {
        thead { tr { @for &c in columns {
            th class=[(t.key_column.as_ref() == Some(&t.columns[c])).then_some("key")] { (t.columns[c]) }
        } } }
        tbody {
            @for (i, row) in t.rows.iter().enumerate() {
                @let bound = t.harness_bound.get(i).copied().unwrap_or(false);
                tr class=[bound.then_some("harness-bound")] {
                    @for (j, &c) in columns.iter().enumerate() {
                        @if let Some(cell) = row.get(c) {
                            td class=[shown.text[j].then_some("text")] {
                                @if j == 0 && bound { span title="harness-bound" { "⚠ " } }
                                (cell)
                            }
                        }
                    }
                }
            }
        }
    } } }
}
