//! The order path's statements (`service.rs`, steps 2–5), each one atomic statement run on the
//! step's connection ([`PgConn`]), and the read of a stored order. The twin of blocking-api's
//! `db/queries.rs`.

use event_broker::subject_of;
use order_core::domain::contract::ValidOrder;
use order_core::domain::error::ApiError;
use order_core::domain::idempotency::{self, ExistingKey, KeyRef, Reservation, WonKey};
use order_core::domain::order::{Charging, Outcome, Placed, plain};
use order_core::domain::sql;
use order_core::plumbing::events::OrderCreated;
use sqlx::Row;

use super::Db;
use super::error::db_error;
use crate::connections::PgConn;

impl Db {
    /// The stored document of an order, if it belongs to `seller_id`.
    pub async fn find_order(&self, id: &str, seller_id: &str) -> Result<Option<String>, ApiError> {
        let mut c = self.acquire("read").await?;
        let row = c
            .conn()
            .run(|pg| {
                sqlx::query(sql::FIND_ORDER)
                    .bind(id)
                    .bind(seller_id)
                    .fetch_optional(pg)
            })
            .await
            .map_err(db_error)?;
        row.map(|r| r.try_get::<String, _>(0).map_err(db_error))
            .transpose()
    }
}

/// Reserves the key, or reads who holds it (see `order_core::domain::idempotency`).
pub async fn reserve(
    conn: &mut PgConn,
    seller_id: &str,
    order: &ValidOrder,
    lease_seconds: f64,
) -> Result<Reservation, ApiError> {
    let reference_id = &order.request.reference_id;
    let won = conn
        .run(|pg| {
            sqlx::query(sql::RESERVE_KEY)
                .bind(seller_id)
                .bind(reference_id)
                .bind(&order.request_hash)
                .bind(lease_seconds)
                .fetch_optional(pg)
        })
        .await
        .map_err(db_error)?;
    if let Some(row) = won {
        let won = (|| {
            Ok::<_, sqlx::Error>(WonKey {
                attempt: row.try_get(0)?,
                key_id: row.try_get(1)?,
                state: row.try_get(2)?,
                gateway_key: row.try_get(3)?,
                pending_order: row.try_get(4)?,
            })
        })()
        .map_err(db_error)?;
        return idempotency::acquired(won);
    }
    Ok(match find_key(conn, seller_id, reference_id).await? {
        Some(existing) => Reservation::Taken(existing),
        None => Reservation::Released,
    })
}

/// Reads a key's row.
pub async fn find_key(
    conn: &mut PgConn,
    seller_id: &str,
    reference_id: &str,
) -> Result<Option<ExistingKey>, ApiError> {
    let row = conn
        .run(|pg| {
            sqlx::query(sql::FIND_KEY)
                .bind(seller_id)
                .bind(reference_id)
                .fetch_optional(pg)
        })
        .await
        .map_err(db_error)?;
    let Some(row) = row else {
        return Ok(None);
    };
    Ok(Some(ExistingKey {
        request_hash: row.try_get(0).map_err(db_error)?,
        state: row.try_get(1).map_err(db_error)?,
        response_status: row.try_get(2).map_err(db_error)?,
        response_body: row.try_get(3).map_err(db_error)?,
        order_id: row.try_get(4).map_err(db_error)?,
    }))
}

/// Marks the key `CHARGING` with its charge. `false`: this attempt lost its lease.
pub async fn mark_charging(
    conn: &mut PgConn,
    key: KeyRef<'_>,
    charging: &Charging,
    lease_seconds: f64,
) -> Result<bool, ApiError> {
    let done = conn
        .run(|pg| {
            sqlx::query(sql::MARK_CHARGING)
                .bind(key.seller_id)
                .bind(key.reference_id)
                .bind(key.attempt)
                .bind(&charging.gateway_key)
                .bind(charging.pending.amount)
                .bind(charging.pending.to_json())
                .bind(lease_seconds)
                .execute(pg)
        })
        .await
        .map_err(db_error)?;
    Ok(done.rows_affected() == 1)
}

/// Stores a completed outcome on the key. `false`: this attempt lost its lease.
pub async fn complete_key(
    conn: &mut PgConn,
    key: KeyRef<'_>,
    outcome: &Outcome,
) -> Result<bool, ApiError> {
    let done = conn
        .run(|pg| {
            sqlx::query(sql::COMPLETE_KEY)
                .bind(key.seller_id)
                .bind(key.reference_id)
                .bind(key.attempt)
                .bind(i32::from(outcome.status))
                .bind(&outcome.body)
                .bind(outcome.order_id.as_deref())
                .execute(pg)
        })
        .await
        .map_err(db_error)?;
    Ok(done.rows_affected() == 1)
}

/// Completes the key with the order's 201 and writes customer, order and items, in one statement
/// (`sql::PERSIST_ORDER`). `false`: this attempt lost its lease, and nothing was written.
/// `placed.payment_key` is the gateway idempotency key of the order's charge.
pub async fn persist_order(
    conn: &mut PgConn,
    key: KeyRef<'_>,
    outcome: &Outcome,
    placed: Placed<'_>,
) -> Result<bool, ApiError> {
    let Placed { doc, payment_key } = placed;
    let c = &doc.customer;
    let a = &c.address;
    let p = &doc.payment;
    let positions: Vec<i32> = (1..=doc.items.len() as i32).collect();
    let names: Vec<&str> = doc.items.iter().map(|i| i.name.as_str()).collect();
    let quantities: Vec<i64> = doc.items.iter().map(|i| i.quantity).collect();
    let values: Vec<i64> = doc.items.iter().map(|i| i.value).collect();
    let completed: i64 = conn
        .run(|pg| {
            sqlx::query(sql::PERSIST_ORDER)
                .bind(key.seller_id)
                .bind(key.reference_id)
                .bind(key.attempt)
                .bind(i32::from(outcome.status))
                .bind(&outcome.body)
                .bind(&doc.id)
                .bind(&c.full_name)
                .bind(&c.tax_id)
                .bind(&a.street)
                .bind(&a.number)
                .bind(&a.state)
                .bind(&a.city)
                .bind(&a.locality)
                .bind(&a.zip_code)
                .bind(a.complement.as_deref())
                .bind(&doc.status)
                .bind(doc.amount)
                .bind(doc.installments)
                .bind(&p.method)
                .bind(&p.card_last4)
                .bind(&p.code)
                .bind(plain(&p.status))
                .bind(plain(&doc.risk.recommendation))
                .bind(doc.created_at)
                .bind(payment_key)
                .bind(positions)
                .bind(names)
                .bind(quantities)
                .bind(values)
                .fetch_one(pg)
        })
        .await
        .and_then(|row| row.try_get(0))
        .map_err(db_error)?;
    Ok(completed == 1)
}

/// `EVENTS_MODE=outbox`: the order's event, written in the order's transaction
/// (`sql::INSERT_OUTBOX`); the outbox relay (`outbox.rs`) publishes it.
pub async fn insert_outbox(conn: &mut PgConn, ev: &OrderCreated) -> Result<(), ApiError> {
    conn.run(|pg| {
        sqlx::query(sql::INSERT_OUTBOX)
            .bind(&ev.event_id)
            .bind(&ev.order_id)
            .bind(subject_of(&ev.order_id))
            .bind(ev.to_json())
            .execute(pg)
    })
    .await
    .map_err(db_error)?;
    Ok(())
}
