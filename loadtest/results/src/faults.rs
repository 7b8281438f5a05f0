//! Faults injected during a run (`--faults`), for the money-safety scenario: payment failures
//! throughout (mock-deps' `error_rate`, `hang_rate`, `charged_error_rate`, and its `answer_fault`
//! `cut`: charged, then the answer cut mid-body), a `kill -9` of the API
//! (restarted by the lab with the same settings), a rolling restart of the API (SIGTERM, the old
//! process still sent to while it drains, the new one started on its port), an immediate restart
//! of PostgreSQL, and three
//! outages with a length: PostgreSQL frozen (the latency proxy in front of it stops moving bytes),
//! slow uploads (connections that send an order's headers and hold its body back) and the payment
//! gateway unreachable (mock-deps' pay, lookup and void hang), and a broker whose acknowledgements
//! are slow (the API publishing through its outbox to a NATS behind a latency proxy). The plan is
//! recorded in the run's configuration; what happened, and when, is on the run's timeline.
//!
//! The lab carries the plan out (`loadtest/cli/src/faults/`); this module parses and describes it.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// How long the API stays down after its `kill -9` unless the spec says otherwise, seconds.
pub const DEFAULT_DOWN_S: f64 = 2.0;

/// `pay-error=R,pay-hang=R,pay-charged-error=R,pay-cut=R,hang-ms=MS,kill-api@S[+DOWN],
/// rolling-restart@S,restart-db@S,db-freeze@S+LEN,slow-uploads=N@S+LEN,gateway-down@S+LEN,
/// broker-ack=MS@S+LEN`, any subset, any
/// order. Times are
/// seconds into the measured run, multiplied by `--duration-scale` like the profile's phases; the
/// API's time down and an outage's length are not scaled (they are the fault's size).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct FaultPlan {
    /// Share of pay requests answered 503 (no charge), throughout the run.
    pub payment_error_rate: f64,
    /// Share of pay requests that hang (no charge) for `hang_ms`.
    pub payment_hang_rate: f64,
    /// Share of pay requests charged, then answered 500.
    pub payment_charged_error_rate: f64,
    /// Share of pay requests charged, then answered with half a body and the connection closed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub payment_cut_rate: f64,
    /// How long a hung pay request hangs before mock-deps answers 504 (`None`: mock-deps' own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hang_ms: Option<u64>,
    /// `kill -9` of the API at this time…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_api_at_s: Option<f64>,
    /// …started again this long after.
    #[serde(default)]
    pub api_down_s: f64,
    /// The API restarted as a platform does at this time: SIGTERM, the load still sent to the old
    /// process while it drains, the new one started on the same port once the old stopped
    /// listening (`loadtest/cli/src/faults/rolling_restart.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_restart_at_s: Option<f64>,
    /// `pg_ctl restart -m immediate` of the lab's PostgreSQL at this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_db_at_s: Option<f64>,
    /// The latency proxy between the API and PostgreSQL stops moving bytes (and accepting
    /// connections) for the window: to the API, a database that froze.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_freeze: Option<Outage>,
    /// This many connections send an order's headers (with its `Content-Length`) and then hold
    /// the body back for the window; closed at its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_uploads: Option<SlowUploads>,
    /// mock-deps' payment gateway (pay, lookup, void) hangs for the window: unreachable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_down: Option<Outage>,
    /// The API runs with `EVENTS_MODE=outbox` against a NATS behind a latency proxy, which adds
    /// `ack_ms` to every round trip for the window: each JetStream acknowledgement that long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_ack: Option<BrokerAck>,
}

fn is_zero(rate: &f64) -> bool {
    *rate == 0.0
}

/// A fault with a length: from `at_s` (seconds into the measured run) for `for_s` seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Outage {
    pub at_s: f64,
    pub for_s: f64,
}

impl Outage {
    /// The window starting `scale` times later, as long.
    fn scaled(self, scale: f64) -> Outage {
        Outage {
            at_s: self.at_s * scale,
            ..self
        }
    }

    /// The end of the window, seconds into the measured run.
    pub fn end_s(&self) -> f64 {
        self.at_s + self.for_s
    }
}

/// `slow-uploads=N@S+LEN`: `connections` held open during `window`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SlowUploads {
    pub connections: u32,
    pub window: Outage,
}

