//! A blocking facade over the async NATS client (`event_broker::Broker`), as reqwest::blocking is
//! over reqwest.
//!
//! The choice: a current-thread tokio runtime owned by a thread of its own ("nats") drives the
//! connection — its socket, its timers, the task that matches acknowledgements to publications —
//! and every caller (a blocking-pool thread running an order, the recovery thread, the outbox
//! relay thread) runs its call with `Handle::block_on` on its own thread. So:
//! - nothing of NATS runs on actix's event loops (they only accept HTTP), and a call blocks only
//!   the thread that made it, as every other step of blocking-api does;
//! - there is no channel hop per call (the reqwest::blocking way): the future is polled on the
//!   caller's thread and woken by the "nats" thread's driver;
//! - the alternative, `Handle::block_on` on actix's own runtime, would put the connection's I/O on
//!   an actix worker (the one that happened to connect) and fail on the plain threads, which have
//!   no runtime at all.
//!
//! `Handle::block_on` must not be called from async code; the only async use, connecting at
//! start-up, goes through [`BlockingBroker::connect`], which awaits a task on the "nats" runtime.

use std::time::Duration;

use anyhow::Context;
use event_broker::{Ack, Broker, Publication, PublishFailure};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// How long the API waits at start-up for NATS and its JetStream to be usable.
const CONNECT_PATIENCE: Duration = Duration::from_secs(30);

pub struct BlockingBroker {
    inner: Broker,
    handle: Handle,
    /// Dropping it ends the "nats" thread.
    _stop: oneshot::Sender<()>,
}

impl BlockingBroker {
    /// Starts the "nats" thread and connects on it (async: called while the server is built).
    pub async fn connect(url: &str, timeout: Duration) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("building the NATS runtime")?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("nats".into())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                })
            })
            .context("starting the NATS thread")?;
        let url_owned = url.to_owned();
        let inner = handle
            .spawn(async move { Broker::connect(&url_owned, timeout, CONNECT_PATIENCE).await })
            .await
            .context("the NATS connect task failed")??;
        Ok(BlockingBroker {
            inner,
            handle,
            _stop: stop,
        })
    }

    /// Publishes and waits for JetStream's acknowledgement (bounded by `NATS_TIMEOUT_MS` from the
    /// send).
    pub fn publish(&self, p: &Publication) -> Result<Ack, PublishFailure> {
        self.handle.block_on(self.inner.publish(p))
    }

    /// Publishes every message, then waits for all acknowledgements at once; the batch ends
    /// within `NATS_TIMEOUT_MS` as a whole.
    pub fn publish_all(&self, ps: &[Publication]) -> Vec<Result<Ack, PublishFailure>> {
        self.handle.block_on(self.inner.publish_all(ps))
    }

    /// Whether the stream holds a message on `subject`.
    pub fn contains(&self, subject: &str) -> anyhow::Result<bool> {
        self.handle.block_on(self.inner.contains(subject))
    }
}
