//! Persist batching ("group commit" by the application, experiment E): what the two APIs' batch
//! writers share — the multi-row statement, the rows it binds, when to batch and what to do when
//! a batch fails.
//!
//! With `PERSIST_BATCH_MAX` > 1 (and `DB_TX_SCOPE=short`), an order whose charge succeeded is not
//! persisted by its own request: it goes to one writer (reactive-api: a task fed by a bounded
//! channel; blocking-api: a thread fed by a bounded queue) that writes up to `PERSIST_BATCH_MAX`
//! orders — or what arrived within `PERSIST_BATCH_WAIT_MS` of the first — with [`PERSIST_ORDERS`]:
//! one statement, so one transaction and one commit (one WAL flush, one round trip) for the whole
//! batch, and one multi-row write per table. Each request waits for its batch's commit and gets
//! its own outcome: written, or not written because its attempt no longer owns the key (the same
//! `bool` as the one-order statement, fenced the same way).
//!
//! Only that final persist is batched. The reservation and the `CHARGING` mark stay one
//! autocommit statement per order: the reservation's loser reads the row it lost to on the same
//! connection, and two requests for one key in one multi-row `ON CONFLICT` would fail the whole
//! statement; the `CHARGING` mark sits right before the charge on every order's critical path, and
//! is the point after which a failure must be left to recovery. Outcomes without an order
//! (declines, risk refusals) are rare and stay on the one-order path too.
//!
//! A batch the database refuses (a constraint, a bad value: [`ApiError::Internal`]) is written
//! again one order at a time, each in its own statement, so one bad order fails alone. A batch
//! that failed because the database is unavailable fails every order in it with
//! `database_unavailable`: each request's persist retries (`PERSIST_RETRY_BUDGET`) go through the
//! writer again, and what is still unwritten stays `CHARGING`, for the client's retry or recovery —
//! exactly as for a one-order persist that failed.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use prometheus::{Histogram, HistogramOpts, IntCounter, IntGauge};

use crate::domain::error::ApiError;
use crate::domain::idempotency::KeyRef;
use crate::domain::order::{OrderDocument, Outcome, Placed, plain};
use crate::plumbing::metrics::Metrics;
use crate::plumbing::settings::{CommonSettings, TxScope};

/// Completes each key with its 201 and writes customers, orders and items for a whole batch, in
/// one statement. Every parameter is an array with one element per order, in batch order, except
/// the items (`$26`–`$30`), one element per item, each tagged with the 1-based position of its
/// order in the batch. Like `sql::PERSIST_ORDER`, fenced by the attempt: an order whose key is no
/// longer its attempt's writes nothing. Returns the positions of the orders written.
/// `$1` seller_id, `$2` reference_id, `$3` attempt, `$4` response status, `$5` response body,
/// `$6` order id; customer `$7`..`$15`: full_name, tax_id, street, number, state, city, locality,
/// zip_code, complement (nullable elements); order `$16` status, `$17` amount, `$18` installments,
/// `$19` payment_method, `$20` card_last4, `$21` payment_code, `$22` payment_status, `$23`
/// risk_recommendation, `$24` created_at, `$25` payment_key; items `$26` order position, `$27`
/// positions, `$28` names, `$29` quantities, `$30` values.
///
/// Customer ids are drawn from the sequence before the insert (`kc`), so that each order row can
/// name its customer's id; `kc` calls `nextval`, which makes PostgreSQL compute it once.
pub const PERSIST_ORDERS: &str = "\
WITH b AS (
    SELECT *
      FROM UNNEST($1::text[], $2::text[], $3::int4[], $4::int4[], $5::text[], $6::text[],
                  $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
                  $13::text[], $14::text[], $15::text[], $16::text[], $17::int8[], $18::int8[],
                  $19::text[], $20::text[], $21::text[], $22::text[], $23::text[],
                  $24::timestamptz[], $25::text[])
           WITH ORDINALITY
           AS b(seller_id, reference_id, attempt, response_status, response_body, order_id,
                full_name, tax_id, street, number, state, city, locality, zip_code, complement,
                status, amount, installments, payment_method, card_last4, payment_code,
                payment_status, risk_recommendation, created_at, payment_key, n)
), k AS (
    UPDATE idempotency_keys ik
       SET state = 'COMPLETED', response_status = b.response_status,
           response_body = b.response_body, order_id = b.order_id, pending_order = NULL,
           updated_at = now()
      FROM b
     WHERE ik.seller_id = b.seller_id AND ik.reference_id = b.reference_id
       AND ik.attempt = b.attempt AND ik.state IN ('IN_PROGRESS', 'CHARGING')
 RETURNING b.n
), kc AS (
    SELECT k.n, nextval(pg_get_serial_sequence('customers', 'id')) AS customer_id FROM k
), c AS (
    INSERT INTO customers (id, full_name, tax_id, street, number, state, city, locality,
                           zip_code, complement)
    SELECT kc.customer_id, b.full_name, b.tax_id, b.street, b.number, b.state, b.city,
           b.locality, b.zip_code, b.complement
      FROM kc JOIN b USING (n)
), o AS (
    INSERT INTO orders (id, seller_id, reference_id, customer_id, status, amount, installments,
                        payment_method, card_last4, payment_code, payment_status,
                        risk_recommendation, created_at, payment_key)
    SELECT b.order_id, b.seller_id, b.reference_id, kc.customer_id, b.status, b.amount,
           b.installments::int4, b.payment_method, b.card_last4, b.payment_code,
           b.payment_status, b.risk_recommendation, b.created_at, b.payment_key
      FROM kc JOIN b USING (n)
), i AS (
    INSERT INTO order_items (order_id, position, name, quantity, value)
    SELECT b.order_id, t.position, t.name, t.quantity, t.value
      FROM kc JOIN b USING (n)
      JOIN UNNEST($26::int8[], $27::int4[], $28::text[], $29::int8[], $30::int8[])
           AS t(n, position, name, quantity, value) USING (n)
)
SELECT n AS completed FROM k";

