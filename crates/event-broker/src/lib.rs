//! The broker of the order events: NATS with JetStream, written once for both APIs and the lab.
//!
//! Part of the product (`crates/`), used by the lab only to count. Why a crate of its own: both
//! APIs publish the `order.created` event (the two-phase / after-commit / outbox experiment,
//! `docs/design.md`) and the lab counts what reached the stream;
//! none of them should carry a NATS client of its own, and `order-core` (the APIs' shared
//! contract) should not pull in a broker client for everyone who only needs the contract.
//!
//! The model: one file-backed stream, [`STREAM`], holding the subjects `orders.created.<order
//! id>` — one subject per order, so "is this order's event in the stream?" is a single
//! last-message-by-subject look-up (what two-phase recovery asks), and the lab's census of
//! subjects against orders tells lost, duplicated and orphaned events apart. An event counts as
//! published only once JetStream acknowledged it. Each message carries `Nats-Msg-Id` (the event
//! id): JetStream drops a second copy within [`DUPLICATE_WINDOW`], which is what makes the
//! outbox relay's at-least-once delivery land exactly once.
//!
//! Everything here is async; blocking-api wraps [`Broker`] in a blocking facade of its own.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::stream::{Config, LastRawMessageErrorKind, StorageType};
use async_nats::jetstream::{self, Context};
use bytes::Bytes;
use futures_util::TryStreamExt;

/// The stream of order events.
pub const STREAM: &str = "ORDERS";
/// The subjects it holds: `orders.created.<order id>`.
pub const SUBJECTS: &str = "orders.created.*";
/// How long JetStream remembers a `Nats-Msg-Id` to drop its duplicates. Longer than any lab run's
/// redelivery (an outbox relay retrying after a broker outage), and than JetStream's default 2 min.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(30 * 60);

/// The subject of one order's events.
pub fn subject_of(order_id: &str) -> String {
    format!("orders.created.{order_id}")
}

/// One message to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publication {
    pub subject: String,
    /// Sent as `Nats-Msg-Id`.
    pub msg_id: String,
    pub payload: Bytes,
}

/// JetStream's acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    pub sequence: u64,
    /// The stream already had this `Nats-Msg-Id`: nothing was stored.
    pub duplicate: bool,
}

/// Why a publication has no acknowledgement.
#[derive(Debug, thiserror::Error)]
pub enum PublishFailure {
    /// The broker answered that it did not store the message (no stream, an error reply).
    #[error("the broker refused the event: {0}")]
    Refused(String),
    /// No answer: a timeout or a lost connection. The message may or may not be in the stream.
    #[error("no answer from the broker: {0}")]
    Unknown(String),
}

impl PublishFailure {
    /// `refused` or `unknown`: the failure's kind, as the APIs' metrics label it.
    pub fn kind(&self) -> &'static str {
        match self {
            PublishFailure::Refused(_) => "refused",
            PublishFailure::Unknown(_) => "unknown",
        }
    }

    fn of(e: async_nats::jetstream::context::PublishError) -> Self {
        match e.kind() {
            PublishErrorKind::TimedOut | PublishErrorKind::BrokenPipe => {
                PublishFailure::Unknown(e.to_string())
            }
            _ => PublishFailure::Refused(e.to_string()),
        }
    }
}

/// A connection to NATS and its JetStream context.
#[derive(Clone)]
pub struct Broker {
    js: Context,
    /// `NATS_TIMEOUT_MS`: the bound of one publication (or one batch) as a whole, and of one
    /// look-up.
    timeout: Duration,
}