/// `broker-ack=MS@S+LEN`: every round trip to NATS takes `ack_ms` longer during `window`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BrokerAck {
    pub ack_ms: u64,
    pub window: Outage,
}

/// Label prefixes of the timeline marks of a fault (the report's recovery times start there).
pub const KILL_LABEL: &str = "kill -9 of the API";
pub const ROLLING_RESTART_LABEL: &str = "rolling restart of the API";
/// A rolling restart's next timeline marks: the old process's listener closed, the new process ready.
pub const OLD_API_CLOSED_LABEL: &str = "the old API stopped listening";
pub const API_READY_LABEL: &str = "API ready again";
pub const DB_RESTART_LABEL: &str = "PostgreSQL restart -m immediate";
pub const DB_FREEZE_LABEL: &str = "PostgreSQL frozen";
pub const SLOW_UPLOADS_LABEL: &str = "slow uploads";
pub const GATEWAY_DOWN_LABEL: &str = "payment gateway unreachable";
pub const BROKER_ACK_LABEL: &str = "broker acknowledgements slowed";

impl FaultPlan {
    /// Parses the spec (see [`FaultPlan`]); times are multiplied by `scale`.
    pub fn parse(spec: &str, scale: f64) -> Result<FaultPlan> {
        let usage = || {
            format!(
                "--faults {spec:?}: expected e.g. pay-error=0.05,pay-hang=0.01,pay-charged-error=0.02,\
                 hang-ms=8000,kill-api@20+2,rolling-restart@20,restart-db@40,db-freeze@20+20,slow-uploads=300@20+30,\
                 gateway-down@20+30,broker-ack=7000@20+30"
            )
        };
        let mut plan = FaultPlan {
            api_down_s: DEFAULT_DOWN_S,
            ..FaultPlan::default()
        };
        let seconds = |s: &str| -> Result<f64> {
            let v: f64 = s.trim().parse().with_context(usage)?;
            if !(v.is_finite() && v >= 0.0) {
                bail!("{}", usage());
            }
            Ok(v)
        };
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            // `name@S+LEN` and `name=N@S+LEN` are outages; a plain `name=VALUE` a setting.
            if let Some((head, at)) = part.split_once('@') {
                let outage = || -> Result<Outage> {
                    let (start, len) = at.split_once('+').with_context(usage)?;
                    Ok(Outage {
                        at_s: seconds(start)? * scale,
                        for_s: seconds(len)?,
                    })
                };
                match head
                    .split_once('=')
                    .map_or((head, None), |(n, v)| (n, Some(v)))
                {
                    ("kill-api", None) => {
                        let (start, down) = at.split_once('+').unwrap_or((at, ""));
                        plan.kill_api_at_s = Some(seconds(start)? * scale);
                        if !down.is_empty() {
                            plan.api_down_s = seconds(down)?;
                        }
                    }
                    ("rolling-restart", None) => {
                        plan.rolling_restart_at_s = Some(seconds(at)? * scale)
                    }
                    ("restart-db", None) => plan.restart_db_at_s = Some(seconds(at)? * scale),
                    ("db-freeze", None) => plan.db_freeze = Some(outage()?),
                    ("gateway-down", None) => plan.gateway_down = Some(outage()?),
                    ("slow-uploads", Some(n)) => {
                        let connections: u32 = n.trim().parse().with_context(usage)?;
                        if connections == 0 {
                            bail!("--faults: slow-uploads needs at least one connection");
                        }
                        plan.slow_uploads = Some(SlowUploads {
                            connections,
                            window: outage()?,
                        });
                    }
                    ("broker-ack", Some(ms)) => {
                        let ack_ms: u64 = ms.trim().parse().with_context(usage)?;
                        if ack_ms == 0 {
                            bail!("--faults: broker-ack needs a delay of at least 1 ms");
                        }
                        plan.broker_ack = Some(BrokerAck {
                            ack_ms,
                            window: outage()?,
                        });
                    }
                    (other, _) => bail!("--faults: unknown fault {other:?}; {}", usage()),
                }
            } else if let Some((name, value)) = part.split_once('=') {
                let rate = || -> Result<f64> {
                    let r: f64 = value.trim().parse().with_context(usage)?;
                    if !(0.0..=1.0).contains(&r) {
                        bail!("--faults: {name} must be a share within 0..=1, got {r}");
                    }
                    Ok(r)
                };
                match name.trim() {
                    "pay-error" => plan.payment_error_rate = rate()?,
                    "pay-hang" => plan.payment_hang_rate = rate()?,
                    "pay-charged-error" => plan.payment_charged_error_rate = rate()?,
                    "pay-cut" => plan.payment_cut_rate = rate()?,
                    "hang-ms" => plan.hang_ms = Some(value.trim().parse().with_context(usage)?),
                    other => bail!("--faults: unknown setting {other:?}; {}", usage()),
                }
            } else {
                bail!("{}", usage());
            }
        }
        let total = plan.payment_fault_share();
        if total > 1.0 {
            bail!("--faults: the payment fault shares add up to {total} > 1");
        }
        Ok(plan)
    }

    /// The same plan with its times multiplied by `scale` (`--duration-scale`; the API's time
    /// down is not scaled): what [`FaultPlan::parse`] with that scale gives.
    pub fn scaled(self, scale: f64) -> FaultPlan {
        FaultPlan {
            kill_api_at_s: self.kill_api_at_s.map(|t| t * scale),
            rolling_restart_at_s: self.rolling_restart_at_s.map(|t| t * scale),
            restart_db_at_s: self.restart_db_at_s.map(|t| t * scale),
            db_freeze: self.db_freeze.map(|o| o.scaled(scale)),
            slow_uploads: self.slow_uploads.map(|s| SlowUploads {
                window: s.window.scaled(scale),
                ..s
            }),
            gateway_down: self.gateway_down.map(|o| o.scaled(scale)),
            broker_ack: self.broker_ack.map(|b| BrokerAck {
                window: b.window.scaled(scale),
                ..b
            }),
            ..self
        }
    }

    /// The plan's outages (a window with a length), with the label of the timeline mark of each.
    pub fn outages(&self) -> Vec<(&'static str, Outage)> {
        [
            (DB_FREEZE_LABEL, self.db_freeze),
            (SLOW_UPLOADS_LABEL, self.slow_uploads.map(|s| s.window)),
            (GATEWAY_DOWN_LABEL, self.gateway_down),
            (BROKER_ACK_LABEL, self.broker_ack.map(|b| b.window)),
        ]
        .into_iter()
        .filter_map(|(label, o)| Some((label, o?)))
        .collect()
    }

    /// The share of pay requests that fail on purpose, one way or another.
    fn payment_fault_share(&self) -> f64 {
        self.payment_error_rate
            + self.payment_hang_rate
            + self.payment_charged_error_rate
            + self.payment_cut_rate
    }

    /// `true` when the plan ends the API's process itself (a kill, a rolling restart): the lab
    /// must have started it, and its exit is not a crash.
    pub fn ends_the_api(&self) -> bool {
        self.kill_api_at_s.is_some() || self.rolling_restart_at_s.is_some()
    }

    /// `true` when some pay request fails on purpose.
    pub fn has_payment_faults(&self) -> bool {
        self.payment_fault_share() > 0.0
    }

    /// One line for the timeline (t = 0) and the reports.
    pub fn describe_payment(&self) -> String {
        let pct = |r: f64| format!("{:.0} %", r * 100.0);
        format!(
            "payment faults throughout: {} answered 503, {} hang{}, {} charged then answered 500",
            pct(self.payment_error_rate),
            pct(self.payment_hang_rate),
            self.hang_ms
                .map_or(String::new(), |ms| format!(" ({ms} ms, then 504)")),
            pct(self.payment_charged_error_rate),
        ) + &if self.payment_cut_rate > 0.0 {
            format!(
                ", {} charged then cut mid-answer",
                pct(self.payment_cut_rate)
            )
        } else {
            String::new()
        }
    }
}

