//! The order flow, as `async fn`s. Step for step the same as blocking-api's `service.rs`:
//! authenticate → reserve the key → risk → charge → persist → respond.
//!
//! No connection is held during the remote calls (steps 1, 3, 4) unless `DB_TX_SCOPE=request`
//! asks for the anti-pattern, in which case one transaction spans steps 2 to 5.

use order_core::contract::ValidOrder;
use order_core::deps::Recommendation;
use order_core::error::ApiError;
use order_core::idempotency::{self, Reservation};
use order_core::order::{self, OrderDocument, Outcome};

use crate::db::{self, Held};
use crate::startup::AppState;

/// How a reservation ended: this request owns the key, or the answer is already known.
enum Reserved {
    Owner(i32),
    Done(Outcome),
}

pub async fn create_order(
    app: &AppState,
    token: &str,
    order: ValidOrder,
) -> Result<Outcome, ApiError> {
    // 1. Authenticate: a bad token never reaches the database.
    let seller_id = app.deps.authenticate(token).await?;
    let mut held = app.db.hold(app.settings.db_tx_scope).await?;
    // 2. Reserve the idempotency key (or replay / refuse).
    let attempt = match reserve(app, &mut held, &seller_id, &order).await? {
        Reserved::Owner(attempt) => attempt,
        Reserved::Done(outcome) => return Ok(outcome),
    };
    match process(app, &mut held, &seller_id, &order, attempt).await {
        Ok(outcome) => {
            app.db.commit(held).await?;
            Ok(outcome)
        }
        Err(e) => {
            // A transient failure: free the key so the client can retry with it.
            let reference_id = &order.request.reference_id;
            app.db
                .release(held, &seller_id, reference_id, attempt)
                .await;
            Err(e)
        }
    }
}

async fn reserve(
    app: &AppState,
    held: &mut Held,
    seller_id: &str,
    order: &ValidOrder,
) -> Result<Reserved, ApiError> {
    // A key released between our insert and our read is simply tried again, once.
    for _ in 0..2 {
        let mut step = app.db.step(held, "reserve").await?;
        let lease = app.settings.lease_seconds();
        let reservation = db::reserve(step.conn(), seller_id, order, lease).await?;
        step.finish().await?;
        match reservation {
            Reservation::Acquired { attempt } => return Ok(Reserved::Owner(attempt)),
            Reservation::Taken(existing) => {
                return idempotency::decide(existing, &order.request_hash).map(Reserved::Done);
            }
            Reservation::Released => continue,
        }
    }
    Err(ApiError::RequestInProgress)
}

async fn process(
    app: &AppState,
    held: &mut Held,
    seller_id: &str,
    order: &ValidOrder,
    attempt: i32,
) -> Result<Outcome, ApiError> {
    // 3. Risk analysis.
    if app.deps.risk(seller_id, order).await? == Recommendation::Disapprove {
        let outcome = Outcome::refused(&ApiError::RiskRejected);
        return complete(app, held, seller_id, order, attempt, outcome, None).await;
    }
    // 4. Charge.
    let pay = app.deps.pay(seller_id, order).await?;
    if order::declined(&pay) {
        let outcome = Outcome::refused(&ApiError::PaymentDeclined);
        return complete(app, held, seller_id, order, attempt, outcome, None).await;
    }
    // 5. Persist order, items and customer, and complete the key, in one transaction.
    let doc = OrderDocument::confirmed(seller_id, order, &pay);
    let outcome = Outcome::created(&doc);
    complete(app, held, seller_id, order, attempt, outcome, Some(&doc)).await
}

/// Stores the outcome on the key, with the order's rows when there is an order.
async fn complete(
    app: &AppState,
    held: &mut Held,
    seller_id: &str,
    order: &ValidOrder,
    attempt: i32,
    outcome: Outcome,
    doc: Option<&OrderDocument>,
) -> Result<Outcome, ApiError> {
    let mut step = app.db.step(held, "persist").await?;
    let reference_id = &order.request.reference_id;
    if !db::complete_key(step.conn(), seller_id, reference_id, attempt, &outcome).await? {
        // Another attempt took this key over after our lease expired; it owns the outcome.
        return Err(ApiError::RequestInProgress);
    }
    if let Some(doc) = doc {
        db::insert_order(step.conn(), doc).await?;
    }
    step.finish().await?;
    Ok(outcome)
}

/// `GET /orders/{id}`: the document as created, for its own seller only.
pub async fn get_order(app: &AppState, token: &str, id: &str) -> Result<String, ApiError> {
    let seller_id = app.deps.authenticate(token).await?;
    app.db
        .find_order(id, &seller_id)
        .await?
        .ok_or(ApiError::NotFound)
}
