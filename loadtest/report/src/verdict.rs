//! The verdict at the top of the report, generated from the results: which API kept up with the
//! offered load, by how much the APIs differ (orders per second, p99, CPU per order, peak
//! memory), why (see `causes`; the figures compared are `facts`), and the caveats that apply.
//! Nothing in it is written by hand: change the results and the verdict changes with them.

use super::causes;
use super::facts::{Facts, KEPT_UP_RATE, facts, span};
use super::fairness::{self, Status};
use super::model::{ApiRuns, Unit, fmt};
use super::rich::{Rich, join};
use super::slo::Slo;
use super::slo_verdict;
use super::tables::Span;

/// The verdict, laid out by `html` and `markdown`.
pub struct Verdict {
    /// Who kept up (the first sentence, emphasised) and the ratios.
    pub lead: Rich,
    /// Who met the service-level objective, and by how much (`None` without one).
    pub slo: Option<Rich>,
    /// One sentence per cause found.
    pub why: Vec<Rich>,
    /// What limits the comparison.
    pub caveats: Vec<Rich>,
}

/// The verdict for the grouped runs (`None` without runs), judged against `slo` when given.
pub fn verdict(groups: &[ApiRuns<'_>], slo: Option<&Slo>) -> Option<Verdict> {
    let span = span(groups);
    let mut all: Vec<Facts<'_, '_>> = groups.iter().map(|g| facts(g, span)).collect();
    // Best first: alive before dead, kept up before not, then more orders per second.
    all.sort_by(|a, b| {
        died(a.g)
            .is_some()
            .cmp(&died(b.g).is_some())
            .then(b.kept_up.cmp(&a.kept_up))
            .then(b.orders_rps.total_cmp(&a.orders_rps))
    });
    let best = all.first()?;
    let closed = best.g.first()?.config.profile.model == "closed";
    let mut lead = if closed {
        Rich::new()
            .strong(format!(
                "{} finished the most orders per second in this closed-model run",
                best.g.api
            ))
            .plain(
                " (each client waits for its answer, so there is no offered load to keep up with).",
            )
    } else {
        who_kept_up(&all)
    };
    for other in &all[1..] {
        lead = match (died(best.g), died(other.g)) {
            (None, None) => lead.plain(" ").then(ratios(best, other)),
            _ => lead,
        };
    }
    for f in &all {
        if let Some(exit) = died(f.g) {
            lead = lead
                .plain(" ")
                .strong(format!("{} died mid-run", f.g.api))
                .plain(format!(
                    " — {}. It served nothing after that, so its latency, CPU and memory figures \
                     are a dead process's and are not compared.",
                    exit.describe()
                ));
        }
    }
    // Only stress profiles find a knee: the highest step rate that held.
    let knees: Vec<String> = all
        .iter()
        .filter_map(|f| {
            let k = f.g.spread(|r| r.knee_rps)?;
            Some(format!("{} {}", f.g.api, fmt(k.median, Unit::Rate)))
        })
        .collect();
    if !knees.is_empty() {
        lead = lead.plain(format!(
            " Stress knee (the highest step rate that held: ≤ 1 % errors, p99 ≤ 10 s): {}.",
            knees.join(", ")
        ));
    }
    // The causes of those that did not keep up come first: they are the answer to "why".
    let why = all
        .iter()
        .filter(|f| !f.kept_up)
        .chain(all.iter().filter(|f| f.kept_up))
        .flat_map(causes::causes)
        .collect::<Vec<_>>();
    Some(Verdict {
        lead,
        slo: slo.map(|slo| slo_verdict::sentence(slo, groups, best.span)),
        why,
        caveats: caveats(groups, &all),
    })
}

/// How the API's process ended mid-run, in the first of its runs that did.
fn died<'a>(g: &ApiRuns<'a>) -> Option<&'a lab_results::ApiExit> {
    g.runs.iter().find_map(|r| r.api_exit.as_ref())
}

fn names(of: &[&Facts<'_, '_>]) -> String {
    let n: Vec<&str> = of.iter().map(|f| f.g.api).collect();
    match n.as_slice() {
        [a, b] => format!("{a} and {b}"),
        _ => n.join(", "),
    }
}

