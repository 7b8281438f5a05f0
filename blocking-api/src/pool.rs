//! The bounded blocking pool every order request runs on, with its gauges (busy, queued), and
//! the small, bounded pool of its own that the reads (`GET /orders/{id}`) run on instead — see
//! [`ReadPool`] for why they must not share the orders' threads.

use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use actix_web::web;
use order_core::ApiError;
use order_core::plumbing::metrics::Metrics;
use order_core::plumbing::read_admission::ReadAdmission;

/// Runs `work` on the blocking pool. While all threads are busy it waits in the pool's queue
/// (counted as `blocking_pool_queued`), as a servlet container queues behind its thread pool.
pub async fn run<T, F>(metrics: &Arc<Metrics>, work: F) -> Result<T, ApiError>
where
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
    T: Send + 'static,
{
    let gauges = metrics.clone();
    let queued = Gauge::hold(metrics, |b| &b.queued);
    let result = web::block(move || {
        drop(queued);
        let _busy = Gauge::hold(&gauges, |b| &b.busy);
        work()
    })
    .await;
    result.map_err(|e| ApiError::Internal(anyhow::anyhow!("blocking pool: {e}")))?
}

/// Holds a blocking-pool gauge up by one for its lifetime (also if the task is dropped).
struct Gauge(Option<prometheus::IntGauge>);

impl Gauge {
    fn hold(
        metrics: &Metrics,
        pick: impl Fn(&order_core::plumbing::metrics::BlockingPoolMetrics) -> &prometheus::IntGauge,
    ) -> Gauge {
        let gauge = metrics.blocking.as_ref().map(|b| pick(b).clone());
        if let Some(g) = &gauge {
            g.inc();
        }
        Gauge(gauge)
    }
}

impl Drop for Gauge {
    fn drop(&mut self) {
        if let Some(g) = &self.0 {
            g.dec();
        }
    }
}

/// The pool of the reads, `GET /orders/{id}`: `READ_THREADS` threads of their own, behind the
/// reads' admission (`order_core::plumbing::read_admission`: a place per thread, at most `READ_QUEUE`
/// waiting, each at most `QUEUE_TIMEOUT_MS`).
///
/// Why not the order pool: with `MAX_IN_FLIGHT` = `BLOCKING_THREADS` (the default) every admitted
/// order counts on finding a thread at once, and orders that wait on a slow gateway hold every
/// thread for as long as it is slow. A read on that pool queued behind them (a lookup answered
/// after the gateway's seconds), or, once reads are many, took the threads admitted orders count
/// on: with 64 orders waiting 4 s on the gateway, a `GET /orders/{id}` on the shared pool answered
/// after 3.6 s (the contract test `reads_answer_while_orders_fill_every_place`, reads on the orders' pool).
/// Reads hold a thread for one query; a few threads of their own serve them, and when those are
/// busy reads wait for each other only.
///
/// Bounded, and skipping the abandoned: a flood of reads whose clients give up (a slow seller
/// service, every read waiting on it) must not leave thousands of jobs that still call the seller
/// long after nobody waits. A read waits for its place in the admission, where a client that goes
/// away takes its wait with it; a job handed to a thread whose answer nobody waits for any more
/// is skipped, not run. The probes never come here (`/ready` answers on the event loop, see
/// `order_core::plumbing::http::ready`).
pub struct ReadPool {
    admission: ReadAdmission,
    jobs: mpsc::SyncSender<Job>,
}

type Job = Box<dyn FnOnce() + Send>;

impl ReadPool {
    /// Starts `threads` threads (at least one) behind the reads' admission: a place per thread,
    /// at most `queue` reads waiting, each at most `queue_timeout`. The threads end when the pool
    /// is dropped.
    pub fn start(
        threads: usize,
        queue: usize,
        queue_timeout: Duration,
        metrics: Arc<Metrics>,
    ) -> std::io::Result<Self> {
        let threads = threads.max(1);
        let admission = ReadAdmission::new(threads, queue, queue_timeout, metrics);
        // A job is sent only with a place, so the channel never holds more than one per thread.
        let (jobs, queued) = mpsc::sync_channel::<Job>(threads);
        let queued = Arc::new(Mutex::new(queued));
        for i in 0..threads {
            let queued = queued.clone();
            std::thread::Builder::new()
                .name(format!("read-{i}"))
                .spawn(move || {
                    loop {
                        // One idle thread waits for the next job, the others for the lock; the
                        // lock is let go before the job runs. No job panics while holding it.
                        let next = queued.lock().expect("never poisoned").recv();
                        let Ok(job) = next else { return };
                        job();
                    }
                })?;
        }
        Ok(ReadPool { admission, jobs })
    }

    /// Runs `work` on one of the pool's threads once the admission gives it a place (else 503
    /// `overloaded`), unless nobody waits for the answer any more when its turn comes (skipped).
    pub async fn run<T, F>(&self, work: F) -> Result<T, ApiError>
    where
        F: FnOnce() -> Result<T, ApiError> + Send + 'static,
        T: Send + 'static,
    {
        let _place = self.admission.enter().await?;
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            if answer.is_closed() {
                return;
            }
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            let _ = answer.send(outcome);
        });
        let gone = || ApiError::Internal(anyhow::anyhow!("read pool: its threads are gone"));
        match self.jobs.try_send(job) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(_)) => return Err(ApiError::Overloaded),
            Err(mpsc::TrySendError::Disconnected(_)) => return Err(gone()),
        }
        match answered.await.map_err(|_| gone())? {
            Ok(result) => result,
            Err(_) => Err(ApiError::Internal(anyhow::anyhow!(
                "read pool: the read panicked"
            ))),
        }
    }
}