/// What became of the order events in a run with a slowed broker (`broker-ack`), counted by the
/// lab: the outbox's backlog when the slowdown ended and once the relay had drained it, then every
/// order in PostgreSQL against every subject in the stream (at-least-once: a duplicate is allowed,
/// a lost event is not).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct BrokerRecord {
    /// What each round trip to NATS took longer during the window, ms.
    pub ack_ms: u64,
    /// The API's `NATS_TIMEOUT_MS`: an acknowledgement slower than this is given up on.
    pub nats_timeout_ms: u64,
    /// Outbox rows unsent when the slowdown ended (`None`: not counted).
    pub backlog_at_outage_end: Option<u64>,
    /// Outbox rows unsent when the lab stopped waiting for the relay (0: drained).
    pub backlog_after_drain: u64,
    /// Seconds from the money count until no outbox row was unsent (`None`: the wait ran out).
    pub drain_s: Option<f64>,
    /// Orders in PostgreSQL.
    pub orders: u64,
    /// Messages in the stream.
    pub events_in_stream: u64,
    /// Orders without an event in the stream.
    pub events_lost: u64,
    /// Messages beyond the first of a subject.
    pub events_duplicated: u64,
    /// Subjects of no order.
    pub events_orphaned: u64,
}

impl BrokerRecord {
    /// `true` when the relay drained its backlog and every order's event is in the stream.
    pub fn every_event_delivered(&self) -> bool {
        self.backlog_after_drain == 0 && self.events_lost == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_after_the_charge_is_a_payment_fault_of_its_own() {
        let p = FaultPlan::parse("pay-charged-error=0.02,pay-cut=0.03", 1.0).unwrap();
        assert_eq!(p.payment_cut_rate, 0.03);
        assert!(p.has_payment_faults());
        assert!(
            p.describe_payment()
                .ends_with("2 % charged then answered 500, 3 % charged then cut mid-answer")
        );
        assert!(FaultPlan::parse("pay-cut=0.5,pay-error=0.6", 1.0).is_err());
        // A plan without it writes no field, and one written before it existed reads as none.
        let none = FaultPlan::parse("pay-error=0.1", 1.0).unwrap();
        let json = serde_json::to_string(&none).unwrap();
        assert!(!json.contains("payment_cut_rate"), "{json}");
        assert_eq!(serde_json::from_str::<FaultPlan>(&json).unwrap(), none);
        assert!(!none.describe_payment().contains("cut"));
    }

    #[test]
    fn the_scenario_spec_parses_and_scales() {
        let p = FaultPlan::parse(
            "pay-error=0.05,pay-hang=0.01,pay-charged-error=0.02,hang-ms=8000,kill-api@20,restart-db@40",
            0.5,
        )
        .unwrap();
        assert_eq!(
            (
                p.payment_error_rate,
                p.payment_hang_rate,
                p.payment_charged_error_rate
            ),
            (0.05, 0.01, 0.02)
        );
        assert_eq!(p.hang_ms, Some(8000));
        assert_eq!(p.kill_api_at_s, Some(10.0));
        assert_eq!(p.api_down_s, DEFAULT_DOWN_S, "time down is not scaled");
        assert_eq!(p.restart_db_at_s, Some(20.0));
        assert!(
            p.describe_payment()
                .contains("5 % answered 503, 1 % hang (8000 ms, then 504), 2 % charged")
        );
        assert_eq!(
            FaultPlan::parse("kill-api@3+0.5", 1.0).unwrap().api_down_s,
            0.5
        );
        assert!(
            !FaultPlan::parse("restart-db@1", 1.0)
                .unwrap()
                .has_payment_faults()
        );
        let rolling = FaultPlan::parse("rolling-restart@20", 0.5).unwrap();
        assert_eq!(rolling.rolling_restart_at_s, Some(10.0));
        assert!(rolling.ends_the_api() && rolling.outages().is_empty());
        assert!(
            !FaultPlan::parse("restart-db@1", 1.0)
                .unwrap()
                .ends_the_api()
        );
    }

    #[test]
    fn scaling_after_parsing_is_parsing_with_the_scale() {
        let spec = "pay-error=0.05,kill-api@20+3,rolling-restart@30,restart-db@40";
        for scale in [0.05, 0.5, 1.0, 3.0] {
            assert_eq!(
                FaultPlan::parse(spec, 1.0).unwrap().scaled(scale),
                FaultPlan::parse(spec, scale).unwrap()
            );
        }
    }

    #[test]
    fn outages_parse_with_their_length_unscaled() {
        let p = FaultPlan::parse(
            "db-freeze@40+20, slow-uploads=300@40+30 ,gateway-down@30+30",
            0.5,
        )
        .unwrap();
        assert_eq!(
            p.db_freeze,
            Some(Outage {
                at_s: 20.0,
                for_s: 20.0
            })
        );
        assert_eq!(
            p.slow_uploads,
            Some(SlowUploads {
                connections: 300,
                window: Outage {
                    at_s: 20.0,
                    for_s: 30.0
                }
            })
        );
        assert_eq!(
            p.gateway_down.map(|o| (o.at_s, o.end_s())),
            Some((15.0, 45.0))
        );
        let labels: Vec<&str> = p.outages().iter().map(|(l, _)| *l).collect();
        assert_eq!(
            labels,
            [DB_FREEZE_LABEL, SLOW_UPLOADS_LABEL, GATEWAY_DOWN_LABEL]
        );
        assert!(!p.has_payment_faults());
        assert!(FaultPlan::default().outages().is_empty());
        let spec = "db-freeze@40+20,slow-uploads=3@10+5,gateway-down@30+30";
        assert_eq!(
            FaultPlan::parse(spec, 1.0).unwrap().scaled(0.25),
            FaultPlan::parse(spec, 0.25).unwrap()
        );
        // The plan travels in results.json: it reads back as written.
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<FaultPlan>(&json).unwrap(), p);
    }

