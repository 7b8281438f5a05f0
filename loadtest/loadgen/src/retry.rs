//! Clients that retry, as a careful real client of a payment API does (`--retry-for-s`): the same
//! `reference_id` and the same body again after a 503, a 409 `request_in_progress`, a 5xx or a
//! transport failure, waiting at least the answer's `Retry-After` and a capped exponential
//! backoff, until a 201 or a final 4xx — or until its time runs out (it gives up).
//!
//! [`next`] is the policy as a pure function; [`send`] runs one logical client with it and writes
//! every attempt into the [`AttemptLog`]. The recorder sees one request per client (its final
//! answer, latency from its first attempt's intended time), so the open model's counts still hold.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::body::OrderRequest;
use crate::http::{Outcome, fire_within};
use lab_results::{OUTCOME_GAVE_UP, RetryRecord};

/// The first backoff and its cap.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(250);
pub const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// When and how long a client retries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    /// No attempt starts, and none is waited for, past this time after the first one.
    pub give_up_after: Duration,
}

impl RetryPolicy {
    /// The lab's policy, giving up after `give_up_after_s` seconds.
    pub fn giving_up_after(give_up_after_s: f64) -> Self {
        RetryPolicy {
            first_backoff: FIRST_BACKOFF,
            max_backoff: MAX_BACKOFF,
            give_up_after: Duration::from_secs_f64(give_up_after_s.max(0.0)),
        }
    }

    /// Backoff after `attempts` failed attempts (≥ 1): first × 2^(attempts−1), capped, scaled by
    /// `0.5 + jitter` (`jitter` in 0..1, so ±50 %) so that clients failed together spread out.
    pub fn backoff(&self, attempts: u32, jitter: f64) -> Duration {
        let doubling = 2f64.powi(attempts.saturating_sub(1).min(30) as i32);
        let base =
            (self.first_backoff.as_secs_f64() * doubling).min(self.max_backoff.as_secs_f64());
        Duration::from_secs_f64(base * (0.5 + jitter.clamp(0.0, 1.0)))
    }
}

/// What a client does after an answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// A final answer: 201 (fresh or replayed) or a 4xx that a retry cannot change.
    Done,
    /// Try again after this wait.
    Retry(Duration),
    /// Still failing and out of time.
    GiveUp,
}

/// `true` for answers a retry may change: no answer at all, 409 (the same key still running),
/// 429 and every 5xx.
pub fn retryable(o: &Outcome) -> bool {
    match o.status {
        None => true,
        Some(s) => s == 409 || s == 429 || s >= 500,
    }
}

/// The policy: after attempt number `attempts` (1-based) ended with `o`, `elapsed` after the
/// client's first attempt started.
pub fn next(p: &RetryPolicy, attempts: u32, elapsed: Duration, o: &Outcome, jitter: f64) -> Next {
    if o.is_success() || !retryable(o) {
        return Next::Done;
    }
    let wait = p
        .backoff(attempts, jitter)
        .max(o.retry_after.unwrap_or_default());
    if elapsed + wait >= p.give_up_after {
        Next::GiveUp
    } else {
        Next::Retry(wait)
    }
}

/// Every attempt of every client of a run.
#[derive(Debug, Default)]
pub struct AttemptLog {
    record: RetryRecord,
}

impl AttemptLog {
    pub fn new(p: &RetryPolicy) -> Self {
        AttemptLog {
            record: RetryRecord {
                give_up_after_s: p.give_up_after.as_secs_f64(),
                backoff_s: (p.first_backoff.as_secs_f64(), p.max_backoff.as_secs_f64()),
                ..RetryRecord::default()
            },
        }
    }

    fn attempt(&mut self, o: &Outcome, at_s: f64) {
        let r = &mut self.record;
        r.attempts += 1;
        *r.attempts_by_outcome.entry(o.kind.clone()).or_default() += 1;
        if o.is_success() {
            r.created_at_s.push(at_s);
        }
    }

    fn ended(&mut self, o: &Outcome, attempts: u32) {
        let r = &mut self.record;
        r.clients += 1;
        r.max_attempts = r.max_attempts.max(u64::from(attempts));
        if o.is_success() {
            r.ended_created += 1;
        } else if o.kind == OUTCOME_GAVE_UP {
            r.ended_gave_up += 1;
        } else {
            *r.ended_terminal_4xx.entry(o.kind.clone()).or_default() += 1;
        }
    }

    /// The record, 201 times sorted.
    pub fn finish(mut self) -> RetryRecord {
        self.record.created_at_s.sort_by(f64::total_cmp);
        self.record
    }
}

