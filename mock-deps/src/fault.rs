//! Latency and failure injection, applied the same way to every mocked endpoint.
//!
//! Order: wait the (jittered) latency, then decide the request's fate. Delays are tokio timers,
//! so a thousand waiting requests cost a thousand small futures and no threads.

use std::time::Duration;

use actix_web::HttpResponse;
use rand::Rng;

use crate::config::{BadAnswer, EndpointConfig};
use crate::json;
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
    /// Payment only: record the charge, then answer 500 (see [`EndpointConfig::charged_error_rate`]).
    ChargedFail,
    /// Answer (the gateway: after the charge) as [`EndpointConfig::answer_fault`] says.
    BadAnswer,
}

/// One uniform draw decides: error, then hang, then charged-then-fail
/// (see [`EndpointConfig::charged_error_rate`]), then a bad answer.
pub(crate) fn draw_fate(cfg: &EndpointConfig, rng: &mut impl Rng) -> Fate {
    let shares = [
        (cfg.error_rate, Fate::Fail),
        (cfg.hang_rate, Fate::Hang),
        (cfg.charged_error_rate, Fate::ChargedFail),
        (cfg.answer_fault_rate, Fate::BadAnswer),
    ];
    if shares.iter().all(|(rate, _)| *rate <= 0.0) {
        return Fate::Proceed;
    }
    let r: f64 = rng.random();
    let mut below = 0.0;
    for (rate, fate) in shares {
        below += rate;
        if r < below {
            return fate;
        }
    }
    Fate::Proceed
}

/// Waits the (jittered) latency, then draws the request's fate and counts it.
///
/// Split from the answers below because the payment handler runs this part in a detached task
/// (the charge must survive its client) but keeps a hang cancellable.
pub(crate) async fn delay_and_draw(cfg: &EndpointConfig, counters: &Counters) -> Fate {
    let delay = draw_delay(cfg, &mut rand::rng());
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let fate = draw_fate(cfg, &mut rand::rng());
    match fate {
        Fate::Proceed | Fate::BadAnswer => {}
        Fate::Fail => Counters::bump(&counters.injected_errors),
        Fate::Hang => Counters::bump(&counters.hangs),
        Fate::ChargedFail => Counters::bump(&counters.injected_charged_errors),
    }
    fate
}

/// What a hung request answers, once `hang_ms` has passed.
///
/// A hang is a timer like the latency: it ends when it fires, or earlier when the client goes
/// away and actix drops the handler future (and with it the timer), so hung requests never pile
/// up past the clients that made them.
pub(crate) async fn hang(hang_ms: u64) -> HttpResponse {
    tokio::time::sleep(Duration::from_millis(hang_ms)).await;
    json::gateway_timeout()
}

/// Applies latency and faults for an endpoint that charges nothing. `Ok`: go on and answer for
/// real, spoiled as the [`BadAnswer`] says if there is one; `Err`: answer this instead.
pub(crate) async fn inject(
    cfg: EndpointConfig,
    hang_ms: u64,
    counters: &Counters,
) -> Result<Option<BadAnswer>, HttpResponse> {
    match delay_and_draw(&cfg, counters).await {
        // `MockConfig::validate` keeps `charged_error_rate` at 0 outside payment, so
        // `ChargedFail` cannot be drawn here; were it drawn, there is nothing to charge.
        Fate::Proceed | Fate::ChargedFail => Ok(None),
        Fate::BadAnswer => Ok(Some(cfg.answer_fault)),
        Fate::Fail => Err(json::service_unavailable()),
        Fate::Hang => Err(hang(hang_ms).await),
    }
}

/// What a request to an unreachable gateway ([`crate::MockConfig::gateway_unreachable`]) gets:
/// nothing, until its client gives up (actix then drops this future) or, at the latest, after
/// [`DEFAULT_HANG_MS`](crate::config::DEFAULT_HANG_MS), a 504.
pub(crate) async fn unreachable() -> HttpResponse {
    hang(crate::config::DEFAULT_HANG_MS).await
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
        let charged_fail = EndpointConfig {
            charged_error_rate: 1.0,
            ..EndpointConfig::default()
        };
        let bad_answer = EndpointConfig {
            answer_fault_rate: 1.0,
            ..EndpointConfig::default()
        };
        for _ in 0..1000 {
            assert_eq!(draw_fate(&fail, &mut rng), Fate::Fail);
            assert_eq!(draw_fate(&hang, &mut rng), Fate::Hang);
            assert_eq!(draw_fate(&charged_fail, &mut rng), Fate::ChargedFail);
            assert_eq!(draw_fate(&bad_answer, &mut rng), Fate::BadAnswer);
            assert_eq!(
                draw_fate(&EndpointConfig::default(), &mut rng),
                Fate::Proceed
            );
        }
    }

    #[test]
    fn earlier_shares_win_when_rates_add_up_past_one() {
        let mut rng = StdRng::seed_from_u64(5);
        let cfg = EndpointConfig {
            hang_rate: 0.6,
            charged_error_rate: 0.6,
            ..EndpointConfig::default()
        };
        let fates: Vec<Fate> = (0..10_000).map(|_| draw_fate(&cfg, &mut rng)).collect();
        assert!(!fates.contains(&Fate::Proceed));
        let charged = fates.iter().filter(|f| **f == Fate::ChargedFail).count();
        assert!((3_700..4_300).contains(&charged), "{charged}");
    }

    #[test]
    fn error_rate_is_roughly_honoured() {
        let mut rng = StdRng::seed_from_u64(3);
        let cfg = EndpointConfig {
            error_rate: 0.25,
            hang_rate: 0.25,
            charged_error_rate: 0.25,
            ..EndpointConfig::default()
        };
        let fates: Vec<Fate> = (0..10_000).map(|_| draw_fate(&cfg, &mut rng)).collect();
        let count = |fate: Fate| fates.iter().filter(|f| **f == fate).count();
        for fate in [Fate::Fail, Fate::Hang, Fate::ChargedFail, Fate::Proceed] {
            let n = count(fate);
            assert!((2_200..2_800).contains(&n), "{fate:?}: {n}");
        }
    }
}
