//! Admission of the reads (`GET /orders/{id}`), the same rule in both APIs and apart from the
//! orders' ([`crate::plumbing::admission::Admission`]): at most `places` reads in progress at once, at most
//! `queue` more waiting for a place, each for at most `QUEUE_TIMEOUT_MS`. A read that finds the
//! queue full, or waits out the timeout, is 503 `overloaded` (+ `Retry-After`), counted in
//! `reads_refused_total{reason}` (`queue_full`, `queue_timeout`).
//!
//! Why reads need a bound of their own: a read calls the seller (authentication) and then holds a
//! database connection for one query. Unbounded, a flood of reads — a slow seller service, every
//! read waiting on it — is as many seller calls and, once the seller answers, as many takers of
//! the pool's connections as there are reads, and the orders admitted by their own limit then
//! wait for connections behind them. Bounded, reads take at most `places` of the pool's
//! connections and the excess is refused at once. In blocking-api `places` is `READ_THREADS`, the
//! threads reads run on; in reactive-api `READ_IN_FLIGHT`. A waiting read whose client goes away
//! leaves the queue with its handler (actix drops it), so nobody's place is spent on it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::domain::error::ApiError;
use crate::plumbing::metrics::Metrics;

pub struct ReadAdmission {
    places: Arc<Semaphore>,
    waiting: AtomicUsize,
    queue: usize,
    timeout: Duration,
    metrics: Arc<Metrics>,
}

/// A read's place, given back when dropped.
pub struct ReadPlace {
    _permit: OwnedSemaphorePermit,
}

impl ReadAdmission {
    /// `places` (at least one) reads at once, `queue` waiting, each at most `timeout`.
    pub fn new(places: usize, queue: usize, timeout: Duration, metrics: Arc<Metrics>) -> Self {
        ReadAdmission {
            places: Arc::new(Semaphore::new(places.max(1))),
            waiting: AtomicUsize::new(0),
            queue,
            timeout,
            metrics,
        }
    }

    /// A place for one read, or 503 `overloaded` when the queue is full or the wait timed out.
    pub async fn enter(&self) -> Result<ReadPlace, ApiError> {
        if let Ok(permit) = self.places.clone().try_acquire_owned() {
            return Ok(ReadPlace { _permit: permit });
        }
        let _waiting = match Waiting::enter(&self.waiting, self.queue) {
            Some(waiting) => waiting,
            None => return Err(self.refuse("queue_full")),
        };
        match tokio::time::timeout(self.timeout, self.places.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(ReadPlace { _permit: permit }),
            // Timed out (or the semaphore closed, which never happens).
            _ => Err(self.refuse("queue_timeout")),
        }
    }

    fn refuse(&self, reason: &str) -> ApiError {
        self.metrics
            .reads_refused
            .with_label_values(&[reason])
            .inc();
        ApiError::Overloaded
    }
}

/// One of at most `queue` waiters, for as long as it waits (also when its handler is dropped).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn enter(waiting: &'a AtomicUsize, queue: usize) -> Option<Self> {
        waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < queue).then_some(n + 1)
            })
            .ok()
            .map(|_| Waiting(waiting))
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(places: usize, queue: usize, timeout_ms: u64) -> (ReadAdmission, Arc<Metrics>) {
        let metrics = Arc::new(Metrics::new(10, None));
        let admission = ReadAdmission::new(
            places,
            queue,
            Duration::from_millis(timeout_ms),
            metrics.clone(),
        );
        (admission, metrics)
    }

    fn refused(metrics: &Metrics, reason: &str) -> u64 {
        metrics.reads_refused.with_label_values(&[reason]).get()
    }

    #[tokio::test]
    async fn beyond_the_places_and_the_queue_a_read_is_refused_at_once() {
        let (admission, metrics) = admission(2, 1, 10_000);
        let admission = Arc::new(admission);
        let _a = admission.enter().await.unwrap();
        let _b = admission.enter().await.unwrap();
        let waiter = tokio::spawn({
            let admission = admission.clone();
            async move { admission.enter().await.map(|_| ()) }
        });
        while admission.waiting.load(Ordering::Acquire) == 0 {
            tokio::task::yield_now().await;
        }
        let started = std::time::Instant::now();
        assert!(matches!(admission.enter().await, Err(ApiError::Overloaded)));
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(refused(&metrics, "queue_full"), 1);
        drop(_a);
        waiter
            .await
            .unwrap()
            .expect("a freed place goes to the waiter");
        assert_eq!(admission.waiting.load(Ordering::Acquire), 0);
    }

    #[tokio::test]
    async fn a_read_waits_for_a_place_at_most_the_timeout() {
        let (admission, metrics) = admission(1, 8, 50);
        let _held = admission.enter().await.unwrap();
        let started = std::time::Instant::now();
        assert!(matches!(admission.enter().await, Err(ApiError::Overloaded)));
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert_eq!(refused(&metrics, "queue_timeout"), 1);
        assert_eq!(
            admission.waiting.load(Ordering::Acquire),
            0,
            "it left the queue"
        );
    }

    #[tokio::test]
    async fn a_waiter_dropped_leaves_the_queue() {
        let (admission, _) = admission(1, 1, 10_000);
        let _held = admission.enter().await.unwrap();
        let wait = tokio::time::timeout(Duration::from_millis(20), admission.enter()).await;
        assert!(wait.is_err(), "it was still waiting");
        assert_eq!(admission.waiting.load(Ordering::Acquire), 0);
    }
}
