//! A scenario's table ([`ScenarioTable`]) as markdown and as a self-contained HTML page, and the
//! number formats.

use maud::{DOCTYPE, PreEscaped, html};

/// A table with the words around it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioTable {
    pub title: String,
    pub intro: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub notes: Vec<String>,
    /// (variant, relative path of its full report).
    pub links: Vec<(String, String)>,
}

pub(super) fn ms(v: f64) -> String {
    match v {
        v if !v.is_finite() => "—".into(),
        v if v >= 1000.0 => format!("{:.2} s", v / 1000.0),
        v => format!("{v:.0} ms"),
    }
}

pub(super) fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.0}")
    } else {
        "—".into()
    }
}

pub fn render_markdown(t: &ScenarioTable) -> String {
    let mut md = format!(
        "# {}\n\n{}\n\n| {} |\n|{}\n",
        t.title,
        t.intro,
        t.columns.join(" | "),
        "---|".repeat(t.columns.len())
    );
    for row in &t.rows {
        md.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    md.push('\n');
    for note in &t.notes {
        md.push_str(&format!("- {note}\n"));
    }
    md.push_str("\nFull report of each run:\n");
    for (name, path) in &t.links {
        md.push_str(&format!("- [{name}]({path})\n"));
    }
    md
}

pub fn render_html(t: &ScenarioTable) -> String {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (t.title) }
                style { (PreEscaped(lab_report::CSS)) }
            }
            body {
                main {
                    h1 { (t.title) }
                    p { (t.intro) }
                    table.summary {
                        thead { tr { @for c in &t.columns { th { (c) } } } }
                        tbody {
                            @for row in &t.rows {
                                tr { @for cell in row { td { (cell) } } }
                            }
                        }
                    }
                    ul { @for note in &t.notes { li { (note) } } }
                    h2 { "Full report of each run" }
                    ul { @for (name, path) in &t.links { li { a href=(path) { (name) } } } }
                }
            }
        }
    };
    page.into_string()
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
        };
        let page = render_html(&t);
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("<title>a &lt;b&gt;</title>"));
        assert!(page.contains("href=\"&quot; onmouseover=&quot;x\""));
        assert!(page.starts_with("<!DOCTYPE html>"));
    }
}