impl Broker {
    /// Connects to `url` (reconnecting by itself from then on) and makes sure the stream exists,
    /// trying for at most `patience` (the broker may start after the API). Every JetStream call
    /// is bounded by `timeout`: a publication from its send to its acknowledgement, a batch of
    /// them as a whole, a look-up.
    pub async fn connect(url: &str, timeout: Duration, patience: Duration) -> anyhow::Result<Self> {
        let client = async_nats::ConnectOptions::new()
            .connection_timeout(timeout)
            .retry_on_initial_connect()
            .connect(url)
            .await
            .with_context(|| format!("connecting to NATS at {url}"))?;
        let js = jetstream::ContextBuilder::new()
            .timeout(timeout)
            .ack_timeout(timeout)
            .build(client);
        let broker = Broker { js, timeout };
        let deadline = Instant::now() + patience;
        loop {
            match broker.ensure_stream().await {
                Ok(()) => return Ok(broker),
                Err(e) if Instant::now() >= deadline => {
                    return Err(e.context(format!("NATS at {url} has no usable JetStream")));
                }
                Err(e) => {
                    tracing::debug!(error = %e, "JetStream not ready yet");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    /// Creates the stream unless it exists (file storage, the duplicate window above).
    pub async fn ensure_stream(&self) -> anyhow::Result<()> {
        self.js
            .get_or_create_stream(Config {
                name: STREAM.to_owned(),
                subjects: vec![SUBJECTS.to_owned()],
                storage: StorageType::File,
                duplicate_window: DUPLICATE_WINDOW,
                ..Default::default()
            })
            .await
            .map(|_| ())
            .context("creating the JetStream stream ORDERS")
    }

    /// Removes the stream (tests: a broker that refuses every event).
    pub async fn delete_stream(&self) -> anyhow::Result<()> {
        self.js.delete_stream(STREAM).await?;
        Ok(())
    }

    /// Publishes one message and waits for JetStream's acknowledgement, within the timeout as
    /// a whole (the send may wait for room among the acknowledgements in flight; that wait is
    /// inside the bound too, which two-phase's in-doubt age relies on).
    pub async fn publish(&self, p: &Publication) -> Result<Ack, PublishFailure> {
        let mut results = self.publish_all(std::slice::from_ref(p)).await;
        results.pop().expect("one result per publication")
    }

    /// Publishes every message, then waits for all acknowledgements at once (one round trip
    /// for the batch, not one per message, however slow the broker); the whole batch ends
    /// within the timeout, and whatever is unacknowledged by then is `Unknown`. The results are
    /// in the same order.
    pub async fn publish_all(&self, ps: &[Publication]) -> Vec<Result<Ack, PublishFailure>> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut pending = Vec::with_capacity(ps.len());
        for p in ps {
            let send = self.js.send_publish(p.subject.clone(), message(p));
            pending.push(match tokio::time::timeout_at(deadline, send).await {
                Ok(sent) => sent.map_err(PublishFailure::of),
                Err(_) => Err(self.unanswered()),
            });
        }
        let acks = pending.into_iter().map(|sent| async move {
            let ack = tokio::time::timeout_at(deadline, sent?).await;
            match ack {
                Ok(Ok(a)) => Ok(Ack {
                    sequence: a.sequence,
                    duplicate: a.duplicate,
                }),
                Ok(Err(e)) => Err(PublishFailure::of(e)),
                Err(_) => Err(self.unanswered()),
            }
        });
        futures_util::future::join_all(acks).await
    }

    fn unanswered(&self) -> PublishFailure {
        PublishFailure::Unknown(format!("no acknowledgement within {:?}", self.timeout))
    }

    /// Whether the stream holds a message on `subject` (two-phase recovery's question), asked
    /// within the timeout.
    pub async fn contains(&self, subject: &str) -> anyhow::Result<bool> {
        let last = tokio::time::timeout(self.timeout, self.last(subject)).await;
        let last = last.map_err(|_| anyhow::anyhow!("no answer within {:?}", self.timeout))?;
        Ok(last?.is_some())
    }

    /// The payload of the last message on `subject`, if there is one.
    pub async fn last(&self, subject: &str) -> anyhow::Result<Option<Bytes>> {
        let stream = self.js.get_stream_no_info(STREAM).await?;
        match stream.get_last_raw_message_by_subject(subject).await {
            Ok(m) => Ok(Some(m.payload)),
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Every subject of the stream with its number of messages (the lab's census).
    pub async fn census(&self) -> anyhow::Result<BTreeMap<String, u64>> {
        let stream = self.js.get_stream(STREAM).await?;
        let mut subjects = stream.info_with_subjects(SUBJECTS).await?;
        let mut out = BTreeMap::new();
        while let Some((subject, count)) = subjects.try_next().await? {
            out.insert(subject, count as u64);
        }
        Ok(out)
    }
}

fn message(p: &Publication) -> PublishMessage {
    PublishMessage::build()
        .payload(p.payload.clone())
        .message_id(&p.msg_id)
}
