//! Start-up settings of the `mock-deps` binary: every env var and its default, in one place.

use clap::Parser;

use crate::config::{DEFAULT_HANG_MS, EndpointConfig, MockConfig};

/// Settings read from flags or env vars (flag `--seller-latency-ms` = env `SELLER_LATENCY_MS`).
///
/// | env var | default | meaning |
/// |---|---|---|
/// | `BIND_ADDR` | `127.0.0.1:9090` | listen address |
/// | `SELLER_LATENCY_MS` | `200` | `GET /sellers/authorization` latency |
/// | `RISK_LATENCY_MS` | `1000` | `POST /risk-analysis/validate` latency |
/// | `PAY_LATENCY_MS` | `1000` | `POST /gateway/pay` latency |
/// | `JITTER_MS` | `0` | uniform ± jitter, all endpoints |
/// | `ERROR_RATE` | `0` | share answered 503 after the latency, all endpoints |
/// | `HANG_RATE` | `0` | share that hangs for `HANG_MS`, all endpoints |
/// | `CHARGED_ERROR_RATE` | `0` | share of payments charged, then answered 500 (payment only) |
/// | `HANG_MS` | `600000` | duration of an injected hang |
/// | `HTTP_WORKERS` | `1` | actix worker threads |
/// | `RUST_LOG` | `info` | tracing filter; requests log at `debug` only |
#[derive(Clone, Debug, Parser)]
#[command(
    name = "mock-deps",
    version,
    about = "Lightweight async mocks of the order APIs' dependencies"
)]
pub struct Settings {
    #[arg(long, env, default_value = "127.0.0.1:9090")]
    pub bind_addr: String,
    #[arg(long, env, default_value_t = 200)]
    pub seller_latency_ms: u64,
    #[arg(long, env, default_value_t = 1000)]
    pub risk_latency_ms: u64,
    #[arg(long, env, default_value_t = 1000)]
    pub pay_latency_ms: u64,
    #[arg(long, env, default_value_t = 0)]
    pub jitter_ms: u64,
    #[arg(long, env, default_value_t = 0.0, value_parser = parse_rate)]
    pub error_rate: f64,
    #[arg(long, env, default_value_t = 0.0, value_parser = parse_rate)]
    pub hang_rate: f64,
    /// Payment only: the other endpoints charge nothing, so the rate has no meaning there.
    #[arg(long, env, default_value_t = 0.0, value_parser = parse_rate)]
    pub charged_error_rate: f64,
    #[arg(long, env, default_value_t = DEFAULT_HANG_MS)]
    pub hang_ms: u64,
    #[arg(long, env, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub http_workers: u16,
    #[arg(long, env, default_value = "info")]
    pub rust_log: String,
}

fn parse_rate(s: &str) -> Result<f64, String> {
    let rate: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if (0.0..=1.0).contains(&rate) {
        Ok(rate)
    } else {
        Err(format!("{rate} is not a share within 0..=1"))
    }
}

impl Settings {
    /// The initial [`MockConfig`] these settings describe.
    pub fn mock_config(&self) -> MockConfig {
        let endpoint = |latency_ms| EndpointConfig {
            latency_ms,
            jitter_ms: self.jitter_ms,
            error_rate: self.error_rate,
            hang_rate: self.hang_rate,
            ..EndpointConfig::default()
        };
        MockConfig {
            seller: endpoint(self.seller_latency_ms),
            risk: endpoint(self.risk_latency_ms),
            payment: EndpointConfig {
                charged_error_rate: self.charged_error_rate,
                ..endpoint(self.pay_latency_ms)
            },
            hang_ms: self.hang_ms,
            gateway_unreachable: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_seed_experiment() {
        let settings = Settings::try_parse_from(["mock-deps"]).unwrap();
        assert_eq!(settings.bind_addr, "127.0.0.1:9090");
        assert_eq!(settings.http_workers, 1);
        assert_eq!(settings.mock_config(), MockConfig::seed_defaults());
    }

    #[test]
    fn rates_are_checked() {
        assert!(Settings::try_parse_from(["mock-deps", "--error-rate", "1.5"]).is_err());
        let s = Settings::try_parse_from(["mock-deps", "--hang-rate", "0.5"]).unwrap();
        assert_eq!(s.mock_config().payment.hang_rate, 0.5);
        assert!(Settings::try_parse_from(["mock-deps", "--charged-error-rate", "-0.1"]).is_err());
    }

    #[test]
    fn charged_error_rate_applies_to_payment_only() {
        let s = Settings::try_parse_from(["mock-deps", "--charged-error-rate", "0.02"]).unwrap();
        let config = s.mock_config();
        assert_eq!(config.payment.charged_error_rate, 0.02);
        assert_eq!(config.seller.charged_error_rate, 0.0);
        assert_eq!(config.risk.charged_error_rate, 0.0);
        assert!(config.validate().is_ok());
    }
}
