//! Behaviour knobs: latency, jitter and failure injection per endpoint.
//!
//! The whole [`MockConfig`] is small and `Copy`, so a request copies it out of an `RwLock` at its
//! start and never holds the lock across an await.

use serde::{Deserialize, Serialize};

/// Default duration of an injected hang: ten minutes, past any sane client timeout.
pub const DEFAULT_HANG_MS: u64 = 600_000;

/// How one endpoint behaves. `Default` is the instant, always-healthy endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EndpointConfig {
    /// Base delay before answering.
    pub latency_ms: u64,
    /// Uniform jitter added to the latency: the delay is drawn from `latency ± jitter` (floored at 0).
    pub jitter_ms: u64,
    /// Share (0..=1) of requests answered `503 {"error":"injected_failure"}` after the latency.
    pub error_rate: f64,
    /// Share (0..=1) of requests that hang for [`MockConfig::hang_ms`] after the latency.
    pub hang_rate: f64,
    /// Payment only (must be 0 elsewhere): share (0..=1) of pay requests that are charged, i.e.
    /// recorded in the ledger like a normal answer, and then answered
    /// `500 {"error":"injected_failure_after_charge"}`. This is the failure that makes a caller's
    /// "did it charge?" question real: the client sees an error, the money is gone.
    ///
    /// One draw `r` decides all three rates, in this order: `r < error_rate` fails, else
    /// `r < error_rate + hang_rate` hangs, else `r < error_rate + hang_rate + charged_error_rate`
    /// charges then fails; when they add up past 1 the earlier shares win.
    pub charged_error_rate: f64,
    /// Share (0..=1) of requests answered as [`EndpointConfig::answer_fault`] says, drawn after
    /// the three rates above (`r` below their sum plus this one). The payment gateway charges
    /// first: the answer misbehaves after the charge is in the ledger.
    pub answer_fault_rate: f64,
    /// How those answers misbehave.
    pub answer_fault: BadAnswer,
}

/// A misbehaving answer, as a slow, broken or compromised dependency (or a proxy in front of one)
/// gives it; served by `bad_answer`. Each starts from the answer the endpoint would have given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BadAnswer {
    /// Its head, then a chunked body that never ends (until the client goes away).
    #[default]
    Endless,
    /// The answer padded with spaces (still valid JSON) to [`OVERSIZED_BYTES`], with its
    /// `Content-Length`: only a size bound refuses it.
    Oversized,
    /// Its head at once, then the body one byte every [`DRIP_EVERY`].
    Drip,
    /// Its head with the whole body's `Content-Length`, half the body, then the connection
    /// closed.
    Cut,
    /// The connection closed with no answer.
    Reset,
}

/// The size of a [`BadAnswer::Oversized`] body: four times the bound both APIs read up to.
pub const OVERSIZED_BYTES: usize = 4 * order_core::domain::deps::DEPS_ANSWER_MAX_BYTES;

/// The pace of a [`BadAnswer::Drip`]: no read waits more than 0.4 s, so a timeout per read never
/// fires, while a 30-byte answer takes 12 s, past any whole-call timeout of the lab.
pub const DRIP_EVERY: std::time::Duration = std::time::Duration::from_millis(400);

impl EndpointConfig {
    /// A healthy endpoint answering after `latency_ms`.
    pub fn with_latency(latency_ms: u64) -> Self {
        Self {
            latency_ms,
            ..Self::default()
        }
    }

    fn validate(&self, name: &str) -> Result<(), String> {
        for (field, rate) in [
            ("error_rate", self.error_rate),
            ("hang_rate", self.hang_rate),
            ("charged_error_rate", self.charged_error_rate),
            ("answer_fault_rate", self.answer_fault_rate),
        ] {
            if !(0.0..=1.0).contains(&rate) {
                return Err(format!("{name}.{field} must be within 0..=1, got {rate}"));
            }
        }
        Ok(())
    }

    /// For the endpoints that charge nothing: a non-zero `charged_error_rate` would be a silent
    /// no-op there, so it is refused like an unknown field rather than ignored.
    fn validate_non_charging(&self, name: &str) -> Result<(), String> {
        self.validate(name)?;
        if self.charged_error_rate != 0.0 {
            return Err(format!(
                "{name}.charged_error_rate must be 0: only the payment gateway charges"
            ));
        }
        Ok(())
    }
}

