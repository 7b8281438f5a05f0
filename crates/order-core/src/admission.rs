//! Admission control and deadlines, the same for both APIs: shed early instead of queueing to
//! death.
//!
//! At most `MAX_IN_FLIGHT` orders are admitted at once; a request waits at most
//! `QUEUE_TIMEOUT_MS` for a place, then gets 503 `overloaded` within a few milliseconds — before
//! authentication, reservation or charge. An admitted order carries a [`Ticket`]: its deadline
//! (`REQUEST_DEADLINE_MS` from arrival: work that has not reached the charge by then stops) and
//! whether its client is still there (a client gone before the reservation cancels the work;
//! after it, the work runs to completion so that no reserved key or charge is abandoned).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::settings::CommonSettings;

pub struct Admission {
    /// `None`: no limit (`MAX_IN_FLIGHT=0`, the original experiment's behaviour).
    permits: Option<Arc<Semaphore>>,
    queue_timeout: Duration,
    deadline: Duration,
    metrics: Arc<Metrics>,
}

impl Admission {
    /// `default_max` is the API's own default for an unset `MAX_IN_FLIGHT`.
    pub fn new(settings: &CommonSettings, default_max: usize, metrics: Arc<Metrics>) -> Self {
        let max = settings.max_in_flight.unwrap_or(default_max);
        metrics.admission_limit.set(max as i64);
        Admission {
            permits: (max > 0).then(|| Arc::new(Semaphore::new(max))),
            queue_timeout: settings.queue_timeout(),
            deadline: settings.request_deadline(),
            metrics,
        }
    }

    /// Waits up to `QUEUE_TIMEOUT_MS` for a place. The [`ClientGuard`] stays with the handler;
    /// the [`Ticket`] goes with the work.
    pub async fn admit(&self) -> Result<(Ticket, ClientGuard), ApiError> {
        let arrived = Instant::now();
        let permit = match &self.permits {
            None => None,
            Some(permits) => {
                let wait = permits.clone().acquire_owned();
                match tokio::time::timeout(self.queue_timeout, wait).await {
                    Ok(Ok(permit)) => Some(permit),
                    // Timed out (or the semaphore closed, which never happens): refuse.
                    _ => return Err(self.shed(ApiError::Overloaded)),
                }
            }
        };
        self.metrics.admitted.inc();
        let client_gone = Arc::new(AtomicBool::new(false));
        let ticket = Ticket {
            _permit: permit,
            deadline: arrived + self.deadline,
            client_gone: client_gone.clone(),
            metrics: self.metrics.clone(),
        };
        let guard = ClientGuard {
            client_gone,
            answered: false,
        };
        Ok((ticket, guard))
    }

    fn shed(&self, error: ApiError) -> ApiError {
        self.metrics.shed.with_label_values(&[error.code()]).inc();
        error
    }
}

/// An admitted order's place, deadline and client; the place is given back when it is dropped.
pub struct Ticket {
    _permit: Option<OwnedSemaphorePermit>,
    deadline: Instant,
    client_gone: Arc<AtomicBool>,
    metrics: Arc<Metrics>,
}

impl Ticket {
    /// Before work that precedes the charge: stop if the deadline has passed.
    pub fn check_deadline(&self) -> Result<(), ApiError> {
        if Instant::now() >= self.deadline {
            return Err(self.shed(ApiError::DeadlineExceeded));
        }
        Ok(())
    }

    /// Just before the key is reserved: the last point where the work may simply stop.
    pub fn before_reservation(&self) -> Result<(), ApiError> {
        if self.client_gone.load(Ordering::Acquire) {
            return Err(self.shed(ApiError::ClientGone));
        }
        self.check_deadline()
    }

    /// A failed call made before the charge whose timeout the deadline cut short is reported as
    /// the deadline, not as the dependency.
    pub fn explain(&self, error: ApiError) -> ApiError {
        match error {
            ApiError::DependencyUnavailable { .. } if Instant::now() >= self.deadline => {
                self.shed(ApiError::DeadlineExceeded)
            }
            other => other,
        }
    }

    /// The timeout of a call made before the charge: `cap`, or less if the deadline is nearer.
    pub fn timeout(&self, cap: Duration) -> Duration {
        cap.min(self.deadline.saturating_duration_since(Instant::now()))
    }

    fn shed(&self, error: ApiError) -> ApiError {
        self.metrics.shed.with_label_values(&[error.code()]).inc();
        error
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.metrics.admitted.dec();
    }
}

/// Held by the handler while the work runs: dropped unanswered (actix drops a handler whose client
/// disconnected), it tells the work that nobody waits for it any more.
pub struct ClientGuard {
    client_gone: Arc<AtomicBool>,
    answered: bool,
}

impl ClientGuard {
    /// The work finished and its answer is on its way.
    pub fn answered(mut self) {
        self.answered = true;
    }
}

impl Drop for ClientGuard {
    fn drop(&mut self) {
        if !self.answered {
            self.client_gone.store(true, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(max: usize, queue_ms: u64, deadline_ms: u64) -> Admission {
        let mut s = CommonSettings::new("postgres://x", "http://y");
        s.max_in_flight = Some(max);
        s.queue_timeout_ms = queue_ms;
        s.request_deadline_ms = deadline_ms;
        Admission::new(&s, 1, Arc::new(Metrics::new(1, None)))
    }

    #[tokio::test]
    async fn beyond_the_limit_is_overloaded_after_the_queue_timeout() {
        let a = admission(1, 20, 30_000);
        let first = a.admit().await.unwrap();
        let start = Instant::now();
        let err = a.admit().await.err().unwrap();
        assert!(matches!(err, ApiError::Overloaded));
        assert!(start.elapsed() >= Duration::from_millis(20));
        drop(first);
        assert!(a.admit().await.is_ok(), "the place is given back");
        assert!(
            a.metrics
                .render()
                .contains(r#"orders_shed_total{reason="overloaded"} 1"#)
        );
    }

    #[tokio::test]
    async fn zero_means_no_limit() {
        let a = admission(0, 1, 30_000);
        let held: Vec<_> = futures_util::future::join_all((0..100).map(|_| a.admit())).await;
        assert!(held.iter().all(Result::is_ok));
    }

    #[tokio::test]
    async fn a_gone_client_stops_the_work_before_the_reservation_only() {
        let a = admission(2, 1, 30_000);
        let (ticket, guard) = a.admit().await.unwrap();
        assert!(ticket.before_reservation().is_ok());
        drop(guard); // the handler was dropped: the client disconnected
        assert!(matches!(
            ticket.before_reservation(),
            Err(ApiError::ClientGone)
        ));
        assert!(
            ticket.check_deadline().is_ok(),
            "past the reservation, work goes on"
        );
        let (answered, guard) = a.admit().await.unwrap();
        guard.answered();
        assert!(answered.before_reservation().is_ok());
    }

    #[tokio::test]
    async fn the_deadline_counts_from_arrival() {
        let a = admission(1, 1, 0);
        let (ticket, guard) = a.admit().await.unwrap();
        assert!(matches!(
            ticket.check_deadline(),
            Err(ApiError::DeadlineExceeded)
        ));
        assert_eq!(ticket.timeout(Duration::from_secs(10)), Duration::ZERO);
        guard.answered();
    }
}
