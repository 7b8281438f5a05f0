//! The prose sections of the HTML page: Little's law, fairness, configuration and environment,
//! consistency checks. "How every number was measured" lives in `method`.

use maud::{Markup, html};

use super::fairness::{self, Setting, Status};
use super::littles;
use super::model::{ApiRuns, Unit, by_api, cores, fmt, run_name};

pub use super::method::method;

pub fn littles_law(groups: &[ApiRuns<'_>]) -> Markup {
    let rows = littles::rows(groups);
    html! { section id="littles-law" {
        h2 { "Little's law: the thread-per-request ceiling" }
        @if rows.is_empty() {
            p { "No run carries a Little's-law bound (it applies to the blocking API only)." }
        } @else {
            p class="teach" {
                "A server that holds one thread for the whole of each request can finish at most "
                em { "threads ÷ time each request holds its thread" }
                " requests per second — here the sequential calls to the seller, risk and payment \
                 services — however fast its CPU is."
            }
            @for row in &rows {
                p class="ll" { (row.api) ": " (littles::sentence(row)) }
            }
            p class="note" {
                "The bound is drawn as a horizontal line on the rate chart. The reactive API holds no \
                 thread while it waits, so this bound does not apply to it; its ceiling is CPU, the \
                 database pool or the mocks."
            }
        }
    } }
}

/// A settings table with one column per API; rows take their class from their [`Status`].
fn settings_table(rows: &[&Setting], groups: &[ApiRuns<'_>]) -> Markup {
    html! { table class="settings" {
        thead { tr {
            th { "setting" }
            @for g in groups { th class="api" style={ "--api:" (g.colour) } { (g.api) } }
        } }
        tbody {
            @for row in rows {
                @let class = match row.status {
                    Status::Same => None,
                    Status::Expected => Some("expected"),
                    Status::Differs => Some("differs"),
                };
                tr class=[class] {
                    th scope="row" { code { (row.name) } }
                    @for (_, v) in &row.values { td { (v.join(" / ")) } }
                }
            }
        }
    } }
}

pub fn fairness(groups: &[ApiRuns<'_>]) -> Markup {
    let f = fairness::compare(groups);
    let (differing, expected) = (f.with(Status::Differs), f.with(Status::Expected));
    html! { section id="fairness" {
        h2 { "Fairness: what differs besides the execution model" }
        @if differing.is_empty() {
            p class="ok" {
                "All " (f.settings.len()) " compared settings (API settings, mock latencies, limits, \
                 load profile, generator settings, build and machine) are the same for every run, \
                 apart from those the execution model itself implies (below)."
            }
        } @else {
            div class="banner warn" id="unfair" {
                strong { (differing.len()) " setting(s) differ between the runs" }
                " other than the execution model; each one is a caveat on the comparison."
            }
            (settings_table(&differing, groups))
        }
        @if !expected.is_empty() {
            p class="note" {
                "Expected to differ (they belong to one execution model, or must differ for two \
                 processes to share a machine):"
            }
            (settings_table(&expected, groups))
        }
    } }
}

pub fn configuration(groups: &[ApiRuns<'_>]) -> Markup {
    let limits = by_api(groups, |run| {
        let l = &run.config.limits;
        let what = [
            l.cpu_cores.map(cores),
            l.memory_bytes.map(|b| fmt(b as f64, Unit::Bytes)),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ");
        let what = if what.is_empty() {
            "no limit".to_owned()
        } else {
            what
        };
        let note = if l.note.is_empty() {
            String::new()
        } else {
            format!(" — {}", l.note)
        };
        Some((
            l.limits_enforced,
            format!("{what} via {}{note}", l.mechanism),
        ))
    });
    let f = fairness::compare(groups);
    html! { section id="configuration" {
        h2 { "Configuration and environment" }
        // Limits first: they decide whether the numbers mean anything.
        h3 { "Resource limits on the API process" }
        ul class="limits" {
            @for (who, (enforced, what)) in &limits {
                li {
                    (who) ": "
                    @if *enforced {
                        span class="pill ok" { "enforced" }
                    } @else {
                        span class="pill bad" { "NOT enforced" }
                    }
                    " " (what)
                }
            }
        }
        @if let Some(run) = groups.first().and_then(|g| g.runs.first()) {
            h3 { "Load profile" }
            table class="settings" {
                thead { tr {
                    th { "phase" } th { "start" } th { "length" } th { "rate" } th { "arrivals" }
                } }
                tbody {
                    @for p in &run.config.profile.phases {
                        tr {
                            th scope="row" { (p.name) }
                            td { (p.start_s) " s" }
                            td { (p.duration_s) " s" }
                            td { (p.from_rate) " → " (p.to_rate) " req/s" }
                            td { (fmt(p.arrivals as f64, Unit::Count)) }
                        }
                    }
                }
            }
        }
        h3 { "Every setting, per API" }
        p class="note" {
            "Highlighted: differs between runs (yellow: a caveat on the comparison; grey: implied by \
             the execution model)."
        }
        (settings_table(&f.settings.iter().collect::<Vec<_>>(), groups))
    } }
}

pub fn invariants(groups: &[ApiRuns<'_>]) -> Markup {
    let runs: Vec<_> = groups.iter().flat_map(|g| &g.runs).collect();
    html! { section id="checks" {
        h2 { "Consistency checks" }
        @if runs.iter().all(|r| r.invariants.is_empty()) {
            p { "No end-of-run checks were recorded." }
        } @else {
            table class="settings" {
                thead { tr { th { "run" } th { "check" } th { "result" } th { "detail" } } }
                tbody {
                    @for r in &runs {
                        @for c in &r.invariants {
                            @let (class, word) = match c.ok {
                                Some(true) => ("ok", "held"),
                                Some(false) => ("bad", "VIOLATED"),
                                None => ("unk", "not checked"),
                            };
                            tr {
                                td { (run_name(r)) }
                                td { (c.name) }
                                td { span class={ "pill " (class) } { (word) } }
                                td { (c.detail) }
                            }
                        }
                        @if let Some(g) = &r.after_give_up {
                            tr {
                                td { (run_name(r)) }
                                td { "orders finished after their client gave up (by key)" }
                                td { span class="pill unk" { "counted" } }
                                td { (g.detail) }
                            }
                        }
                    }
                }
            }
        }
    } }
}