/// How the writer batches, from `PERSIST_BATCH_MAX` and `PERSIST_BATCH_WAIT_MS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchConfig {
    /// Most orders in one batch.
    pub max: usize,
    /// How long a batch stays open for more orders after its first one.
    pub wait: Duration,
    /// Orders the writer's queue holds; a request beyond it waits for a place (back-pressure).
    pub capacity: usize,
}

impl BatchConfig {
    /// `None` when persists are not batched: `PERSIST_BATCH_MAX` 1, or a request-scope
    /// transaction (`DB_TX_SCOPE=request`), whose persist belongs to the request's own transaction.
    pub fn from_settings(settings: &CommonSettings) -> Option<BatchConfig> {
        if settings.persist_batch_max <= 1 || settings.db_tx_scope == TxScope::Request {
            return None;
        }
        let max = settings.persist_batch_max;
        Some(BatchConfig {
            max,
            wait: Duration::from_millis(settings.persist_batch_wait_ms),
            // Two batches' worth: the next batch fills while one is being written.
            capacity: (2 * max).max(64),
        })
    }
}

/// One order for [`PERSIST_ORDERS`], owned: it crosses to the writer's thread or task.
#[derive(Debug, Clone, PartialEq)]
pub struct PersistRow {
    pub seller_id: String,
    pub reference_id: String,
    pub attempt: i32,
    pub response_status: i32,
    pub response_body: String,
    pub doc: OrderDocument,
    pub payment_key: String,
}

impl PersistRow {
    /// The row of the order `placed` by attempt `key`, answered with `outcome`.
    pub fn new(key: KeyRef<'_>, outcome: &Outcome, placed: Placed<'_>) -> Self {
        let Placed { doc, payment_key } = placed;
        PersistRow {
            seller_id: key.seller_id.to_owned(),
            reference_id: key.reference_id.to_owned(),
            attempt: key.attempt,
            response_status: i32::from(outcome.status),
            response_body: outcome.body.clone(),
            doc: doc.clone(),
            payment_key: payment_key.to_owned(),
        }
    }
}

/// [`PERSIST_ORDERS`]' parameters for a batch, as the arrays both drivers bind, in order.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct PersistColumns {
    pub seller_id: Vec<String>,
    pub reference_id: Vec<String>,
    pub attempt: Vec<i32>,
    pub response_status: Vec<i32>,
    pub response_body: Vec<String>,
    pub order_id: Vec<String>,
    pub full_name: Vec<String>,
    pub tax_id: Vec<String>,
    pub street: Vec<String>,
    pub number: Vec<String>,
    pub state: Vec<String>,
    pub city: Vec<String>,
    pub locality: Vec<String>,
    pub zip_code: Vec<String>,
    pub complement: Vec<Option<String>>,
    pub status: Vec<String>,
    pub amount: Vec<i64>,
    pub installments: Vec<i64>,
    pub payment_method: Vec<String>,
    pub card_last4: Vec<String>,
    pub payment_code: Vec<String>,
    pub payment_status: Vec<String>,
    pub risk_recommendation: Vec<String>,
    pub created_at: Vec<DateTime<Utc>>,
    pub payment_key: Vec<String>,
    /// Per item: the 1-based position of its order in the batch.
    pub item_order: Vec<i64>,
    pub item_position: Vec<i32>,
    pub item_name: Vec<String>,
    pub item_quantity: Vec<i64>,
    pub item_value: Vec<i64>,
}