fn who_kept_up(all: &[Facts<'_, '_>]) -> Rich {
    let (kept, not): (Vec<&Facts<'_, '_>>, Vec<&Facts<'_, '_>>) =
        all.iter().partition(|f| f.kept_up);
    let first = &all[0];
    let headline = match (kept.len(), not.len(), all.len()) {
        (_, 0, 1) => format!("{} kept up with the offered load.", first.g.api),
        (0, _, 1) => format!("{} did not keep up with the offered load.", first.g.api),
        (_, 0, 2) => "Both APIs kept up with the offered load.".to_owned(),
        (_, 0, n) => format!("All {n} APIs kept up with the offered load."),
        (0, ..) => format!(
            "{} kept up with the offered load; {} made the most orders.",
            if all.len() == 2 {
                "Neither API"
            } else {
                "No API"
            },
            first.g.api
        ),
        _ => format!(
            "{} kept up with the offered load; {} did not.",
            names(&kept),
            names(&not)
        ),
    };
    let over = match first.span {
        Span::Plateau => {
            let secs = first.g.first().and_then(|r| r.plateau.as_ref());
            format!(
                "the {:.0} s plateau",
                secs.map_or(f64::NAN, |p| p.duration_s)
            )
        }
        Span::Whole => "the whole run".to_owned(),
    };
    let shares = all.iter().map(|f| {
        Rich::new().plain(format!(
            "{} {}",
            f.g.api,
            fmt(100.0 * f.ok_share, Unit::Percent)
        ))
    });
    // A queue that grows: answers come more slowly than requests arrive, and the rest come late.
    let slow: Vec<String> = all
        .iter()
        .filter(|f| f.answered_rps < KEPT_UP_RATE * f.offered_rps)
        .map(|f| {
            let mut late = Vec::new();
            if let (Span::Plateau, Some(n)) = (f.span, f.open_at_end)
                && n > 0.0
            {
                late.push(format!(
                    "{} requests were open when the plateau ended",
                    fmt(n, Unit::Count)
                ));
            }
            if let Some((s, n)) = f.drain.filter(|d| d.0 > 0.0) {
                late.push(format!(
                    "{} answers came in the {s:.0} s after the last arrival",
                    fmt(n, Unit::Count)
                ));
            }
            let late = match late.as_slice() {
                [] => String::new(),
                l => format!(": {}", l.join(", and ")),
            };
            format!(
                " {} answered at {} of the offered rate{late}.",
                f.g.api,
                fmt(100.0 * f.answered_rps / f.offered_rps, Unit::Percent)
            )
        })
        .collect();
    Rich::new()
        .strong(headline)
        .plain(format!(
            " Offered: {} over {over}. 2xx: ",
            fmt(first.offered_rps, Unit::Rate)
        ))
        .then(join(shares, ", "))
        .plain(" of arrivals.")
        .plain(slow.concat())
}

/// `1.71×`, `3.6×`, `21×` (as precise as a reader needs), or `–` when the other figure is 0 or
/// missing.
fn times(a: f64, b: f64) -> String {
    let r = a / b;
    match r {
        r if !r.is_finite() => "–".to_owned(),
        r if r >= 10.0 => format!("{r:.0}×"),
        r if r >= 2.0 => format!("{r:.1}×"),
        r => format!("{r:.2}×"),
    }
}

