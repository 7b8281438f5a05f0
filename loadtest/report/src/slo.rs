//! The service-level objective the verdict judges each API by, k6-threshold style: a latency
//! percentile bound and a success share, `p99<=2.5s,success>=99%`.
//!
//! "Kept up" alone says nothing about latency: an API that answers every request with a 201 after
//! 7.5 s keeps up with the offered rate. The objective adds what a user of the API would ask for.
//! Without `--slo`, it is derived from the run's own floor — the sequential critical path of the
//! mocked dependencies, which no answer can beat — as p99 ≤ floor × [`DEFAULT_HEADROOM`] and
//! 2xx ≥ [`DEFAULT_SUCCESS_PCT`] of the arrivals, and the report prints how it was derived.
//!
//! Both figures are read over the span the verdict judges (the plateau, else the whole run):
//! the percentile of every answer to its arrivals, late ones included, from intended send time;
//! the success share is 2xx ÷ arrivals, the report's one denominator.

use std::fmt::{Display, Formatter};

use lab_results::{LatencyPercentiles, RunResults};

use super::model::{ApiRuns, Unit, fmt};
use super::tables::Span;

/// p99 bound of the default objective, as a multiple of the critical path.
pub const DEFAULT_HEADROOM: f64 = 1.15;
/// Success share of the default objective.
pub const DEFAULT_SUCCESS_PCT: f64 = 99.0;

/// A latency percentile an objective may bound: those every summary records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Percentile {
    P50,
    P90,
    P99,
    P999,
}

impl Percentile {
    fn parse(s: &str) -> Option<Percentile> {
        Some(match s {
            "p50" => Percentile::P50,
            "p90" => Percentile::P90,
            "p99" => Percentile::P99,
            "p99.9" => Percentile::P999,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Percentile::P50 => "p50",
            Percentile::P90 => "p90",
            Percentile::P99 => "p99",
            Percentile::P999 => "p99.9",
        }
    }

    pub fn of(self, l: &LatencyPercentiles) -> f64 {
        match self {
            Percentile::P50 => l.p50,
            Percentile::P90 => l.p90,
            Percentile::P99 => l.p99,
            Percentile::P999 => l.p999,
        }
    }
}

/// Where an objective came from, said beside it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Origin {
    /// `--slo`.
    Given,
    /// Derived from the critical path (ms) of the mocked dependencies.
    CriticalPath(f64),
}

/// A latency bound and a success share; an API meets the objective when it holds both.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slo {
    pub percentile: Percentile,
    /// The bound on that percentile, ms.
    pub latency_ms: f64,
    /// Least share of the arrivals answered with a 2xx, % (0–100).
    pub success_pct: f64,
    pub origin: Origin,
}

/// Why an objective could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SloError {
    #[error(
        "--slo {0:?}: expected PERCENTILE<=DURATION,success>=SHARE%, e.g. p99<=2.5s,success>=99%"
    )]
    Syntax(String),
    #[error("--slo: {0:?} is not a duration (e.g. 2.5s, 800ms)")]
    Duration(String),
    #[error("--slo: {0:?} is not a share between 0 and 100 % (e.g. 99%)")]
    Share(String),
    #[error("--slo: {0} is given twice")]
    Twice(&'static str),
}

impl Slo {
    /// Parses `p99<=2.5s,success>=99%`: a latency term (p50, p90, p99 or p99.9, in `s` or `ms`)
    /// and a success term, in either order, both required.
    pub fn parse(spec: &str) -> Result<Slo, SloError> {
        let syntax = || SloError::Syntax(spec.to_owned());
        let (mut latency, mut success) = (None, None);
        for term in spec.split(',').map(|t| t.trim().replace(' ', "")) {
            if let Some(share) = term.strip_prefix("success>=") {
                let pct = share
                    .strip_suffix('%')
                    .and_then(|n| n.parse::<f64>().ok())
                    .filter(|p| (0.0..=100.0).contains(p))
                    .ok_or_else(|| SloError::Share(share.to_owned()))?;
                if success.replace(pct).is_some() {
                    return Err(SloError::Twice("success"));
                }
            } else if let Some((p, bound)) = term.split_once("<=") {
                let p = Percentile::parse(p).ok_or_else(syntax)?;
                let ms = duration_ms(bound).ok_or_else(|| SloError::Duration(bound.to_owned()))?;
                if latency.replace((p, ms)).is_some() {
                    return Err(SloError::Twice("the latency bound"));
                }
            } else {
                return Err(syntax());
            }
        }
        let ((percentile, latency_ms), success) = latency.zip(success).ok_or_else(syntax)?;
        Ok(Slo {
            percentile,
            latency_ms,
            success_pct: success,
            origin: Origin::Given,
        })
    }

