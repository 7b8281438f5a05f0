//! The bounded blocking pool every order request runs on, with its gauges (busy, queued).

use std::sync::Arc;

use actix_web::web;
use order_core::ApiError;
use order_core::metrics::Metrics;

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
        pick: impl Fn(&order_core::metrics::BlockingPoolMetrics) -> &prometheus::IntGauge,
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
