//! The objective's line in the verdict and its item in the trust strip: who met the service-level
//! objective (see `slo`), and by how much each API was inside or outside each bound.

use super::model::{ApiRuns, Unit, fmt};
use super::rich::{Rich, join};
use super::slo::{Judgement, Origin, Slo};
use super::tables::Span;
use super::trust_item::{Item, State};

/// `SLO p99 ≤ 2.53 s, 2xx ≥ 99 % of arrivals (default: …), over the plateau: reactive-api met
/// it (p99 1.9 s, 25 % inside; 2xx 99.6 %, 0.6 points above); blocking-api missed it (…).`
pub fn sentence(slo: &Slo, groups: &[ApiRuns<'_>], span: Span) -> Rich {
    let all = slo.judge(groups, span);
    let met: Vec<&str> = all.iter().filter(|j| j.met).map(|j| j.api).collect();
    let headline = match (met.len(), all.len()) {
        (1, 1) => format!("{} met it", met[0]),
        (0, 1) => format!("{} missed it", all[0].api),
        (2, 2) => "both APIs met it".to_owned(),
        (0, 2) => "neither API met it".to_owned(),
        (n, total) if n == total => format!("all {total} APIs met it"),
        (0, _) => "no API met it".to_owned(),
        _ => format!("only {} met it", met.join(" and ")),
    };
    let over = match span {
        Span::Plateau => "over the plateau",
        Span::Whole => "over the whole run",
    };
    let each = all.iter().map(|j| Rich::new().plain(margins(slo, j)));
    Rich::new()
        .strong(format!("SLO {slo}"))
        .plain(format!(" ({}), {over}: ", slo.origin_text()))
        .strong(headline)
        .plain(" — ")
        .then(join(each, "; "))
        .plain(".")
}

/// `reactive-api p99 1.90 s (25 % inside), 2xx 99.6 % (0.6 points above)`.
fn margins(slo: &Slo, j: &Judgement<'_>) -> String {
    let p = slo.percentile.name();
    let latency = if !j.latency_ms.is_finite() {
        format!("{p} not measured")
    } else if j.latency_ms <= slo.latency_ms {
        format!(
            "{p} {} ({:.0} % inside)",
            fmt(j.latency_ms, Unit::Millis),
            100.0 * (1.0 - j.latency_ms / slo.latency_ms)
        )
    } else {
        format!(
            "{p} {} ({} the bound)",
            fmt(j.latency_ms, Unit::Millis),
            times(j.latency_ms / slo.latency_ms)
        )
    };
    let points = j.success_pct - slo.success_pct;
    let success = if !points.is_finite() {
        "2xx not measured".to_owned()
    } else if points >= 0.0 {
        format!(
            "2xx {} ({points:.1} points above)",
            fmt(j.success_pct, Unit::Percent)
        )
    } else {
        format!(
            "2xx {} ({:.1} points short)",
            fmt(j.success_pct, Unit::Percent),
            -points
        )
    };
    format!("{} {latency}, {success}", j.api)
}

/// `3.0×`, `21×`.
fn times(r: f64) -> String {
    if r >= 10.0 {
        format!("{r:.0}×")
    } else {
        format!("{r:.1}×")
    }
}

/// The strip's item: met by every API (✓), missed by some (✗), or no objective (?).
pub fn trust_item(slo: Option<&Slo>, groups: &[ApiRuns<'_>], span: Span) -> Item {
    let Some(slo) = slo else {
        return Item {
            id: "trust-slo",
            href: "#slo",
            state: State::Unknown,
            label: "no SLO".to_owned(),
            detail: "the runs record no dependency latencies to derive one from; give --slo"
                .to_owned(),
        };
    };
    let all = slo.judge(groups, span);
    let missed: Vec<&str> = all.iter().filter(|j| !j.met).map(|j| j.api).collect();
    let origin = match slo.origin {
        Origin::Given => String::new(),
        Origin::CriticalPath(_) => format!(" ({})", slo.origin_text()),
    };
    let (state, label) = if missed.is_empty() {
        (State::Ok, "SLO met".to_owned())
    } else {
        (State::Bad, format!("SLO missed by {}", missed.join(", ")))
    };
    Item {
        id: "trust-slo",
        href: "#slo",
        state,
        label,
        detail: format!("{slo}{origin}"),
    }
}

/// The APIs that missed the objective, one line each (for `--fail-on-slo`).
pub fn missed(slo: &Slo, groups: &[ApiRuns<'_>], span: Span) -> Vec<String> {
    slo.judge(groups, span)
        .iter()
        .filter(|j| !j.met)
        .map(|j| format!("SLO MISSED ({slo}): {}", margins(slo, j)))
        .collect()
}
