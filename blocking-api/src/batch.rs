//! The persist batch writer, as a thread fed by a bounded queue (see `order_core::plumbing::batch` for what
//! is batched and why). Step for step the same as reactive-api's `batch.rs`, where the writer is a
//! task fed by a bounded channel.
//!
//! A request hands its order to the queue (waiting for a place when it is full) and blocks on its
//! own reply channel until the batch holding it has committed. The writer's connection is one of
//! the pool's, so the database sees no more connections than `DB_POOL_SIZE`.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, sync_channel};
use std::time::Instant;

use order_core::domain::error::ApiError;
use order_core::domain::idempotency::KeyRef;
use order_core::domain::order::{Outcome, Placed};
use order_core::plumbing::batch::{
    self, BatchConfig, BatchMetrics, OnBatchError, PersistColumns, PersistRow,
};
use order_core::plumbing::metrics::Metrics;
use order_core::plumbing::settings::CommonSettings;

use diesel::sql_types::{Array, BigInt, Integer, Nullable, Text, Timestamptz};
use diesel::{QueryableByName, RunQueryDsl, sql_query};

use crate::connections::PgConn;
use crate::db::error::db_error;
use crate::db::prepared::{Prepare, statement};
use crate::db::{Conn, Db};

/// One order and where its outcome goes.
struct Job {
    row: PersistRow,
    reply: SyncSender<Result<bool, ApiError>>,
}

/// The requests' side of the writer; `None` when persists are not batched.
pub struct Writer(Option<SyncSender<Job>>);

impl Writer {
    /// Starts the writer thread when `PERSIST_BATCH_MAX` > 1. It stops once every `Writer` handle
    /// is gone (with the application state).
    pub fn start(settings: &CommonSettings, db: Db, metrics: &Metrics) -> std::io::Result<Writer> {
        let config = BatchConfig::from_settings(settings);
        let batch_metrics = BatchMetrics::new(metrics, config);
        let Some(config) = config else {
            return Ok(Writer(None));
        };
        let (tx, rx) = sync_channel(config.capacity);
        std::thread::Builder::new()
            .name("persist-batch".into())
            .spawn(move || run(&rx, config, &db, &batch_metrics))?;
        Ok(Writer(Some(tx)))
    }

    /// `true` when this order's persist goes through the writer.
    pub fn takes(&self) -> bool {
        self.0.is_some()
    }

    /// Persists the order in the next batch and waits for that batch's commit. `false`: this
    /// attempt no longer owns the key, and nothing was written (as `db::queries::persist_order`).
    pub fn persist(
        &self,
        key: KeyRef<'_>,
        outcome: &Outcome,
        placed: Placed<'_>,
    ) -> Result<bool, ApiError> {
        let queue = self.0.as_ref().ok_or_else(batch::writer_stopped)?;
        let (reply, answer) = sync_channel(1);
        let row = PersistRow::new(key, outcome, placed);
        queue
            .send(Job { row, reply })
            .map_err(|_| batch::writer_stopped())?;
        answer.recv().map_err(|_| batch::writer_stopped())?
    }
}

