//! The persist batch writer, as a task fed by a bounded channel (see `order_core::plumbing::batch` for what
//! is batched and why). Step for step the same as blocking-api's `batch.rs`, where the writer is a
//! thread fed by a bounded queue.
//!
//! A request hands its order to the channel (waiting for a place when it is full) and awaits its
//! own reply until the batch holding it has committed. The writer's connection is one of the
//! pool's, so the database sees no more connections than `DB_POOL_SIZE`.

use order_core::domain::error::ApiError;
use order_core::domain::idempotency::KeyRef;
use order_core::domain::order::{Outcome, Placed};
use order_core::plumbing::batch::{
    self, BatchConfig, BatchMetrics, OnBatchError, PersistColumns, PersistRow,
};
use order_core::plumbing::metrics::Metrics;
use order_core::plumbing::settings::CommonSettings;
use sqlx::Row;
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::connections::PgConn;
use crate::db::error::db_error;
use crate::db::{Conn, Db};

/// One order and where its outcome goes.
struct Job {
    row: PersistRow,
    reply: oneshot::Sender<Result<bool, ApiError>>,
}

/// The requests' side of the writer; `None` when persists are not batched.
pub struct Writer(Option<mpsc::Sender<Job>>);

impl Writer {
    /// Starts the writer task (on the current runtime) when `PERSIST_BATCH_MAX` > 1. It stops
    /// once every `Writer` handle is gone (with the application state).
    pub fn start(settings: &CommonSettings, db: Db, metrics: &Metrics) -> Writer {
        let config = BatchConfig::from_settings(settings);
        let batch_metrics = BatchMetrics::new(metrics, config);
        let Some(config) = config else {
            return Writer(None);
        };
        let (tx, rx) = mpsc::channel(config.capacity);
        tokio::spawn(async move { run(rx, config, &db, &batch_metrics).await });
        Writer(Some(tx))
    }

    /// `true` when this order's persist goes through the writer.
    pub fn takes(&self) -> bool {
        self.0.is_some()
    }

    /// Persists the order in the next batch and waits for that batch's commit. `false`: this
    /// attempt no longer owns the key, and nothing was written (as `db::queries::persist_order`).
    pub async fn persist(
        &self,
        key: KeyRef<'_>,
        outcome: &Outcome,
        placed: Placed<'_>,
    ) -> Result<bool, ApiError> {
        let queue = self.0.as_ref().ok_or_else(batch::writer_stopped)?;
        let (reply, answer) = oneshot::channel();
        let row = PersistRow::new(key, outcome, placed);
        queue
            .send(Job { row, reply })
            .await
            .map_err(|_| batch::writer_stopped())?;
        answer.await.map_err(|_| batch::writer_stopped())?
    }
}

/// The writer's loop: a batch is the first order that arrives, then whatever else arrives within
/// `PERSIST_BATCH_WAIT_MS` of it, up to `PERSIST_BATCH_MAX` orders. The writer keeps its pooled
/// connection from one batch to the next while orders keep coming (so a batch never queues for a
/// connection behind the requests' own statements) and gives it back when the queue runs dry.
async fn run(mut queue: mpsc::Receiver<Job>, config: BatchConfig, db: &Db, metrics: &BatchMetrics) {
    let mut conn: Option<Conn> = None;
    loop {
        let first = match queue.try_recv() {
            Ok(job) => job,
            Err(TryRecvError::Empty) => {
                conn = None;
                match queue.recv().await {
                    Some(job) => job,
                    None => return,
                }
            }
            Err(TryRecvError::Disconnected) => return,
        };
        let closes = Instant::now() + config.wait;
        let mut jobs = vec![first];
        while jobs.len() < config.max {
            match tokio::time::timeout_at(closes, queue.recv()).await {
                Ok(Some(job)) => jobs.push(job),
                Ok(None) | Err(_) => break,
            }
        }
        metrics.orders.observe(jobs.len() as f64);
        write(db, &mut conn, metrics, jobs).await;
    }
}

/// Writes one batch and answers each of its orders.
async fn write(db: &Db, conn: &mut Option<Conn>, metrics: &BatchMetrics, jobs: Vec<Job>) {
    let result = persist_rows(db, conn, jobs.iter().map(|j| &j.row)).await;
    let answers: Vec<Result<bool, ApiError>> = match result {
        Ok(written) => written.into_iter().map(Ok).collect(),
        Err(e) => match batch::on_batch_error(&e, jobs.len()) {
            OnBatchError::OneByOne => {
                metrics.fallbacks.inc();
                tracing::warn!(error = %e, orders = jobs.len(), "persist batch refused; writing its orders one by one");
                let mut answers = Vec::with_capacity(jobs.len());
                for job in &jobs {
                    answers.push(persist_rows(db, conn, [&job.row]).await.map(|w| w[0]));
                }
                answers
            }
            OnBatchError::FailEach => jobs
                .iter()
                .map(|_| Err(batch::failure_for_each(&e)))
                .collect(),
        },
    };
    for (job, answer) in jobs.into_iter().zip(answers) {
        // A request that is gone no longer waits for its answer.
        let _ = job.reply.send(answer);
    }
}

/// One `PERSIST_ORDERS` statement for `rows` (autocommit: one commit), on the writer's
/// connection, taken from the pool when it has none. A failed statement gives the connection up
/// (it may be broken); the next batch takes a fresh one.
async fn persist_rows<'r>(
    db: &Db,
    conn: &mut Option<Conn>,
    rows: impl IntoIterator<Item = &'r PersistRow>,
) -> Result<Vec<bool>, ApiError> {
    let columns = PersistColumns::of(rows);
    let len = columns.order_id.len();
    let held = match conn {
        Some(held) => held,
        None => conn.insert(db.acquire("persist_batch").await?),
    };
    match persist_orders(held.conn(), columns).await {
        Ok(completed) => Ok(batch::written(len, &completed)),
        Err(e) => {
            *conn = None;
            Err(e)
        }
    }
}

/// `batch::PERSIST_ORDERS` with its arrays bound; the positions of the orders written.
async fn persist_orders(conn: &mut PgConn, c: PersistColumns) -> Result<Vec<i64>, ApiError> {
    let rows = conn
        .run(|pg| {
            sqlx::query(batch::PERSIST_ORDERS)
                .bind(c.seller_id)
                .bind(c.reference_id)
                .bind(c.attempt)
                .bind(c.response_status)
                .bind(c.response_body)
                .bind(c.order_id)
                .bind(c.full_name)
                .bind(c.tax_id)
                .bind(c.street)
                .bind(c.number)
                .bind(c.state)
                .bind(c.city)
                .bind(c.locality)
                .bind(c.zip_code)
                .bind(c.complement)
                .bind(c.status)
                .bind(c.amount)
                .bind(c.installments)
                .bind(c.payment_method)
                .bind(c.card_last4)
                .bind(c.payment_code)
                .bind(c.payment_status)
                .bind(c.risk_recommendation)
                .bind(c.created_at)
                .bind(c.payment_key)
                .bind(c.item_order)
                .bind(c.item_position)
                .bind(c.item_name)
                .bind(c.item_quantity)
                .bind(c.item_value)
                .fetch_all(pg)
        })
        .await
        .map_err(db_error)?;
    rows.iter()
        .map(|r| r.try_get::<i64, _>(0))
        .collect::<Result<_, _>>()
        .map_err(db_error)
}