/// One logical client: sends `request` until [`next`] says stop; returns its final outcome
/// (kind `gave_up` when it ran out of time). `timeout` bounds each attempt (and never runs past
/// the give-up time); `t0` is the run's clock, for the 201 times.
pub async fn send(
    client: &reqwest::Client,
    url: &str,
    request: &OrderRequest,
    policy: &RetryPolicy,
    timeout: Duration,
    t0: Instant,
    log: &Mutex<AttemptLog>,
) -> Outcome {
    let first = Instant::now();
    let mut attempts = 0u32;
    let mut jitter = SmallRng::seed_from_u64(request.jitter_seed);
    let lock = || log.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let left = policy.give_up_after.saturating_sub(first.elapsed());
        let o = fire_within(client, url, request, Some(timeout.min(left))).await;
        attempts += 1;
        lock().attempt(&o, crate::clock::since(t0, Instant::now()));
        match next(
            policy,
            attempts,
            first.elapsed(),
            &o,
            jitter.random::<f64>(),
        ) {
            Next::Retry(wait) => tokio::time::sleep(wait).await,
            Next::Done => {
                lock().ended(&o, attempts);
                return o;
            }
            Next::GiveUp => {
                let o = Outcome {
                    kind: OUTCOME_GAVE_UP.to_owned(),
                    error: Some(format!(
                        "gave up after {attempts} attempts; last: {}",
                        o.error.as_deref().unwrap_or(&o.kind)
                    )),
                    ..o
                };
                lock().ended(&o, attempts);
                return o;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: Option<u16>, kind: &str, retry_after_s: Option<u64>) -> Outcome {
        Outcome {
            kind: kind.to_owned(),
            status,
            error: None,
            retry_after: retry_after_s.map(Duration::from_secs),
        }
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_with_jitter_around_it() {
        let p = RetryPolicy::giving_up_after(60.0);
        let mid = |n| p.backoff(n, 0.5).as_millis();
        assert_eq!(
            [mid(1), mid(2), mid(3), mid(6), mid(7), mid(40)],
            [250, 500, 1000, 8000, 8000, 8000]
        );
        assert_eq!(p.backoff(1, 0.0).as_millis(), 125);
        assert_eq!(p.backoff(1, 1.0).as_millis(), 375);
    }

    #[test]
    fn final_answers_end_the_client() {
        let p = RetryPolicy::giving_up_after(60.0);
        for (status, kind) in [
            (201, "201"),
            (201, "201_replayed"),
            (402, "payment_declined"),
            (422, "order_voided"),
            (422, "idempotency_key_reused"),
            (400, "invalid_request"),
        ] {
            let o = answer(Some(status), kind, None);
            assert_eq!(next(&p, 1, Duration::ZERO, &o, 0.5), Next::Done, "{kind}");
        }
    }

    #[test]
    fn failures_are_retried_honouring_retry_after() {
        let p = RetryPolicy::giving_up_after(60.0);
        let busy = answer(Some(503), "dependency_unavailable", Some(1));
        // Backoff 250 ms < Retry-After 1 s: the server's wish wins.
        assert_eq!(
            next(&p, 1, Duration::ZERO, &busy, 0.5),
            Next::Retry(Duration::from_secs(1))
        );
        // Later the backoff is longer than Retry-After.
        assert_eq!(
            next(&p, 5, Duration::from_secs(10), &busy, 0.5),
            Next::Retry(Duration::from_secs(4))
        );
        for o in [
            answer(Some(409), "request_in_progress", Some(1)),
            answer(Some(500), "http_500", None),
            answer(None, "timeout", None),
            answer(None, "connect_error", None),
            answer(None, "io_error", None),
        ] {
            assert!(
                matches!(next(&p, 1, Duration::ZERO, &o, 0.5), Next::Retry(_)),
                "{o:?}"
            );
        }
    }

    #[test]
    fn a_client_gives_up_when_the_next_wait_would_pass_its_time() {
        let p = RetryPolicy::giving_up_after(60.0);
        let busy = answer(Some(503), "database_unavailable", Some(1));
        assert_eq!(
            next(&p, 3, Duration::from_millis(59_100), &busy, 0.5),
            Next::GiveUp
        );
        assert!(matches!(
            next(&p, 3, Duration::from_millis(58_000), &busy, 0.5),
            Next::Retry(_)
        ));
        // Even a 201 after the time is a 201.
        let ok = answer(Some(201), "201", None);
        assert_eq!(next(&p, 9, Duration::from_secs(70), &ok, 0.5), Next::Done);
    }

    #[test]
    fn the_log_counts_attempts_and_endings() {
        let p = RetryPolicy::giving_up_after(60.0);
        let mut log = AttemptLog::new(&p);
        let busy = answer(Some(503), "dependency_unavailable", Some(1));
        let ok = answer(Some(201), "201_replayed", None);
        let voided = answer(Some(422), "order_voided", None);
        log.attempt(&busy, 1.0);
        log.attempt(&ok, 3.0);
        log.ended(&ok, 2);
        log.attempt(&voided, 2.0);
        log.ended(&voided, 1);
        let gave_up = Outcome {
            kind: OUTCOME_GAVE_UP.to_owned(),
            ..busy.clone()
        };
        log.attempt(&ok, 0.5);
        log.ended(&gave_up, 7);
        let r = log.finish();
        assert_eq!((r.clients, r.attempts, r.max_attempts), (3, 4, 7));
        assert_eq!(
            (r.ended_created, r.ended_terminal(), r.ended_gave_up),
            (1, 1, 1)
        );
        assert_eq!(r.attempts_by_outcome["201_replayed"], 2);
        assert_eq!(r.created_at_s, [0.5, 3.0]);
        assert_eq!(r.first_created_after(1.0), Some(2.0));
        assert_eq!(r.first_created_after(3.0), None);
    }
}
