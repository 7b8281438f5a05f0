//! The order path's statements (`service.rs`, steps 2–5), each one atomic statement run on the
//! step's connection ([`PgConn`]), and the read of a stored order. The twin of reactive-api's
//! `db/queries.rs`.

use diesel::sql_types::{Array, BigInt, Double, Integer, Nullable, Text, Timestamptz};
use diesel::{QueryableByName, RunQueryDsl, sql_query};
use event_broker::subject_of;
use order_core::domain::contract::ValidOrder;
use order_core::domain::error::ApiError;
use order_core::domain::idempotency::{self, ExistingKey, KeyRef, Reservation, WonKey};
use order_core::domain::order::{Charging, Outcome, Placed, plain};
use order_core::domain::sql;
use order_core::plumbing::events::OrderCreated;

use super::Db;
use super::error::{db_error, not_found_is_none};
use super::prepared::{Prepare, statement};
use crate::connections::PgConn;

impl Db {
    /// The stored document of an order, if it belongs to `seller_id`.
    pub fn find_order(&self, id: &str, seller_id: &str) -> Result<Option<String>, ApiError> {
        #[derive(QueryableByName)]
        struct Found {
            #[diesel(sql_type = Text)]
            response_body: String,
        }
        let mut c = self.acquire("read")?;
        let found: Option<Found> = c
            .conn()
            .run(|pg| {
                sql_query(sql::FIND_ORDER)
                    .bind::<Text, _>(id)
                    .bind::<Text, _>(seller_id)
                    .prepared_as::<statement::FIND_ORDER>()
                    .get_result(pg)
            })
            .map(Some)
            .or_else(not_found_is_none)?;
        Ok(found.map(|f| f.response_body))
    }
}

#[derive(QueryableByName)]
struct Won {
    #[diesel(sql_type = Integer)]
    attempt: i32,
    #[diesel(sql_type = Text)]
    key_id: String,
    #[diesel(sql_type = Text)]
    state: String,
    #[diesel(sql_type = Nullable<Text>)]
    gateway_key: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pending_order: Option<String>,
}

#[derive(QueryableByName)]
struct KeyRow {
    #[diesel(sql_type = Text)]
    request_hash: String,
    #[diesel(sql_type = Text)]
    state: String,
    #[diesel(sql_type = Nullable<Integer>)]
    response_status: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    response_body: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    order_id: Option<String>,
}

/// Reserves the key, or reads who holds it (see `order_core::domain::idempotency`).
pub fn reserve(
    conn: &mut PgConn,
    seller_id: &str,
    order: &ValidOrder,
    lease_seconds: f64,
) -> Result<Reservation, ApiError> {
    let reference_id = &order.request.reference_id;
    let won: Option<Won> = conn
        .run(|pg| {
            sql_query(sql::RESERVE_KEY)
                .bind::<Text, _>(seller_id)
                .bind::<Text, _>(reference_id)
                .bind::<Text, _>(&order.request_hash)
                .bind::<Double, _>(lease_seconds)
                .prepared_as::<statement::RESERVE_KEY>()
                .get_result(pg)
        })
        .map(Some)
        .or_else(not_found_is_none)?;
    if let Some(w) = won {
        return idempotency::acquired(WonKey {
            attempt: w.attempt,
            key_id: w.key_id,
            state: w.state,
            gateway_key: w.gateway_key,
            pending_order: w.pending_order,
        });
    }
    Ok(match find_key(conn, seller_id, reference_id)? {
        Some(existing) => Reservation::Taken(existing),
        None => Reservation::Released,
    })
}

/// Reads a key's row.
pub fn find_key(
    conn: &mut PgConn,
    seller_id: &str,
    reference_id: &str,
) -> Result<Option<ExistingKey>, ApiError> {
    let row: Option<KeyRow> = conn
        .run(|pg| {
            sql_query(sql::FIND_KEY)
                .bind::<Text, _>(seller_id)
                .bind::<Text, _>(reference_id)
                .prepared_as::<statement::FIND_KEY>()
                .get_result(pg)
        })
        .map(Some)
        .or_else(not_found_is_none)?;
    Ok(row.map(|row| ExistingKey {
        request_hash: row.request_hash,
        state: row.state,
        response_status: row.response_status,
        response_body: row.response_body,
        order_id: row.order_id,
    }))
}

/// Marks the key `CHARGING` with its charge. `false`: this attempt lost its lease.
pub fn mark_charging(
    conn: &mut PgConn,
    key: KeyRef<'_>,
    charging: &Charging,
    lease_seconds: f64,
) -> Result<bool, ApiError> {
    let rows = conn
        .run(|pg| {
            sql_query(sql::MARK_CHARGING)
                .bind::<Text, _>(key.seller_id)
                .bind::<Text, _>(key.reference_id)
                .bind::<Integer, _>(key.attempt)
                .bind::<Text, _>(&charging.gateway_key)
                .bind::<BigInt, _>(charging.pending.amount)
                .bind::<Text, _>(charging.pending.to_json())
                .bind::<Double, _>(lease_seconds)
                .prepared_as::<statement::MARK_CHARGING>()
                .execute(pg)
        })
        .map_err(db_error)?;
    Ok(rows == 1)
}