    #[test]
    fn a_slow_broker_parses_with_its_delay_and_an_unscaled_length() {
        let p = FaultPlan::parse("broker-ack=7000@20+30", 0.5).unwrap();
        let window = Outage {
            at_s: 10.0,
            for_s: 30.0,
        };
        assert_eq!(
            p.broker_ack,
            Some(BrokerAck {
                ack_ms: 7000,
                window
            })
        );
        assert_eq!(p.outages(), [(BROKER_ACK_LABEL, window)]);
        assert!(!p.has_payment_faults());
        let spec = "gateway-down@30+30,broker-ack=250@8+4";
        assert_eq!(
            FaultPlan::parse(spec, 1.0).unwrap().scaled(0.25),
            FaultPlan::parse(spec, 0.25).unwrap()
        );
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.contains(r#""broker_ack":{"ack_ms":7000"#), "{json}");
        assert_eq!(serde_json::from_str::<FaultPlan>(&json).unwrap(), p);
        // A plan written before the fault existed reads back without it.
        let old: FaultPlan = serde_json::from_str(
            r#"{"payment_error_rate":0.0,"payment_hang_rate":0.0,"payment_charged_error_rate":0.0}"#,
        )
        .unwrap();
        assert_eq!(old.broker_ack, None);
    }

    #[test]
    fn events_are_delivered_once_the_backlog_drained_and_none_is_lost() {
        let drained = BrokerRecord {
            backlog_at_outage_end: Some(180),
            orders: 1800,
            events_in_stream: 1803,
            events_duplicated: 3,
            ..BrokerRecord::default()
        };
        assert!(drained.every_event_delivered(), "duplicates are allowed");
        let lost = BrokerRecord {
            events_lost: 1,
            ..drained
        };
        assert!(!lost.every_event_delivered());
        let stuck = BrokerRecord {
            backlog_after_drain: 12,
            ..drained
        };
        assert!(!stuck.every_event_delivered());
    }

    #[test]
    fn malformed_specs_are_refused() {
        for bad in [
            "pay-error=2",
            "pay-error=x",
            "pay-typo=0.1",
            "kill-api@-1",
            "kill-api@x",
            "restart-api@3",
            "kill-api",
            "pay-error=0.6,pay-hang=0.6",
            "db-freeze@40",
            "db-freeze@x+20",
            "db-freeze@40+-1",
            "db-freeze=3@40+20",
            "slow-uploads@40+20",
            "slow-uploads=0@40+20",
            "slow-uploads=x@40+20",
            "gateway-down@40+",
            "broker-ack@20+30",
            "broker-ack=0@20+30",
            "broker-ack=x@20+30",
            "broker-ack=-5@20+30",
            "broker-ack=7000@20",
        ] {
            assert!(FaultPlan::parse(bad, 1.0).is_err(), "{bad}");
        }
    }
}