/// `best` against `other`, each figure as one ratio ≥ 1 read in its own direction: `made 1.71×
/// the orders/s of blocking-api (119.0 vs 69.7), with a 7.1× lower p99 (7.51 vs 53.43 s), …`.
fn ratios(best: &Facts<'_, '_>, other: &Facts<'_, '_>) -> Rich {
    let (b, o) = (best.g.api, other.g.api);
    let mut parts = vec![format!(
        "{b} made {} the orders/s of {o} ({:.1} vs {:.1})",
        times(best.orders_rps, other.orders_rps),
        best.orders_rps,
        other.orders_rps,
    )];
    // Lower is better for every figure below.
    let mut pair =
        |what: &str, (less, more): (&str, &str), unit: Unit, x: Option<f64>, y: Option<f64>| {
            if let (Some(x), Some(y)) = (x, y) {
                // `1.12 vs 2.36 CPU-s per 1,000 orders`: the unit once, after both numbers.
                let (fx, fy) = (fmt(x, unit), fmt(y, unit));
                let (nx, ny) = match (fx.split_once(' '), fy.split_once(' ')) {
                    (Some((a, ua)), Some((b, ub))) if ua == ub => {
                        (a.to_owned(), format!("{b} {ub}"))
                    }
                    _ => (fx.clone(), fy.clone()),
                };
                let (ratio, word) = if x <= y {
                    (times(y, x), less)
                } else {
                    (times(x, y), more)
                };
                parts.push(format!("{ratio} {word} {what} ({nx} vs {ny})"));
            }
        };
    let ok_only = best.p99.is_some_and(|p| p.1) && other.p99.is_some_and(|p| p.1);
    pair(
        if ok_only { "p99 of the 201s" } else { "p99" },
        ("lower", "higher"),
        Unit::Millis,
        best.p99.map(|p| p.0),
        other.p99.map(|p| p.0),
    );
    pair(
        "CPU per order",
        ("less", "more"),
        Unit::Decimal("CPU-s per 1,000 orders"),
        best.cpu_per_1000,
        other.cpu_per_1000,
    );
    pair(
        "peak memory",
        ("less", "more"),
        Unit::Bytes,
        best.peak_rss,
        other.peak_rss,
    );
    let n = parts.len();
    let mut text = String::new();
    for (i, p) in parts.into_iter().enumerate() {
        text.push_str(match i {
            0 => "",
            1 => ", with ",
            i if i + 1 == n => " and ",
            _ => ", ",
        });
        if i == 1 {
            // "an 8.1× lower p99", "an 11× lower p99", "a 7.1× lower p99".
            let an = ["8", "11", "18"].iter().any(|d| p.starts_with(d));
            text.push_str(if an { "an " } else { "a " });
        }
        text.push_str(&p);
    }
    Rich::new().plain(text + ".")
}

fn caveats(groups: &[ApiRuns<'_>], all: &[Facts<'_, '_>]) -> Vec<Rich> {
    let runs = || groups.iter().flat_map(|g| &g.runs);
    let mut out = Vec::new();
    let mut say = |text: String| out.push(Rich::new().plain(text));
    for r in runs().filter(|r| !r.config.limits.limits_enforced) {
        say(format!(
            "{}: resource limits were NOT enforced",
            super::model::run_name(r)
        ));
    }
    for r in runs() {
        // The reason itself is in the trust strip, right below.
        if r.harness_bound.is_some() {
            say(format!(
                "{} was harness-bound: the rig, not the API, may have set its limit",
                super::model::run_name(r)
            ));
        }
    }
    if runs().any(|r| !r.invariants_hold()) {
        say("an end-of-run check failed (see Consistency checks)".to_owned());
    }
    let differ: Vec<String> = fairness::compare(groups)
        .with(Status::Differs)
        .iter()
        .map(|s| s.name.clone())
        .collect();
    if !differ.is_empty() {
        say(format!(
            "settings differ besides the execution model: {}",
            differ.join(", ")
        ));
    }
    if groups.iter().all(|g| g.runs.len() == 1) {
        say(
            "one run per API, so the spread between runs is unknown (--repeat N measures it)"
                .to_owned(),
        );
    }
    if all.iter().any(|f| f.p99.is_some_and(|p| !p.1)) {
        say("p99 covers every answer, fast refusals included (the 201s' own latency was not recorded)".to_owned());
    }
    if all.first().is_some_and(|f| f.span == Span::Whole) {
        say("the profile has no plateau, so the figures cover the whole run, ramps and drain included".to_owned());
    }
    let builds: Vec<String> = runs()
        .map(|r| r.environment.build_profile.clone())
        .collect();
    if builds.iter().any(|b| b == "debug") {
        say("the APIs were debug builds".to_owned());
    }
    out
}