/// Stores a completed outcome on the key. `false`: this attempt lost its lease.
pub fn complete_key(
    conn: &mut PgConn,
    key: KeyRef<'_>,
    outcome: &Outcome,
) -> Result<bool, ApiError> {
    let rows = conn
        .run(|pg| {
            sql_query(sql::COMPLETE_KEY)
                .bind::<Text, _>(key.seller_id)
                .bind::<Text, _>(key.reference_id)
                .bind::<Integer, _>(key.attempt)
                .bind::<Integer, _>(i32::from(outcome.status))
                .bind::<Text, _>(&outcome.body)
                .bind::<Nullable<Text>, _>(outcome.order_id.as_deref())
                .prepared_as::<statement::COMPLETE_KEY>()
                .execute(pg)
        })
        .map_err(db_error)?;
    Ok(rows == 1)
}

/// Completes the key with the order's 201 and writes customer, order and items, in one statement
/// (`sql::PERSIST_ORDER`). `false`: this attempt lost its lease, and nothing was written.
/// `placed.payment_key` is the gateway idempotency key of the order's charge.
pub fn persist_order(
    conn: &mut PgConn,
    key: KeyRef<'_>,
    outcome: &Outcome,
    placed: Placed<'_>,
) -> Result<bool, ApiError> {
    #[derive(QueryableByName)]
    struct Completed {
        #[diesel(sql_type = BigInt)]
        completed: i64,
    }
    let Placed { doc, payment_key } = placed;
    let c = &doc.customer;
    let a = &c.address;
    let p = &doc.payment;
    let positions: Vec<i32> = (1..=doc.items.len() as i32).collect();
    let names: Vec<&str> = doc.items.iter().map(|i| i.name.as_str()).collect();
    let quantities: Vec<i64> = doc.items.iter().map(|i| i.quantity).collect();
    let values: Vec<i64> = doc.items.iter().map(|i| i.value).collect();
    let row: Completed = conn
        .run(|pg| {
            sql_query(sql::PERSIST_ORDER)
                .bind::<Text, _>(key.seller_id)
                .bind::<Text, _>(key.reference_id)
                .bind::<Integer, _>(key.attempt)
                .bind::<Integer, _>(i32::from(outcome.status))
                .bind::<Text, _>(&outcome.body)
                .bind::<Text, _>(&doc.id)
                .bind::<Text, _>(&c.full_name)
                .bind::<Text, _>(&c.tax_id)
                .bind::<Text, _>(&a.street)
                .bind::<Text, _>(&a.number)
                .bind::<Text, _>(&a.state)
                .bind::<Text, _>(&a.city)
                .bind::<Text, _>(&a.locality)
                .bind::<Text, _>(&a.zip_code)
                .bind::<Nullable<Text>, _>(a.complement.as_deref())
                .bind::<Text, _>(&doc.status)
                .bind::<BigInt, _>(doc.amount)
                .bind::<BigInt, _>(doc.installments)
                .bind::<Text, _>(&p.method)
                .bind::<Text, _>(&p.card_last4)
                .bind::<Text, _>(&p.code)
                .bind::<Text, _>(plain(&p.status))
                .bind::<Text, _>(plain(&doc.risk.recommendation))
                .bind::<Timestamptz, _>(doc.created_at)
                .bind::<Text, _>(payment_key)
                .bind::<Array<Integer>, _>(positions)
                .bind::<Array<Text>, _>(names)
                .bind::<Array<BigInt>, _>(quantities)
                .bind::<Array<BigInt>, _>(values)
                .prepared_as::<statement::PERSIST_ORDER>()
                .get_result(pg)
        })
        .map_err(db_error)?;
    Ok(row.completed == 1)
}

/// `EVENTS_MODE=outbox`: the order's event, written in the order's transaction
/// (`sql::INSERT_OUTBOX`); the outbox relay (`outbox.rs`) publishes it.
pub fn insert_outbox(conn: &mut PgConn, ev: &OrderCreated) -> Result<(), ApiError> {
    conn.run(|pg| {
        sql_query(sql::INSERT_OUTBOX)
            .bind::<Text, _>(&ev.event_id)
            .bind::<Text, _>(&ev.order_id)
            .bind::<Text, _>(subject_of(&ev.order_id))
            .bind::<Text, _>(ev.to_json())
            .execute(pg)
    })
    .map_err(db_error)?;
    Ok(())
}
