//! The money line of every run: what the gateway charged against the orders in the database,
//! counted after the run once no charge was left unsettled. Built once here; `html` and
//! `markdown` only lay it out (red when a customer was charged for nothing or an order has no
//! charge).

use std::fmt::Write as _;

use maud::{Markup, html};

use lab_results::{MoneyRecord, RunResults};

use super::model::{ApiRuns, Unit, fmt, run_name};

/// One run's line.
#[derive(Debug, Clone, PartialEq)]
pub struct MoneyLine {
    /// `blocking-api`, or `blocking-api #2` with repeats.
    pub run: String,
    /// The sentence: charges, voids, orders, charges without order, orders without charge (and
    /// anything else that went wrong), or why it was not counted.
    pub text: String,
    /// Money lost or unaccounted for: a charge without order, an order without charge, a key
    /// charged twice or an amount that differs.
    pub bad: bool,
}

/// The lines of every run that has a money record or a money check, in group order.
pub fn lines(groups: &[ApiRuns<'_>]) -> Vec<MoneyLine> {
    groups
        .iter()
        .flat_map(|g| &g.runs)
        .filter_map(|r| line(r))
        .collect()
}

fn line(r: &RunResults) -> Option<MoneyLine> {
    let run = run_name(r);
    let Some(m) = &r.money else {
        // Older results have neither; a run whose money could not be counted says why.
        let why = r
            .invariants
            .iter()
            .find(|c| c.name.starts_with("money:") && c.ok.is_none())?;
        return Some(MoneyLine {
            run,
            text: format!("not counted: {}", why.detail),
            bad: false,
        });
    };
    let mut text = sentence(m);
    if let Some(exit) = r.api_exit.as_ref().filter(|e| e.restarted_for_recovery) {
        let _ = write!(
            text,
            " (counted after the API, {}, was started again for its recovery)",
            exit.describe()
        );
    }
    Some(MoneyLine {
        run,
        text,
        bad: !m.balanced(),
    })
}

/// `1,234 charges, 3 voids, 1,231 orders, 0 charges without order, 0 orders without charge`,
/// then only the other figures that are not zero.
pub fn sentence(m: &MoneyRecord) -> String {
    let n = |v: u64| fmt(v as f64, Unit::Count);
    let mut s = format!(
        "{} charges, {} voids, {} orders, {} charges without order, {} orders without charge",
        n(m.charges),
        n(m.voids),
        n(m.orders),
        n(m.charges_without_order),
        n(m.orders_without_charge)
    );
    for (v, what) in [
        (m.double_charges, "keys charged twice"),
        (m.amount_mismatches, "amounts that differ"),
        (m.charging_left, "keys still CHARGING"),
    ] {
        if v > 0 {
            let _ = write!(s, ", {} {what}", n(v));
        }
    }
    s
}

/// The page's section.
pub fn html(groups: &[ApiRuns<'_>]) -> Markup {
    let lines = lines(groups);
    if lines.is_empty() {
        // The contents and the trust strip link here: say so rather than leave a dead link.
        return html! { section id="money" {
            h2 { "Money" }
            p { "Not measured: no run compared the payment gateway's ledger with the orders." }
        } };
    }
    html! { section id="money" {
        h2 { "Money" }
        p class="note" {
            "The payment gateway's ledger against the orders in the database, counted after the \
             run once no idempotency key was left CHARGING. A live charge (taken, not voided) must \
             have exactly one order with its amount; an order, exactly one live charge."
        }
        @for l in &lines {
            @let body = html! { strong { (l.run) } ": " (l.text) };
            @if l.bad {
                div class="banner danger money" role="alert" { (body) }
            } @else {
                p class="money" { (body) }
            }
        }
    } }
}

/// The `summary.md` lines.
pub fn markdown(s: &mut String, groups: &[ApiRuns<'_>]) {
    for l in lines(groups) {
        let mark = if l.bad { "❌ " } else { "" };
        let _ = writeln!(s, "{mark}**Money** — {}: {}\n", l.run, l.text);
    }
}
