//! A dependency slowed down in the middle of a run — the equivalent of throttling the broker's or
//! the gateway's container during a test — marked on the timeline. This module holds the plan as
//! recorded in the results (and what it does to Little's law); the lab carries it out through
//! mock-deps' admin API (`loadtest/cli/src/inject.rs`).

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::{LittlesLaw, MockLatencies, TimelineMark};

/// `DEP=MS@START+DURATION`: dependency `DEP` answers in `MS` from `START` for `DURATION` seconds
/// of the measured run. Recorded in the run's configuration (`results.json`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Injection {
    pub dependency: Dep,
    pub latency_ms: u64,
    pub start_s: f64,
    pub duration_s: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dep {
    Seller,
    Risk,
    Payment,
    /// The events' broker (NATS), slowed through the latency proxy in front of it: only
    /// `--scenario events`, which starts that proxy, carries it out.
    Broker,
}

impl Dep {
    pub fn name(self) -> &'static str {
        match self {
            Dep::Seller => "seller",
            Dep::Risk => "risk",
            Dep::Payment => "payment",
            Dep::Broker => "broker",
        }
    }

    fn of(self, l: MockLatencies) -> u64 {
        match self {
            Dep::Seller => l.seller,
            Dep::Risk => l.risk,
            Dep::Payment => l.payment,
            // Not a mock: its delay before the slowdown is the run's broker round trip.
            Dep::Broker => 0,
        }
    }

    /// `l` with this dependency's latency set to `ms`.
    pub fn with(self, mut l: MockLatencies, ms: u64) -> MockLatencies {
        match self {
            Dep::Seller => l.seller = ms,
            Dep::Risk => l.risk = ms,
            Dep::Payment => l.payment = ms,
            Dep::Broker => {}
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
            "broker" => Dep::Broker,
            other => bail!("--inject: unknown dependency {other:?} (seller, risk, pay or broker)"),
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

    /// The same injection with its times multiplied by `scale` (`--duration-scale`): what
    /// [`Injection::parse`] with that scale gives.
    pub fn scaled(self, scale: f64) -> Injection {
        Injection {
            start_s: self.start_s * scale,
            duration_s: self.duration_s * scale,
            ..self
        }
    }

    /// The two timeline markers: the change and the recovery.
    pub fn marks(&self, base: MockLatencies) -> Vec<TimelineMark> {
        let (name, from, to) = (
            self.dependency.name(),
            self.dependency.of(base),
            self.latency_ms,
        );
        vec![
            TimelineMark {
                t: self.start_s,
                label: format!("{name} latency {from}→{to} ms"),
            },
            TimelineMark {
                t: self.start_s + self.duration_s,
                label: format!("{name} latency {to}→{from} ms"),
            },
        ]
    }

    /// Little's law when this slowdown overlapped the plateau `(start_s, end_s)`: a slowdown that
    /// covered the whole plateau moves the bound to the slowed critical path; a partial one keeps
    /// the configured bound and says what the slowed one is. Either way the note says so.
    pub fn adjust_littles_law(
        &self,
        ll: &mut LittlesLaw,
        base: MockLatencies,
        plateau: (f64, f64),
    ) {
        if self.dependency == Dep::Broker {
            // Not on the mocks' critical path that Little's law here is about.
            return;
        }
        let (start, end) = plateau;
        let overlap = (end.min(self.start_s + self.duration_s) - start.max(self.start_s)).max(0.0);
        if overlap <= 0.0 || end <= start {
            return;
        }
        let slowed_ms = self
            .dependency
            .with(base, self.latency_ms)
            .critical_path_ms() as f64;
        if slowed_ms <= 0.0 {
            return;
        }
        let slowed_bound = ll.threads as f64 / (slowed_ms / 1000.0);
        let dep = self.dependency.name();
        if overlap >= end - start - 1e-6 {
            ll.note = Some(format!(
                "{dep} answered in {} ms instead of {} ms for the whole plateau (--inject): the bound uses \
                 the slowed critical path, {slowed_ms:.0} ms instead of {:.0} ms",
                self.latency_ms,
                self.dependency.of(base),
                ll.critical_path_ms,
            ));
            ll.critical_path_ms = slowed_ms;
            ll.bound_rps = slowed_bound;
        } else {
            ll.note = Some(format!(
                "{dep} answered in {} ms instead of {} ms for {overlap:.0} s of the {:.0} s plateau \
                 (--inject): with the slowed critical path ({slowed_ms:.0} ms) the bound is \
                 {slowed_bound:.1} orders/s; the measured plateau mixes both",
                self.latency_ms,
                self.dependency.of(base),
                end - start,
            ));
        }
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
        let labels: Vec<String> = i.marks(base).into_iter().map(|e| e.label).collect();
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
    fn littles_law_follows_a_slowdown_over_the_plateau() {
        let base = MockLatencies {
            seller: 200,
            risk: 1000,
            payment: 1000,
        };
        let configured = LittlesLaw {
            threads: 200,
            critical_path_ms: 2200.0,
            bound_rps: 200.0 / 2.2,
            measured_plateau_rps: Some(30.0),
            note: None,
        };
        // Covers the whole plateau: the bound is 200 ÷ 6.2 s.
        let mut ll = configured.clone();
        Injection::parse("pay=5000@30+30", 1.0)
            .unwrap()
            .adjust_littles_law(&mut ll, base, (30.0, 60.0));
        assert_eq!(ll.critical_path_ms, 6200.0);
        assert!((ll.bound_rps - 200.0 / 6.2).abs() < 1e-9);
        assert!(ll.note.as_deref().unwrap().contains("whole plateau"));
        // Half of it: the configured bound stays, the note names the slowed one.
        let mut ll = configured.clone();
        Injection::parse("pay=5000@45+60", 1.0)
            .unwrap()
            .adjust_littles_law(&mut ll, base, (30.0, 60.0));
        assert_eq!((ll.critical_path_ms, ll.bound_rps), (2200.0, 200.0 / 2.2));
        let note = ll.note.unwrap();
        assert!(
            note.contains("15 s of the 30 s plateau") && note.contains("32.3 orders/s"),
            "{note}"
        );
        // Outside the plateau: untouched.
        let mut ll = configured.clone();
        Injection::parse("pay=5000@60+10", 1.0)
            .unwrap()
            .adjust_littles_law(&mut ll, base, (30.0, 60.0));
        assert_eq!(ll, configured);
    }

    #[test]
    fn scaling_after_parsing_is_parsing_with_the_scale() {
        for scale in [0.05, 0.5, 1.0, 3.0] {
            assert_eq!(
                Injection::parse("pay=5000@30+30", 1.0)
                    .unwrap()
                    .scaled(scale),
                Injection::parse("pay=5000@30+30", scale).unwrap()
            );
        }
    }

    #[test]
    fn the_broker_is_not_a_mock() {
        let i = Injection::parse("broker=3000@10+20", 0.5).unwrap();
        assert_eq!(
            (i.dependency, i.latency_ms, i.start_s),
            (Dep::Broker, 3000, 5.0)
        );
        let base = MockLatencies {
            seller: 200,
            risk: 1000,
            payment: 1000,
        };
        assert_eq!(Dep::Broker.with(base, 3000), base);
        let mut ll = LittlesLaw {
            threads: 200,
            critical_path_ms: 2200.0,
            bound_rps: 200.0 / 2.2,
            measured_plateau_rps: None,
            note: None,
        };
        let before = ll.clone();
        i.adjust_littles_law(&mut ll, base, (0.0, 60.0));
        assert_eq!(ll, before, "the broker is not on the mocks' critical path");
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
