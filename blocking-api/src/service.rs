//! The order flow, as plain blocking functions run on the blocking pool. Step for step the same
//! as reactive-api's `service.rs`:
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

pub fn create_order(app: &AppState, token: &str, order: ValidOrder) -> Result<Outcome, ApiError> {
    // 1. Authenticate: a bad token never reaches the database.
    let seller_id = app.deps.authenticate(token)?;
    let mut held = app.db.hold(app.settings.db_tx_scope)?;
    // 2. Reserve the idempotency key (or replay / refuse).
    let attempt = match reserve(app, &mut held, &seller_id, &order)? {
        Reserved::Owner(attempt) => attempt,
        Reserved::Done(outcome) => return Ok(outcome),
    };
    match process(app, &mut held, &seller_id, &order, attempt) {
        Ok(outcome) => {
            app.db.commit(held)?;
            Ok(outcome)
        }
        Err(e) => {
            // A transient failure: free the key so the client can retry with it.
            let reference_id = &order.request.reference_id;
            app.db.release(held, &seller_id, reference_id, attempt);
            Err(e)
        }
    }
}

fn reserve(
    app: &AppState,
    held: &mut Held,
    seller_id: &str,
    order: &ValidOrder,
) -> Result<Reserved, ApiError> {
    // A key released between our insert and our read is simply tried again, once.
    for _ in 0..2 {
        let mut step = app.db.step(held, "reserve")?;
        let lease = app.settings.lease_seconds();
        let reservation = db::reserve(step.conn(), seller_id, order, lease)?;
        step.finish()?;
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

fn process(
    app: &AppState,
    held: &mut Held,
    seller_id: &str,
    order: &ValidOrder,
    attempt: i32,
) -> Result<Outcome, ApiError> {
    // 3. Risk analysis.
    if app.deps.risk(seller_id, order)? == Recommendation::Disapprove {
        let outcome = Outcome::refused(&ApiError::RiskRejected);
        return complete(app, held, seller_id, order, attempt, outcome, None);
    }
    // 4. Charge.
    let pay = app.deps.pay(seller_id, order)?;
    if order::declined(&pay) {
        let outcome = Outcome::refused(&ApiError::PaymentDeclined);
        return complete(app, held, seller_id, order, attempt, outcome, None);
    }
    // 5. Persist order, items and customer, and complete the key, in one transaction.
    let doc = OrderDocument::confirmed(seller_id, order, &pay);
    let outcome = Outcome::created(&doc);
    complete(app, held, seller_id, order, attempt, outcome, Some(&doc))
}

/// Stores the outcome on the key, with the order's rows when there is an order.
fn complete(
    app: &AppState,
    held: &mut Held,
    seller_id: &str,
    order: &ValidOrder,
    attempt: i32,
    outcome: Outcome,
    doc: Option<&OrderDocument>,
) -> Result<Outcome, ApiError> {
    let mut step = app.db.step(held, "persist")?;
    let reference_id = &order.request.reference_id;
    if !db::complete_key(step.conn(), seller_id, reference_id, attempt, &outcome)? {
        // Another attempt took this key over after our lease expired; it owns the outcome.
        return Err(ApiError::RequestInProgress);
    }
    if let Some(doc) = doc {
        db::insert_order(step.conn(), doc)?;
    }
    step.finish()?;
    Ok(outcome)
}

/// `GET /orders/{id}`: the document as created, for its own seller only.
pub fn get_order(app: &AppState, token: &str, id: &str) -> Result<String, ApiError> {
    let seller_id = app.deps.authenticate(token)?;
    app.db.find_order(id, &seller_id)?.ok_or(ApiError::NotFound)
}
