//! CPU per order by thread role: where each execution model spends the CPU that the summary
//! gives as one figure (`RunResults::cpu_by_role`, over the plateau). A table per API for
//! `summary.md`, the page and the bench (`bench.md`), and a stacked bar per API for the page and
//! the capacity scenario's.
//!
//! Per order = the role's CPU over the plateau ÷ the plateau's fresh orders (its arrivals' 201s):
//! the same division as the summary's CPU-seconds per 1,000 orders, so the roles add up to it
//! (but for the few ms between the two readings of each tick). With repeats, CPU and orders are
//! summed over the repeats before dividing, and a role's threads are the most one run had.

use maud::{Markup, PreEscaped, html};

use lab_results::{CpuByRole, RoleCpu, RunResults, ThreadRole};

use crate::markdown_table::{Column, Table};
use crate::model::ApiRuns;
use crate::svg::{Segment, StackedBar, stacked_bars};

/// One role's figures per order.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleRow {
    pub role: ThreadRole,
    pub threads: u32,
    pub exited: u32,
    /// CPU milliseconds per order: user + system, and each.
    pub cpu_ms: f64,
    pub user_ms: f64,
    pub system_ms: f64,
    /// Of the process's CPU over the window, 0 – 1.
    pub share: f64,
    /// Context switches per order.
    pub voluntary: f64,
    pub involuntary: f64,
}

/// `cpu`'s roles per order of `orders`; `None` without orders.
pub fn per_order(cpu: &CpuByRole, orders: u64) -> Option<Vec<RoleRow>> {
    if orders == 0 {
        return None;
    }
    let (n, total) = (orders as f64, cpu.cpu_s());
    Some(
        cpu.roles
            .iter()
            .map(|r| RoleRow {
                role: r.role,
                threads: r.threads,
                exited: r.exited,
                cpu_ms: 1000.0 * r.cpu_s() / n,
                user_ms: 1000.0 * r.user_s / n,
                system_ms: 1000.0 * r.system_s / n,
                share: if total > 0.0 { r.cpu_s() / total } else { 0.0 },
                voluntary: r.voluntary as f64 / n,
                involuntary: r.involuntary as f64 / n,
            })
            .collect(),
    )
}

/// The tables' headings.
const HEADINGS: [&str; 8] = [
    "thread role",
    "threads",
    "CPU-ms per order",
    "user",
    "system",
    "share",
    "voluntary switches per order",
    "involuntary switches per order",
];

/// A row's cells, as every table writes them (the unseen row has no threads and no switches).
fn cells(r: &RoleRow) -> [String; 8] {
    let unseen = r.role == ThreadRole::Unseen;
    let switches = |v: f64| {
        if unseen {
            "—".to_owned()
        } else {
            format!("{v:.2}")
        }
    };
    [
        r.role.name().to_owned(),
        match (unseen, r.exited) {
            (true, _) => "—".to_owned(),
            (false, 0) => r.threads.to_string(),
            (false, e) => format!("{} ({e} exited)", r.threads),
        },
        format!("{:.3}", r.cpu_ms),
        format!("{:.3}", r.user_ms),
        format!("{:.3}", r.system_ms),
        format!("{:.1} %", 100.0 * r.share),
        switches(r.voluntary),
        switches(r.involuntary),
    ]
}

/// The rows as a Markdown table, with a total row.
pub fn table(rows: &[RoleRow]) -> Table {
    let mut t = Table::new(HEADINGS.iter().enumerate().map(|(i, h)| match i {
        0 => Column::left(*h),
        _ => Column::right(*h),
    }));
    for r in rows {
        t.push_row(cells(r));
    }
    let sum = |f: fn(&RoleRow) -> f64| rows.iter().map(f).sum::<f64>();
    t.push_row([
        "**all**".to_owned(),
        rows.iter().map(|r| r.threads).sum::<u32>().to_string(),
        format!("{:.3}", sum(|r| r.cpu_ms)),
        format!("{:.3}", sum(|r| r.user_ms)),
        format!("{:.3}", sum(|r| r.system_ms)),
        "100 %".to_owned(),
        format!("{:.2}", sum(|r| r.voluntary)),
        format!("{:.2}", sum(|r| r.involuntary)),
    ]);
    t
}

/// A role's colour in the bars (Okabe–Ito; grey for what no thread seen accounts for).
pub fn colour(role: ThreadRole) -> &'static str {
    match role {
        ThreadRole::EventLoop => "#0072B2",
        ThreadRole::RequestThreads => "#D55E00",
        ThreadRole::HttpClient => "#009E73",
        ThreadRole::Pools => "#CC79A7",
        ThreadRole::Other => "#E69F00",
        ThreadRole::Unseen => "#999999",
    }
}