    /// The default for a run: p99 ≤ its critical path × [`DEFAULT_HEADROOM`], 2xx ≥
    /// [`DEFAULT_SUCCESS_PCT`]. `None` when the run does not record its dependency latencies.
    pub fn default_for(run: &RunResults) -> Option<Slo> {
        let floor = run.config.mock_latency_ms?.critical_path_ms() as f64;
        (floor > 0.0).then_some(Slo {
            percentile: Percentile::P99,
            latency_ms: floor * DEFAULT_HEADROOM,
            success_pct: DEFAULT_SUCCESS_PCT,
            origin: Origin::CriticalPath(floor),
        })
    }

    /// How the objective was set, for the page: `default: critical path 2.20 s × 1.15`.
    pub fn origin_text(&self) -> String {
        match self.origin {
            Origin::Given => "--slo".to_owned(),
            Origin::CriticalPath(ms) => format!(
                "default: critical path {} × {DEFAULT_HEADROOM}",
                fmt(ms, Unit::Millis)
            ),
        }
    }
}

/// `2.5s`, `800ms`, `2s` → ms.
fn duration_ms(s: &str) -> Option<f64> {
    let (n, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1.0)
    } else {
        (s.strip_suffix('s')?, 1000.0)
    };
    n.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v * scale)
}

impl Display for Slo {
    /// `p99 ≤ 2.53 s, 2xx ≥ 99 % of arrivals`.
    fn fmt(&self, f: &mut Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ≤ {}, 2xx ≥ {} % of arrivals",
            self.percentile.name(),
            fmt(self.latency_ms, Unit::Millis),
            self.success_pct
        )
    }
}

/// How one API fared against the objective (medians over its repeats).
#[derive(Debug, Clone)]
pub struct Judgement<'a> {
    pub api: &'a str,
    /// The bounded percentile, ms.
    pub latency_ms: f64,
    /// 2xx ÷ arrivals, %.
    pub success_pct: f64,
    pub met: bool,
}

impl Slo {
    /// Each API against the objective over `span`; an API without the figures misses it.
    pub fn judge<'a>(&self, groups: &[ApiRuns<'a>], span: Span) -> Vec<Judgement<'a>> {
        groups
            .iter()
            .map(|g| {
                let med = |f: &dyn Fn(&lab_results::Summary) -> Option<f64>| {
                    g.spread(|r| span.of(r).and_then(f))
                        .map_or(f64::NAN, |s| s.median)
                };
                let latency_ms =
                    med(&|s| (s.completed > 0).then(|| self.percentile.of(&s.latency_ms)));
                let success_pct = med(&|s| {
                    (s.offered > 0).then(|| 100.0 * (s.ok + s.replayed) as f64 / s.offered as f64)
                });
                Judgement {
                    api: g.api,
                    latency_ms,
                    success_pct,
                    met: latency_ms <= self.latency_ms && success_pct >= self.success_pct,
                }
            })
            .collect()
    }

    /// The objective given, else the default of the first run (`None` when neither exists).
    pub fn given_or_default(given: Option<&Slo>, groups: &[ApiRuns<'_>]) -> Option<Slo> {
        given
            .copied()
            .or_else(|| groups.first()?.first().and_then(Slo::default_for))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_k6_style_spec_in_either_order() {
        let slo = Slo::parse("p99<=2.5s,success>=99%").expect("valid");
        assert_eq!(
            (slo.percentile, slo.latency_ms, slo.success_pct, slo.origin),
            (Percentile::P99, 2500.0, 99.0, Origin::Given)
        );
        let slo = Slo::parse(" success >= 99.5% , p99.9<=800ms").expect("valid");
        assert_eq!(
            (slo.percentile, slo.latency_ms, slo.success_pct),
            (Percentile::P999, 800.0, 99.5)
        );
        assert_eq!(slo.to_string(), "p99.9 ≤ 800 ms, 2xx ≥ 99.5 % of arrivals");
    }

    #[test]
    fn rejects_what_it_cannot_read() {
        let err = |s: &str| Slo::parse(s).expect_err(s);
        assert!(
            matches!(err("p99<=2.5s"), SloError::Syntax(_)),
            "success is required"
        );
        assert!(matches!(err("p98<=2s,success>=99%"), SloError::Syntax(_)));
        assert!(matches!(err("p99<2s,success>=99%"), SloError::Syntax(_)));
        assert!(matches!(err("p99<=2,success>=99%"), SloError::Duration(_)));
        assert!(matches!(
            err("p99<=-1s,success>=99%"),
            SloError::Duration(_)
        ));
        assert!(matches!(err("p99<=2s,success>=99"), SloError::Share(_)));
        assert!(matches!(err("p99<=2s,success>=101%"), SloError::Share(_)));
        assert_eq!(
            err("p99<=2s,p90<=1s,success>=9%"),
            SloError::Twice("the latency bound")
        );
        assert!(err("").to_string().contains("e.g. p99<=2.5s,success>=99%"));
    }
}
