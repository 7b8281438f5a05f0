//! The trust strip under the verdict: the things a reader must know before believing any number
//! — the objective met · the APIs stayed up · limits enforced · not harness-bound · all checks
//! held · settings identical · money balanced —
//! each marked ✓, ✗ or ? (a glyph, not only a colour), with the figure behind it and a link to the
//! section that shows the detail.

use std::fmt::Write as _;

use maud::{Markup, html};

use lab_results::RunResults;

use super::fairness::{self, Status};
use super::model::{ApiRuns, Unit, by_api, cpu_and_memory, fmt, run_name};
use super::slo::Slo;
use super::slo_verdict;
use super::trust_item::{Item, State};

pub fn items(groups: &[ApiRuns<'_>], slo: Option<&Slo>) -> Vec<Item> {
    vec![
        slo_verdict::trust_item(slo, groups, super::facts::span(groups)),
        stayed_up(groups),
        limits(groups),
        harness(groups),
        checks(groups),
        settings(groups),
        money(groups),
    ]
}

fn item(id: &'static str, href: &'static str, state: State, label: &str, detail: String) -> Item {
    Item {
        id,
        href,
        state,
        label: label.to_owned(),
        detail,
    }
}

fn runs<'a>(groups: &'a [ApiRuns<'_>]) -> impl Iterator<Item = &'a RunResults> {
    groups.iter().flat_map(|g| g.runs.iter().copied())
}

fn listed(items: Vec<(String, String)>) -> String {
    let parts: Vec<String> = items
        .into_iter()
        .map(|(who, what)| format!("{who}: {what}"))
        .collect();
    parts.join("; ")
}

/// An API that died mid-run served nothing after it died: its figures are not a measure of it.
fn stayed_up(groups: &[ApiRuns<'_>]) -> Item {
    let died: Vec<(String, String)> = runs(groups)
        .filter_map(|r| Some((run_name(r), r.api_exit.as_ref()?.describe())))
        .collect();
    if died.is_empty() {
        return item(
            "trust-alive",
            "#summary",
            State::Ok,
            "APIs stayed up",
            "no API process ended during its run".to_owned(),
        );
    }
    item(
        "trust-alive",
        "#timeline",
        State::Bad,
        "an API DIED mid-run",
        listed(died) + "; its latency and ratios are a dead process's, not compared",
    )
}

fn limits(groups: &[ApiRuns<'_>]) -> Item {
    let not = by_api(groups, |r| {
        let l = &r.config.limits;
        let note = if l.note.is_empty() {
            String::new()
        } else {
            format!(" — {}", l.note)
        };
        (!l.limits_enforced).then(|| format!("mechanism {}{note}", l.mechanism))
    });
    if !not.is_empty() {
        return item(
            "limits-not-enforced",
            "#configuration",
            State::Bad,
            "limits NOT enforced",
            listed(not),
        );
    }
    let mut seen: Vec<String> = runs(groups)
        .map(|r| {
            let l = &r.config.limits;
            format!("{} ({}); {}", cpu_and_memory(l), l.mechanism, l.placement())
        })
        .collect();
    seen.sort();
    seen.dedup();
    item(
        "trust-limits",
        "#configuration",
        State::Ok,
        "limits enforced",
        seen.join("; "),
    )
}

fn harness(groups: &[ApiRuns<'_>]) -> Item {
    let bound = by_api(groups, |r| r.harness_bound.clone());
    if !bound.is_empty() {
        return item(
            "harness-bound",
            "#fig-lateness",
            State::Bad,
            "harness-bound",
            listed(bound),
        );
    }
    let lateness: Vec<String> = groups
        .iter()
        .filter_map(|g| {
            let p99 = g.spread(|r| Some(r.summary.lateness_ms.p99))?;
            Some(format!("{} {}", fmt(p99.median, Unit::Millis), g.api))
        })
        .collect();
    item(
        "trust-harness",
        "#fig-lateness",
        State::Ok,
        "not harness-bound",
        format!("generator lateness p99 {}", lateness.join(", ")),
    )
}

fn checks(groups: &[ApiRuns<'_>]) -> Item {
    let all: Vec<(String, &lab_results::InvariantCheck)> = runs(groups)
        .flat_map(|r| r.invariants.iter().map(move |c| (run_name(r), c)))
        .collect();
    let failed: Vec<String> = all
        .iter()
        .filter(|(_, c)| c.ok == Some(false))
        .map(|(run, c)| format!("{run}: {} — {}", c.name, c.detail))
        .collect();
    let unknown = all.iter().filter(|(_, c)| c.ok.is_none()).count();
    let held = all.len() - failed.len() - unknown;
    let (state, label, detail) = match (all.len(), failed.len(), unknown) {
        (0, ..) => (
            State::Unknown,
            "no checks recorded".to_owned(),
            "this run recorded no end-of-run checks".to_owned(),
        ),
        (_, 0, 0) => (
            State::Ok,
            "all checks held".to_owned(),
            format!("{held} end-of-run checks, counts and money"),
        ),
        (_, 0, u) => (
            State::Unknown,
            format!("{held} checks held, {u} not checked"),
            "see Consistency checks".to_owned(),
        ),
        (_, f, _) => (
            State::Bad,
            format!("{f} check(s) VIOLATED"),
            failed.join("; "),
        ),
    };
    item("trust-checks", "#checks", state, &label, detail)
}

fn settings(groups: &[ApiRuns<'_>]) -> Item {
    let f = fairness::compare(groups);
    let differ = f.with(Status::Differs);
    if differ.is_empty() {
        let expected: Vec<&str> = f
            .with(Status::Expected)
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        let detail = if expected.is_empty() {
            format!("all {} compared settings", f.settings.len())
        } else {
            format!(
                "apart from the execution model's own: {}",
                expected.join(", ")
            )
        };
        return item(
            "trust-settings",
            "#fairness",
            State::Ok,
            "settings identical",
            detail,
        );
    }
    let list: Vec<String> = differ
        .iter()
        .map(|s| {
            let values: Vec<String> = s
                .values
                .iter()
                .map(|(api, v)| format!("{api} {}", v.join(" / ")))
                .collect();
            format!("{} ({})", s.name, values.join(", "))
        })
        .collect();
    let label = format!("{} setting(s) differ", differ.len());
    item(
        "trust-settings",
        "#fairness",
        State::Bad,
        &label,
        list.join("; "),
    )
}

fn money(groups: &[ApiRuns<'_>]) -> Item {
    let lines = super::money::lines(groups);
    let bad: Vec<String> = lines
        .iter()
        .filter(|l| l.bad)
        .map(|l| format!("{}: {}", l.run, l.text))
        .collect();
    if !bad.is_empty() {
        return item(
            "trust-money",
            "#money",
            State::Bad,
            "money NOT balanced",
            bad.join("; "),
        );
    }
    let counted: Vec<String> = runs(groups)
        .filter_map(|r| {
            let m = r.money.as_ref()?;
            Some(format!(
                "{} {} orders",
                run_name(r),
                fmt(m.orders as f64, Unit::Count)
            ))
        })
        .collect();
    if counted.len() < runs(groups).count() {
        return item(
            "trust-money",
            "#money",
            State::Unknown,
            "money not counted",
            "the gateway's ledger was not compared with the orders for every run".to_owned(),
        );
    }
    item(
        "trust-money",
        "#money",
        State::Ok,
        "money balanced",
        format!(
            "every live charge has one order and every order one charge ({})",
            counted.join(", ")
        ),
    )
}

/// The strip as an HTML list.
pub fn html(groups: &[ApiRuns<'_>], slo: Option<&Slo>) -> Markup {
    html! { ul class="trust" id="trust" aria-label="Can these numbers be trusted?" {
        @for i in items(groups, slo) {
            li class=(i.state.class()) id=(i.id) {
                span class="mark" aria-hidden="true" { (i.state.mark()) } " "
                a href=(i.href) { strong { (i.label) } } " "
                span class="d" { (i.detail) }
            }
        }
    } }
}

/// The strip as a Markdown list.
pub fn markdown(s: &mut String, groups: &[ApiRuns<'_>], slo: Option<&Slo>) {
    for i in items(groups, slo) {
        let _ = writeln!(s, "- {} **{}** — {}", i.state.mark(), i.label, i.detail);
    }
    s.push('\n');
}
