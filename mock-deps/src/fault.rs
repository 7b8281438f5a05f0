//! Latency and failure injection, applied the same way to every mocked endpoint.
//!
//! Order: wait the (jittered) latency, then decide the request's fate. Delays are tokio timers,
//! so a thousand waiting requests cost a thousand small futures and no threads.

use std::time::Duration;

use actix_web::HttpResponse;
use rand::Rng;

use crate::config::EndpointConfig;
use crate::routes::json;
use crate::stats::Counters;

/// The delay of one request: `latency ± jitter`, uniform, floored at zero.
pub(crate) fn draw_delay(cfg: &EndpointConfig, rng: &mut impl Rng) -> Duration {
    let ms = if cfg.jitter_ms == 0 {
        cfg.latency_ms
    } else {
        let offset = rng.random_range(0..=cfg.jitter_ms.saturating_mul(2));
        cfg.latency_ms
            .saturating_add(offset)
            .saturating_sub(cfg.jitter_ms)
    };
    Duration::from_millis(ms)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    Proceed,
    Fail,
    Hang,
}

/// One uniform draw decides: error first, then hang (see [`EndpointConfig::hang_rate`]).
pub(crate) fn draw_fate(cfg: &EndpointConfig, rng: &mut impl Rng) -> Fate {
    if cfg.error_rate <= 0.0 && cfg.hang_rate <= 0.0 {
        return Fate::Proceed;
    }
    let r: f64 = rng.random();
    if r < cfg.error_rate {
        Fate::Fail
    } else if r < cfg.error_rate + cfg.hang_rate {
        Fate::Hang
    } else {
        Fate::Proceed
    }
}

/// Applies latency and faults. `None`: go on and answer for real; `Some`: answer this instead.
///
/// A hang is a timer like the latency: it ends when it fires, or earlier when the client goes
/// away and actix drops the handler future (and with it the timer), so hung requests never pile
/// up past the clients that made them.
pub(crate) async fn inject(
    cfg: EndpointConfig,
    hang_ms: u64,
    counters: &Counters,
) -> Option<HttpResponse> {
    let delay = draw_delay(&cfg, &mut rand::rng());
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    match draw_fate(&cfg, &mut rand::rng()) {
        Fate::Proceed => None,
        Fate::Fail => {
            Counters::bump(&counters.injected_errors);
            Some(json::service_unavailable())
        }
        Fate::Hang => {
            Counters::bump(&counters.hangs);
            tokio::time::sleep(Duration::from_millis(hang_ms)).await;
            Some(json::gateway_timeout())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn jitter_stays_within_bounds_and_floors_at_zero() {
        let mut rng = StdRng::seed_from_u64(7);
        let cfg = EndpointConfig {
            latency_ms: 100,
            jitter_ms: 30,
            ..EndpointConfig::default()
        };
        for _ in 0..1000 {
            let d = draw_delay(&cfg, &mut rng).as_millis();
            assert!((70..=130).contains(&d), "{d}");
        }
        let wide = EndpointConfig {
            latency_ms: 5,
            jitter_ms: 50,
            ..EndpointConfig::default()
        };
        assert!((0..1000).all(|_| draw_delay(&wide, &mut rng).as_millis() <= 55));
    }

    #[test]
    fn certain_rates_are_certain() {
        let mut rng = StdRng::seed_from_u64(1);
        let fail = EndpointConfig {
            error_rate: 1.0,
            ..EndpointConfig::default()
        };
        let hang = EndpointConfig {
            hang_rate: 1.0,
            ..EndpointConfig::default()
        };
        for _ in 0..1000 {
            assert_eq!(draw_fate(&fail, &mut rng), Fate::Fail);
            assert_eq!(draw_fate(&hang, &mut rng), Fate::Hang);
            assert_eq!(
                draw_fate(&EndpointConfig::default(), &mut rng),
                Fate::Proceed
            );
        }
    }

    #[test]
    fn error_rate_is_roughly_honoured() {
        let mut rng = StdRng::seed_from_u64(3);
        let cfg = EndpointConfig {
            error_rate: 0.25,
            hang_rate: 0.25,
            ..EndpointConfig::default()
        };
        let fates: Vec<Fate> = (0..10_000).map(|_| draw_fate(&cfg, &mut rng)).collect();
        let fails = fates.iter().filter(|f| **f == Fate::Fail).count();
        let hangs = fates.iter().filter(|f| **f == Fate::Hang).count();
        assert!((2_200..2_800).contains(&fails), "{fails}");
        assert!((2_200..2_800).contains(&hangs), "{hangs}");
    }
}