impl PersistColumns {
    pub fn of<'r>(rows: impl IntoIterator<Item = &'r PersistRow>) -> Self {
        let mut c = PersistColumns::default();
        for (i, r) in rows.into_iter().enumerate() {
            let d = &r.doc;
            let (cust, addr, pay) = (&d.customer, &d.customer.address, &d.payment);
            c.seller_id.push(r.seller_id.clone());
            c.reference_id.push(r.reference_id.clone());
            c.attempt.push(r.attempt);
            c.response_status.push(r.response_status);
            c.response_body.push(r.response_body.clone());
            c.order_id.push(d.id.clone());
            c.full_name.push(cust.full_name.clone());
            c.tax_id.push(cust.tax_id.clone());
            c.street.push(addr.street.clone());
            c.number.push(addr.number.clone());
            c.state.push(addr.state.clone());
            c.city.push(addr.city.clone());
            c.locality.push(addr.locality.clone());
            c.zip_code.push(addr.zip_code.clone());
            c.complement.push(addr.complement.clone());
            c.status.push(d.status.clone());
            c.amount.push(d.amount);
            c.installments.push(d.installments);
            c.payment_method.push(pay.method.clone());
            c.card_last4.push(pay.card_last4.clone());
            c.payment_code.push(pay.code.clone());
            c.payment_status.push(plain(&pay.status));
            c.risk_recommendation.push(plain(&d.risk.recommendation));
            c.created_at.push(d.created_at);
            c.payment_key.push(r.payment_key.clone());
            for (p, item) in d.items.iter().enumerate() {
                c.item_order.push(i as i64 + 1);
                c.item_position.push(p as i32 + 1);
                c.item_name.push(item.name.clone());
                c.item_quantity.push(item.quantity);
                c.item_value.push(item.value);
            }
        }
        c
    }
}

/// Each order's outcome from the positions [`PERSIST_ORDERS`] returned: `true` written, `false`
/// its attempt no longer owns the key.
pub fn written(len: usize, completed: &[i64]) -> Vec<bool> {
    let done: HashSet<i64> = completed.iter().copied().collect();
    (1..=len as i64).map(|n| done.contains(&n)).collect()
}

/// What a writer does when the statement for a whole batch failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnBatchError {
    /// The database refused a row: write each order alone, so only the bad one fails.
    OneByOne,
    /// Give every order the failure (one order alone; or the database is unavailable, where one
    /// attempt per order would only wait out the same failure once per order).
    FailEach,
}

pub fn on_batch_error(error: &ApiError, len: usize) -> OnBatchError {
    match error {
        ApiError::DatabaseUnavailable(_) => OnBatchError::FailEach,
        _ if len <= 1 => OnBatchError::FailEach,
        _ => OnBatchError::OneByOne,
    }
}

/// The batch's failure, for one of its orders (an `ApiError` is not `Clone`): the same variant
/// for `database_unavailable`, anything else an internal error, with the cause's text — and
/// still marked a refusal when the database refused the rows for good, so that recovery voids
/// exactly what it would have voided without batching.
pub fn failure_for_each(error: &ApiError) -> ApiError {
    let cause = anyhow::anyhow!("persist batch failed: {error:#}");
    match error {
        ApiError::DatabaseUnavailable(_) => ApiError::DatabaseUnavailable(cause),
        refused if crate::domain::db_failure::is_refusal(refused) => {
            ApiError::Internal(cause.context(crate::domain::db_failure::Refusal))
        }
        _ => ApiError::Internal(cause),
    }
}

/// The writer is gone (it only stops with the process): the order stays `CHARGING` for recovery.
pub fn writer_stopped() -> ApiError {
    ApiError::DatabaseUnavailable(anyhow::anyhow!("the persist batch writer has stopped"))
}

/// The writer's metrics: batches written, orders per batch, and batches written one by one.
#[derive(Clone)]
pub struct BatchMetrics {
    pub max: IntGauge,
    pub orders: Histogram,
    pub fallbacks: IntCounter,
}

impl BatchMetrics {
    pub fn new(metrics: &Metrics, config: Option<BatchConfig>) -> Self {
        let max = IntGauge::new(
            "persist_batch_max",
            "PERSIST_BATCH_MAX in force (1: no batching)",
        )
        .unwrap();
        max.set(config.map_or(1, |c| c.max) as i64);
        let buckets = vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0];
        let orders = Histogram::with_opts(
            HistogramOpts::new(
                "persist_batch_orders",
                "Orders per persist batch (its _count is the batches written)",
            )
            .buckets(buckets),
        )
        .unwrap();
        let fallbacks = IntCounter::new(
            "persist_batch_fallbacks_total",
            "Batches the database refused, then written one order at a time",
        )
        .unwrap();
        metrics.register(Box::new(max.clone()));
        metrics.register(Box::new(orders.clone()));
        metrics.register(Box::new(fallbacks.clone()));
        BatchMetrics {
            max,
            orders,
            fallbacks,
        }
    }
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;
