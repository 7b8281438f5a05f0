//! The figures the verdict compares for each API (medians over its repeats) and the rule for
//! "kept up". Read by `verdict` (who kept up, the ratios) and `causes` (why).

use lab_results::{RunResults, Summary};

use super::drain::{drain, open_at_plateau_end};
use super::model::ApiRuns;
use super::tables::{Span, rates};

/// An API kept up when at least this share of the span's arrivals got a 2xx…
pub const KEPT_UP_2XX: f64 = 0.99;
/// …and its answers came at no less than this share of the offered rate (a queue that grows
/// over the plateau answers more slowly than requests arrive, even if every answer is a 201).
pub const KEPT_UP_RATE: f64 = 0.95;

/// The figures the verdict compares, medians over each API's repeats.
pub struct Facts<'g, 'a> {
    pub g: &'g ApiRuns<'a>,
    pub span: Span,
    pub offered_rps: f64,
    pub answered_rps: f64,
    pub orders_rps: f64,
    /// Share of the span's arrivals that got a 2xx.
    pub ok_share: f64,
    /// p99 latency, of the 201s when recorded (`.1`), else of every answer.
    pub p99: Option<(f64, bool)>,
    pub cpu_per_1000: Option<f64>,
    pub peak_rss: Option<f64>,
    pub kept_up: bool,
    /// Requests still open when the plateau ended (answered late or never).
    pub open_at_end: Option<f64>,
    /// Seconds from the last arrival to the last answer, and the answers in them.
    pub drain: Option<(f64, f64)>,
}

/// The span every API is judged on: the plateau when every run has one, else the whole run.
pub fn span(groups: &[ApiRuns<'_>]) -> Span {
    let all = || groups.iter().flat_map(|g| &g.runs);
    if all().all(|r| r.plateau.is_some()) {
        Span::Plateau
    } else {
        Span::Whole
    }
}

pub fn facts<'g, 'a>(g: &'g ApiRuns<'a>, span: Span) -> Facts<'g, 'a> {
    let med = |f: &dyn Fn(&RunResults) -> Option<f64>| g.spread(f).map(|s| s.median);
    let sum = |f: fn(&Summary) -> Option<f64>| med(&|r| span.of(r).and_then(f));
    let rate = |f: fn(&super::tables::Rates) -> f64| {
        med(&|r| rates(r, span).map(|x| f(&x))).unwrap_or(f64::NAN)
    };
    let (offered_rps, answered_rps) = (rate(|r| r.offered), rate(|r| r.completed));
    let ok_share = sum(|s| (s.offered > 0).then(|| (s.ok + s.replayed) as f64 / s.offered as f64))
        .unwrap_or(0.0);
    let ok_p99 = sum(|s| s.ok_latency_ms.map(|l| l.p99));
    let p99 = match ok_p99 {
        Some(v) => Some((v, true)),
        None => sum(|s| Some(s.latency_ms.p99)).map(|v| (v, false)),
    };
    Facts {
        g,
        span,
        offered_rps,
        answered_rps,
        orders_rps: rate(|r| r.orders),
        ok_share,
        p99,
        cpu_per_1000: sum(|s| s.cpu_seconds_per_1000_ok),
        peak_rss: sum(|s| s.peak_rss_bytes.map(|b| b as f64)),
        kept_up: ok_share >= KEPT_UP_2XX && answered_rps >= KEPT_UP_RATE * offered_rps,
        open_at_end: med(&|r| open_at_plateau_end(r).map(|n| n as f64)),
        drain: med(&|r| drain(r).map(|d| d.seconds))
            .zip(med(&|r| drain(r).map(|d| d.answers as f64))),
    }
}