/// A stacked bar of CPU-ms per order, a part per role.
pub fn bar(label: impl Into<String>, rows: &[RoleRow]) -> StackedBar {
    StackedBar {
        label: label.into(),
        segments: rows
            .iter()
            .map(|r| Segment {
                name: r.role.name(),
                colour: colour(r.role),
                value: r.cpu_ms,
            })
            .collect(),
    }
}

/// The bars as one SVG.
pub fn bars_svg(bars: &[StackedBar]) -> String {
    stacked_bars("CPU per order by thread role", "ms", 3, bars)
}

/// An API's runs with a split: their roles summed over the repeats, and their plateau orders.
fn pooled(runs: &[&RunResults]) -> Option<(CpuByRole, u64)> {
    let with: Vec<(&CpuByRole, u64)> = runs
        .iter()
        .filter_map(|r| Some((r.cpu_by_role.as_ref()?, r.plateau.as_ref()?.ok)))
        .collect();
    let first = with.first()?.0;
    let mut roles: Vec<RoleCpu> = Vec::new();
    for r in with.iter().flat_map(|(c, _)| &c.roles) {
        match roles.iter_mut().find(|x| x.role == r.role) {
            Some(x) => {
                x.threads = x.threads.max(r.threads);
                x.exited = x.exited.max(r.exited);
                x.user_s += r.user_s;
                x.system_s += r.system_s;
                x.run_s = x.run_s.zip(r.run_s).map(|(a, b)| a + b);
                x.voluntary += r.voluntary;
                x.involuntary += r.involuntary;
            }
            None => roles.push(r.clone()),
        }
    }
    roles.sort_by_key(|r| r.role);
    let cpu = CpuByRole {
        roles,
        ..first.clone()
    };
    Some((cpu, with.iter().map(|(_, n)| n).sum()))
}

/// Each API that has a split, with its rows per order.
fn by_api<'a>(groups: &[ApiRuns<'a>]) -> Vec<(&'a str, Vec<RoleRow>)> {
    groups
        .iter()
        .filter_map(|g| {
            let (cpu, orders) = pooled(&g.runs)?;
            Some((g.api, per_order(&cpu, orders)?))
        })
        .collect()
}

/// Whether any API has a split (the page's section is there).
pub(crate) fn any(groups: &[ApiRuns<'_>]) -> bool {
    !by_api(groups).is_empty()
}

const WHAT: &str = "Each thread's run time (schedstat), CPU ticks (utime, stime) and context \
    switches read from /proc/PID/task/TID once a second over the plateau, the thread given its role \
    by its name; a role's CPU is its threads' run time, split into user and system as their ticks \
    are; exited/unseen is the process's CPU less the threads' (threads that exited since they were \
    last read). Per order: over the plateau's fresh orders.";

/// `summary.md`'s section: a table per API; nothing when no run has a split.
pub(crate) fn markdown(s: &mut String, groups: &[ApiRuns<'_>]) {
    let apis = by_api(groups);
    if apis.is_empty() {
        return;
    }
    s.push_str("### CPU per order by thread role (plateau)\n\n");
    s.push_str(WHAT);
    s.push_str("\n\n");
    for (api, rows) in &apis {
        s.push_str(&format!("**{api}**\n\n{}\n", table(rows)));
    }
}

/// The page's section: the bars, then a table per API; nothing when no run has a split.
pub(crate) fn html(groups: &[ApiRuns<'_>]) -> Markup {
    let apis = by_api(groups);
    if apis.is_empty() {
        return html! {};
    }
    let bars: Vec<StackedBar> = apis.iter().map(|(api, rows)| bar(*api, rows)).collect();
    html! { section id="cpu-by-role" {
        h2 { "CPU per order by thread role" }
        p class="note" { (WHAT) }
        figure id="fig-cpu-by-role" {
            figcaption { strong { "CPU-ms per order over the plateau" } " by what each thread does." }
            // Drawn by `svg`, which escapes every string it sets in it.
            (PreEscaped(bars_svg(&bars)))
        }
        @for (api, rows) in &apis {
            h3 { (api) }
            div class="scroll" { table class="summary" {
                thead { tr { @for h in HEADINGS { th { (h) } } } }
                tbody { @for r in rows { tr {
                    @let c = cells(r);
                    th scope="row" { (c[0]) }
                    @for v in &c[1..] { td { (v) } }
                } } }
            } }
        }
    } }
}
