//! A scenario's table ([`ScenarioTable`]) as markdown and as a self-contained HTML page, and the
//! number formats.

use lab_report::svg::esc;

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
    let head: String = t
        .columns
        .iter()
        .map(|c| format!("<th>{}</th>", esc(c)))
        .collect();
    let body: String = t
        .rows
        .iter()
        .map(|r| {
            format!(
                "<tr>{}</tr>\n",
                r.iter()
                    .map(|c| format!("<td>{}</td>", esc(c)))
                    .collect::<String>()
            )
        })
        .collect();
    let notes: String = t
        .notes
        .iter()
        .map(|n| format!("<li>{}</li>", esc(n)))
        .collect();
    let links: String = t
        .links
        .iter()
        .map(|(n, p)| format!("<li><a href=\"{}\">{}</a></li>", esc(p), esc(n)))
        .collect();
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>{css}</style></head><body><main>\n<h1>{title}</h1>\n<p>{intro}</p>\n\
         <table class=\"summary\"><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table>\n\
         <ul>{notes}</ul>\n<h2>Full report of each run</h2>\n<ul>{links}</ul>\n</main></body></html>\n",
        title = esc(&t.title),
        intro = esc(&t.intro),
        css = lab_report::CSS,
    )
}
