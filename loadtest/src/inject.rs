//! A dependency slowed down in the middle of a run — the equivalent of throttling the broker's or
//! the gateway's container during a test — through mock-deps' admin API, marked on the timeline.

use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::results::{Event, MockLatencies};
use crate::run::set_mock_latencies;

/// `DEP=MS@START+DURATION`: dependency `DEP` answers in `MS` from `START` for `DURATION` seconds
/// of the measured run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Injection {
    pub dependency: Dep,
    pub latency_ms: u64,
    pub start_s: f64,
    pub duration_s: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dep {
    Seller,
    Risk,
    Payment,
}

impl Dep {
    fn name(self) -> &'static str {
        match self {
            Dep::Seller => "seller",
            Dep::Risk => "risk",
            Dep::Payment => "payment",
        }
    }

    fn of(self, l: MockLatencies) -> u64 {
        match self {
            Dep::Seller => l.seller,
            Dep::Risk => l.risk,
            Dep::Payment => l.payment,
        }
    }

    fn with(self, mut l: MockLatencies, ms: u64) -> MockLatencies {
        match self {
            Dep::Seller => l.seller = ms,
            Dep::Risk => l.risk = ms,
            Dep::Payment => l.payment = ms,
        }
        l
    }
}

impl Injection {
    /// Parses the spec; times are multiplied by `scale` like the profile's phases.
    pub fn parse(spec: &str, scale: f64) -> Result<Injection> {
        let usage =
            || format!("--inject {spec:?}: expected DEP=MS@START+DURATION, e.g. pay=5000@30+30");
        let (dep, rest) = spec.split_once('=').with_context(usage)?;
        let (ms, window) = rest.split_once('@').with_context(usage)?;
        let (start, duration) = window.split_once('+').with_context(usage)?;
        let dependency = match dep.trim() {
            "seller" => Dep::Seller,
            "risk" => Dep::Risk,
            "pay" | "payment" => Dep::Payment,
            other => bail!("--inject: unknown dependency {other:?} (seller, risk or pay)"),
        };
        let num = |s: &str| s.trim().parse::<f64>().with_context(usage);
        let (start_s, duration_s) = (num(start)? * scale, num(duration)? * scale);
        if start_s < 0.0 || duration_s <= 0.0 {
            bail!("{}", usage());
        }
        Ok(Injection {
            dependency,
            latency_ms: ms.trim().parse().with_context(usage)?,
            start_s,
            duration_s,
        })
    }

    /// The two timeline markers: the change and the recovery.
    pub fn events(&self, base: MockLatencies) -> Vec<Event> {
        let (name, from, to) = (
            self.dependency.name(),
            self.dependency.of(base),
            self.latency_ms,
        );
        vec![
            Event {
                t: self.start_s,
                label: format!("{name} latency {from}→{to} ms"),
            },
            Event {
                t: self.start_s + self.duration_s,
                label: format!("{name} latency {to}→{from} ms"),
            },
        ]
    }

    /// Sleeps to the start, slows the dependency, sleeps the duration, restores it.
    pub async fn apply(self, deps_url: String, base: MockLatencies) -> Result<()> {
        tokio::time::sleep(Duration::from_secs_f64(self.start_s)).await;
        set_mock_latencies(&deps_url, self.dependency.with(base, self.latency_ms)).await?;
        tokio::time::sleep(Duration::from_secs_f64(self.duration_s)).await;
        set_mock_latencies(&deps_url, base).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_scales() {
        let i = Injection::parse("pay=5000@30+30", 0.5).unwrap();
        assert_eq!(
            (i.dependency, i.latency_ms, i.start_s, i.duration_s),
            (Dep::Payment, 5000, 15.0, 15.0)
        );
        let base = MockLatencies {
            seller: 200,
            risk: 1000,
            payment: 1000,
        };
        let labels: Vec<String> = i.events(base).into_iter().map(|e| e.label).collect();
        assert_eq!(
            labels,
            [
                "payment latency 1000→5000 ms",
                "payment latency 5000→1000 ms"
            ]
        );
        assert_eq!(Dep::Payment.with(base, 5000).payment, 5000);
    }

    #[test]
    fn refuses_malformed_specs() {
        for bad in [
            "pay",
            "pay=5000",
            "pay=5000@30",
            "db=1@1+1",
            "pay=x@1+1",
            "pay=1@1+0",
        ] {
            assert!(Injection::parse(bad, 1.0).is_err(), "{bad}");
        }
    }
}