/// The behaviour of all three mocked dependencies.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockConfig {
    /// `GET /sellers/authorization`.
    #[serde(default)]
    pub seller: EndpointConfig,
    /// `POST /risk-analysis/validate`.
    #[serde(default)]
    pub risk: EndpointConfig,
    /// `POST /gateway/pay`.
    #[serde(default)]
    pub payment: EndpointConfig,
    /// How long an injected hang lasts before the request is answered `504`.
    #[serde(default = "default_hang_ms")]
    pub hang_ms: u64,
    /// The payment gateway as if unreachable: pay, lookup and void all hang (for
    /// [`DEFAULT_HANG_MS`], not `hang_ms`: no answer is coming) before anything is read or
    /// recorded, so nothing is charged or voided; each ends when its client gives up. A request
    /// that arrived while it was set keeps hanging after it is cleared, as one lost on the way.
    #[serde(default)]
    pub gateway_unreachable: bool,
}

fn default_hang_ms() -> u64 {
    DEFAULT_HANG_MS
}

impl MockConfig {
    /// The original experiment (SEEDS A): seller 200 ms, risk 1000 ms, payment 1000 ms, no failures.
    pub fn seed_defaults() -> Self {
        Self {
            seller: EndpointConfig::with_latency(200),
            risk: EndpointConfig::with_latency(1000),
            payment: EndpointConfig::with_latency(1000),
            hang_ms: DEFAULT_HANG_MS,
            gateway_unreachable: false,
        }
    }

    /// Zero latency and no failures: what integration tests usually want.
    pub fn instant() -> Self {
        Self {
            seller: EndpointConfig::default(),
            risk: EndpointConfig::default(),
            payment: EndpointConfig::default(),
            hang_ms: DEFAULT_HANG_MS,
            gateway_unreachable: false,
        }
    }

    /// Checks that every rate is a share in `0..=1` (NaN included in the rejects) and that only
    /// the payment endpoint has a `charged_error_rate`.
    pub fn validate(&self) -> Result<(), String> {
        self.seller.validate_non_charging("seller")?;
        self.risk.validate_non_charging("risk")?;
        self.payment.validate("payment")
    }
}

/// Body of `PUT /admin/config`: any subset of endpoints and fields.
///
/// Unknown fields are rejected so that a typo (`"latency"`) is a 400, not a silent no-op. A
/// client builds it typed and it serialises with the fields left `None` omitted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigPatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seller: Option<EndpointPatch>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub risk: Option<EndpointPatch>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment: Option<EndpointPatch>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hang_ms: Option<u64>,
    /// See [`MockConfig::gateway_unreachable`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_unreachable: Option<bool>,
}

/// Partial [`EndpointConfig`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointPatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hang_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub charged_error_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_fault_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_fault: Option<BadAnswer>,
}

impl EndpointPatch {
    /// Only the latency.
    pub fn latency(latency_ms: u64) -> Self {
        Self {
            latency_ms: Some(latency_ms),
            ..Self::default()
        }
    }

    fn apply(&self, target: &mut EndpointConfig) {
        if let Some(v) = self.latency_ms {
            target.latency_ms = v;
        }
        if let Some(v) = self.jitter_ms {
            target.jitter_ms = v;
        }
        if let Some(v) = self.error_rate {
            target.error_rate = v;
        }
        if let Some(v) = self.hang_rate {
            target.hang_rate = v;
        }
        if let Some(v) = self.charged_error_rate {
            target.charged_error_rate = v;
        }
        if let Some(v) = self.answer_fault_rate {
            target.answer_fault_rate = v;
        }
        if let Some(v) = self.answer_fault {
            target.answer_fault = v;
        }
    }
}

impl ConfigPatch {
    /// Only the three latencies, ms.
    pub fn latencies(seller_ms: u64, risk_ms: u64, payment_ms: u64) -> Self {
        Self {
            seller: Some(EndpointPatch::latency(seller_ms)),
            risk: Some(EndpointPatch::latency(risk_ms)),
            payment: Some(EndpointPatch::latency(payment_ms)),
            hang_ms: None,
            gateway_unreachable: None,
        }
    }