/// The writer's loop: a batch is the first order that arrives, then whatever else arrives within
/// `PERSIST_BATCH_WAIT_MS` of it, up to `PERSIST_BATCH_MAX` orders. The writer keeps its pooled
/// connection from one batch to the next while orders keep coming (so a batch never queues for a
/// connection behind the requests' own statements) and gives it back when the queue runs dry.
fn run(queue: &Receiver<Job>, config: BatchConfig, db: &Db, metrics: &BatchMetrics) {
    let mut conn: Option<Conn> = None;
    loop {
        let first = match queue.try_recv() {
            Ok(job) => job,
            Err(TryRecvError::Empty) => {
                conn = None;
                match queue.recv() {
                    Ok(job) => job,
                    Err(_) => return,
                }
            }
            Err(TryRecvError::Disconnected) => return,
        };
        let closes = Instant::now() + config.wait;
        let mut jobs = vec![first];
        while jobs.len() < config.max {
            let left = closes.saturating_duration_since(Instant::now());
            match queue.recv_timeout(left) {
                Ok(job) => jobs.push(job),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        metrics.orders.observe(jobs.len() as f64);
        write(db, &mut conn, metrics, jobs);
    }
}

/// Writes one batch and answers each of its orders.
fn write(db: &Db, conn: &mut Option<Conn>, metrics: &BatchMetrics, jobs: Vec<Job>) {
    let result = persist_rows(db, conn, jobs.iter().map(|j| &j.row));
    let answers: Vec<Result<bool, ApiError>> = match result {
        Ok(written) => written.into_iter().map(Ok).collect(),
        Err(e) => match batch::on_batch_error(&e, jobs.len()) {
            OnBatchError::OneByOne => {
                metrics.fallbacks.inc();
                tracing::warn!(error = %e, orders = jobs.len(), "persist batch refused; writing its orders one by one");
                jobs.iter()
                    .map(|j| persist_rows(db, conn, [&j.row]).map(|w| w[0]))
                    .collect()
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
fn persist_rows<'r>(
    db: &Db,
    conn: &mut Option<Conn>,
    rows: impl IntoIterator<Item = &'r PersistRow>,
) -> Result<Vec<bool>, ApiError> {
    let columns = PersistColumns::of(rows);
    let len = columns.order_id.len();
    let held = match conn {
        Some(held) => held,
        None => conn.insert(db.acquire("persist_batch")?),
    };
    match persist_orders(held.conn(), columns) {
        Ok(completed) => Ok(batch::written(len, &completed)),
        Err(e) => {
            *conn = None;
            Err(e)
        }
    }
}

/// `batch::PERSIST_ORDERS` with its arrays bound; the positions of the orders written.
fn persist_orders(conn: &mut PgConn, c: PersistColumns) -> Result<Vec<i64>, ApiError> {
    #[derive(QueryableByName)]
    struct Completed {
        #[diesel(sql_type = BigInt)]
        completed: i64,
    }
    let rows: Vec<Completed> = conn
        .run(|pg| {
            sql_query(batch::PERSIST_ORDERS)
                .bind::<Array<Text>, _>(c.seller_id)
                .bind::<Array<Text>, _>(c.reference_id)
                .bind::<Array<Integer>, _>(c.attempt)
                .bind::<Array<Integer>, _>(c.response_status)
                .bind::<Array<Text>, _>(c.response_body)
                .bind::<Array<Text>, _>(c.order_id)
                .bind::<Array<Text>, _>(c.full_name)
                .bind::<Array<Text>, _>(c.tax_id)
                .bind::<Array<Text>, _>(c.street)
                .bind::<Array<Text>, _>(c.number)
                .bind::<Array<Text>, _>(c.state)
                .bind::<Array<Text>, _>(c.city)
                .bind::<Array<Text>, _>(c.locality)
                .bind::<Array<Text>, _>(c.zip_code)
                .bind::<Array<Nullable<Text>>, _>(c.complement)
                .bind::<Array<Text>, _>(c.status)
                .bind::<Array<BigInt>, _>(c.amount)
                .bind::<Array<BigInt>, _>(c.installments)
                .bind::<Array<Text>, _>(c.payment_method)
                .bind::<Array<Text>, _>(c.card_last4)
                .bind::<Array<Text>, _>(c.payment_code)
                .bind::<Array<Text>, _>(c.payment_status)
                .bind::<Array<Text>, _>(c.risk_recommendation)
                .bind::<Array<Timestamptz>, _>(c.created_at)
                .bind::<Array<Text>, _>(c.payment_key)
                .bind::<Array<BigInt>, _>(c.item_order)
                .bind::<Array<Integer>, _>(c.item_position)
                .bind::<Array<Text>, _>(c.item_name)
                .bind::<Array<BigInt>, _>(c.item_quantity)
                .bind::<Array<BigInt>, _>(c.item_value)
                .prepared_as::<statement::PERSIST_ORDERS>()
                .load(pg)
        })
        .map_err(db_error)?;
    Ok(rows.into_iter().map(|r| r.completed).collect())
}
