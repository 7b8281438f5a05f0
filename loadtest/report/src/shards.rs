//! The shards of a merged run (`loadtest merge`): how many generators made the load, and how late
//! each started and sent against the shared schedule. A shard that fell behind is why a merged run
//! is harness-bound, so the reader sees which one.

use std::fmt::Write as _;

use maud::{Markup, html};

use crate::markdown_table::Table;
use lab_results::{RunResults, ShardRecord};

use super::model::{ApiRuns, run_name};

fn merged<'a>(groups: &'a [ApiRuns<'_>]) -> impl Iterator<Item = &'a RunResults> {
    groups
        .iter()
        .flat_map(|g| g.runs.iter().copied())
        .filter(|r| !r.shards.is_empty())
}

fn lead(r: &RunResults) -> String {
    format!(
        "{}: {} shards (generators), merged by adding their histograms",
        run_name(r),
        r.shards.len()
    )
}

fn cells(s: &ShardRecord) -> [String; 5] {
    [
        format!("{}/{}", s.index, s.count),
        s.offered_arrivals.to_string(),
        format!("{:.1}", s.start_lateness_ms()),
        format!("{:.1} / {:.1}", s.lateness_ms.p99, s.lateness_ms.max),
        s.harness_bound
            .clone()
            .unwrap_or_else(|| "kept up".to_owned()),
    ]
}

const HEAD: [&str; 5] = [
    "shard",
    "arrivals offered",
    "start late, ms",
    "send lateness p99 / max, ms",
    "harness",
];

/// The section, empty when no run was merged from shards.
pub fn html(groups: &[ApiRuns<'_>]) -> Markup {
    html! {
        @for r in merged(groups) {
            section id="shards" {
                h2 { "Shards" }
                p { (lead(r)) }
                table {
                    thead { tr { @for h in HEAD { th { (h) } } } }
                    tbody { @for s in &r.shards { tr { @for c in cells(s) { td { (c) } } } } }
                }
            }
        }
    }
}

/// The same as Markdown.
pub fn markdown(s: &mut String, groups: &[ApiRuns<'_>]) {
    for r in merged(groups) {
        let _ = writeln!(s, "**Shards** — {}.\n", lead(r));
        let mut table = Table::left(HEAD);
        for shard in &r.shards {
            table.push_row(cells(shard));
        }
        let _ = writeln!(s, "{table}");
    }
}