    /// Returns `base` with the patch applied, or why the result would be invalid.
    pub fn apply(&self, base: MockConfig) -> Result<MockConfig, String> {
        let mut next = base;
        let pairs = [
            (self.seller, &mut next.seller),
            (self.risk, &mut next.risk),
            (self.payment, &mut next.payment),
        ];
        for (patch, target) in pairs {
            if let Some(patch) = patch {
                patch.apply(target);
            }
        }
        if let Some(hang_ms) = self.hang_ms {
            next.hang_ms = hang_ms;
        }
        if let Some(unreachable) = self.gateway_unreachable {
            next.gateway_unreachable = unreachable;
        }
        next.validate()?;
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_patch_changes_only_named_fields() {
        let patch: ConfigPatch =
            serde_json::from_str(r#"{"risk":{"latency_ms":5},"hang_ms":10}"#).unwrap();
        let next = patch.apply(MockConfig::seed_defaults()).unwrap();
        assert_eq!(next.risk.latency_ms, 5);
        assert_eq!(next.seller.latency_ms, 200);
        assert_eq!(next.payment.latency_ms, 1000);
        assert_eq!(next.hang_ms, 10);
    }

    #[test]
    fn rates_outside_unit_interval_are_rejected() {
        for bad in [
            r#"{"seller":{"error_rate":1.5}}"#,
            r#"{"payment":{"hang_rate":-0.1}}"#,
            r#"{"payment":{"charged_error_rate":1.01}}"#,
            r#"{"risk":{"charged_error_rate":0.5}}"#,
            r#"{"seller":{"charged_error_rate":0.01}}"#,
        ] {
            let patch: ConfigPatch = serde_json::from_str(bad).unwrap();
            assert!(patch.apply(MockConfig::instant()).is_err(), "{bad}");
        }
        let nan = MockConfig {
            risk: EndpointConfig {
                error_rate: f64::NAN,
                ..EndpointConfig::default()
            },
            ..MockConfig::instant()
        };
        assert!(nan.validate().is_err());
    }

    #[test]
    fn payment_accepts_a_charged_error_rate() {
        let patch: ConfigPatch =
            serde_json::from_str(r#"{"payment":{"charged_error_rate":0.02}}"#).unwrap();
        let next = patch.apply(MockConfig::seed_defaults()).unwrap();
        assert_eq!(next.payment.charged_error_rate, 0.02);
        assert_eq!(next.payment.latency_ms, 1000);
        // A document written before the field existed still parses, with the field at 0.
        let old: EndpointConfig = serde_json::from_str(r#"{"latency_ms":5}"#).unwrap();
        assert_eq!(old.charged_error_rate, 0.0);
    }

    #[test]
    fn a_typed_patch_writes_only_what_it_sets() {
        let patch = ConfigPatch::latencies(1, 2, 3);
        let json = serde_json::to_string(&patch).unwrap();
        assert_eq!(
            json,
            r#"{"seller":{"latency_ms":1},"risk":{"latency_ms":2},"payment":{"latency_ms":3}}"#
        );
        assert_eq!(serde_json::from_str::<ConfigPatch>(&json).unwrap(), patch);
        assert_eq!(
            serde_json::to_string(&ConfigPatch::default()).unwrap(),
            "{}"
        );
    }

    #[test]
    fn the_gateway_is_unreachable_only_when_a_patch_says_so() {
        let down: ConfigPatch = serde_json::from_str(r#"{"gateway_unreachable":true}"#).unwrap();
        let next = down.apply(MockConfig::seed_defaults()).unwrap();
        assert!(next.gateway_unreachable);
        assert_eq!(next.payment, MockConfig::seed_defaults().payment);
        // A patch that does not name it leaves it as it is; a config written before the field
        // existed reads as reachable.
        let other = ConfigPatch::latencies(1, 2, 3).apply(next).unwrap();
        assert!(other.gateway_unreachable);
        let up = ConfigPatch {
            gateway_unreachable: Some(false),
            ..ConfigPatch::default()
        };
        assert!(!up.apply(other).unwrap().gateway_unreachable);
        let old: MockConfig = serde_json::from_str(r#"{"hang_ms":5}"#).unwrap();
        assert!(!old.gateway_unreachable);
    }

    #[test]
    fn an_answer_fault_is_named_and_rated_in_a_patch() {
        let patch: ConfigPatch =
            serde_json::from_str(r#"{"risk":{"answer_fault":"drip","answer_fault_rate":1}}"#)
                .unwrap();
        let next = patch.apply(MockConfig::instant()).unwrap();
        assert_eq!(next.risk.answer_fault, BadAnswer::Drip);
        assert_eq!(next.risk.answer_fault_rate, 1.0);
        let over: ConfigPatch =
            serde_json::from_str(r#"{"payment":{"answer_fault_rate":1.5}}"#).unwrap();
        assert!(over.apply(MockConfig::instant()).is_err());
        assert!(
            serde_json::from_str::<ConfigPatch>(r#"{"risk":{"answer_fault":"slow"}}"#).is_err()
        );
    }

    #[test]
    fn unknown_fields_are_rejected() {
        assert!(serde_json::from_str::<ConfigPatch>(r#"{"risk":{"latency":5}}"#).is_err());
    }

    #[test]
    fn full_config_round_trips() {
        let cfg = MockConfig::seed_defaults();
        let back: MockConfig = serde_json::from_str(&serde_json::to_string(&cfg).unwrap()).unwrap();
        assert_eq!(back, cfg);
    }
}
