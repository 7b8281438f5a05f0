//! The order flow, as `async fn`s. Step for step the same as blocking-api's `service.rs`:
//! authenticate → reserve the key → risk → mark CHARGING → charge → persist → respond.
//!
//! No connection is held during the remote calls (steps 1, 3, 4) unless `DB_TX_SCOPE=request`
//! asks for the anti-pattern, in which case one connection spans steps 2 to 5 (its transaction
//! committed at the `CHARGING` mark, which must be durable before the gateway sees the card).
//! From that mark on, a failure never deletes the key: the client gets 503 and its retry, or the
//! recovery loop (`recovery.rs`), turns the charge into exactly one order or one void.

use std::time::{Duration, Instant};

use order_core::domain::contract::ValidOrder;
use order_core::domain::db_failure;
use order_core::domain::deps::Recommendation;
use order_core::domain::error::ApiError;
use order_core::domain::idempotency::{self, ChargePlan, KeyRef, Reservation};
use order_core::domain::order::{self, Charging, Outcome, Placed};
use order_core::domain::recovery::{PERSIST_RETRY_BUDGET, PERSIST_RETRY_DELAYS_MS};
use order_core::plumbing::admission::Ticket;

use crate::db::{self, Held, queries};
use crate::events;
use crate::persist;
use crate::state::AppState;

/// How a reservation ended: this request owns the key, or the answer is already known.
enum Reserved {
    /// The attempt number, and what it charges under: a fresh charge, or the one to resume when
    /// the key was taken over in `CHARGING`.
    Owner(i32, ChargePlan),
    Done(Outcome),
}

/// This request's hold on its key, from the reservation on: the attempt it owns, and what that
/// attempt charges under.
struct Claim<'a> {
    key: KeyRef<'a>,
    plan: ChargePlan,
}

pub async fn create_order(
    app: &AppState,
    ticket: &Ticket,
    token: &str,
    order: ValidOrder,
) -> Result<Outcome, ApiError> {
    // 1. Authenticate: a bad token never reaches the database.
    let deps_timeout = app.settings.deps_timeout();
    let seller_id = app
        .deps
        .authenticate(token, ticket.timeout(deps_timeout))
        .await
        .map_err(|e| ticket.explain(e))?;
    // An expired card may still be the retry of a request that completed before it expired.
    if let Err(expired) = order.check_expiry(chrono::Utc::now().date_naive()) {
        return replay_or(app, &seller_id, &order, expired).await;
    }
    // The last point where a request whose client left, or whose deadline passed, just stops.
    ticket.before_reservation()?;
    let mut held = app.db.hold(app.settings.db_tx_scope).await?;
    // 2. Reserve the idempotency key (or replay / refuse).
    let (attempt, plan) = match reserve(app, &mut held, &seller_id, &order).await? {
        Reserved::Owner(attempt, plan) => (attempt, plan),
        Reserved::Done(outcome) => return Ok(outcome),
    };
    let key = KeyRef {
        seller_id: &seller_id,
        reference_id: &order.request.reference_id,
        attempt,
    };
    match process(app, ticket, &mut held, &order, Claim { key, plan }).await {
        Ok(outcome) => {
            app.db.commit(held).await?;
            Ok(outcome)
        }
        Err(e) if db_failure::is_client_deadline(&e) => {
            // The database did not answer: a release would only wait as long again, so the
            // attempt's lease runs out instead.
            drop(held);
            Err(e)
        }
        Err(e) => {
            // A transient failure: end this attempt's lease so the client can retry at once.
            app.db.release(held, key).await;
            Err(e)
        }
    }
}

/// A request whose card has expired: the stored outcome of this very request, if it completed;
/// 409 while its charge is in flight (`idempotency::decide_expired`); else `error`.
async fn replay_or(
    app: &AppState,
    seller_id: &str,
    order: &ValidOrder,
    error: ApiError,
) -> Result<Outcome, ApiError> {
    let mut held = Held::none();
    let mut step = app.db.step(&mut held, "read").await?;
    let existing = queries::find_key(step.conn(), seller_id, &order.request.reference_id).await?;
    drop(step);
    idempotency::decide_expired(existing, |h| order.is_same_request(h, &app.hash_key), error)
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
        let reservation = queries::reserve(step.conn(), seller_id, order, lease).await?;
        drop(step);
        match reservation {
            Reservation::Acquired { attempt, plan } => {
                return Ok(Reserved::Owner(attempt, plan));
            }
            Reservation::Taken(existing) => {
                return idempotency::decide(existing, |h| order.is_same_request(h, &app.hash_key))
                    .map(Reserved::Done);
            }
            Reservation::Released => continue,
        }
    }
    Err(ApiError::RequestInProgress)
}

async fn process(
    app: &AppState,
    ticket: &Ticket,
    held: &mut Held,
    order: &ValidOrder,
    claim: Claim<'_>,
) -> Result<Outcome, ApiError> {
    let Claim { key, plan } = claim;
    let charging = match plan {
        // Risk approved this request in the attempt that marked the charge: never run it again.
        ChargePlan::Resume(charging) => *charging,
        ChargePlan::Fresh { key_id } => {
            // 3. Risk analysis, if the deadline allows.
            ticket.check_deadline()?;
            let timeout = ticket.timeout(app.settings.deps_timeout());
            let risk = app.deps.risk(key.seller_id, order, timeout).await;
            if risk.map_err(|e| ticket.explain(e))? == Recommendation::Disapprove {
                let outcome = Outcome::refused(&ApiError::RiskRejected);
                return complete(app, held, key, outcome, None).await;
            }
            // 4a. Mark CHARGING, durably, before the gateway sees the card; past this point the
            // work always finishes, deadline or not.
            ticket.check_deadline()?;
            let charging = Charging::new(key.seller_id, order, &key_id, key.attempt);
            mark_charging(app, held, key, &charging).await?;
            charging
        }
    };
    // 4b. Charge, under the charge's own idempotency key (a resumed charge asks again).
    let pay = app.deps.pay(&charging.gateway_key, order).await?;
    if order::declined(&pay) {
        let outcome = Outcome::refused(&ApiError::PaymentDeclined);
        return persist(app, held, key, outcome, None).await;
    }
    // 5. Persist order, items and customer, and complete the key, in one transaction.
    let doc = charging.pending.confirm(&pay);
    let outcome = Outcome::created(&doc);
    let placed = Placed {
        doc: &doc,
        payment_key: &charging.gateway_key,
    };
    persist(app, held, key, outcome, Some(placed)).await
}

async fn mark_charging(
    app: &AppState,
    held: &mut Held,
    key: KeyRef<'_>,
    charging: &Charging,
) -> Result<(), ApiError> {
    let mut step = app.db.step(held, "charging").await?;
    let lease = app.settings.lease_seconds();
    let marked = queries::mark_charging(step.conn(), key, charging, lease).await?;
    drop(step);
    if !marked {
        // Another attempt took the key over; nothing was charged by this one.
        return Err(ApiError::RequestInProgress);
    }
    app.db.checkpoint(held).await
}

/// [`complete`] after the charge: a database failure is retried on fresh connections within
/// `PERSIST_RETRY_BUDGET` (fenced by the attempt, so a retry can never make a second order) before
/// the key is left to the client's retry or to recovery. A failure that itself took longer (a
/// statement or lock timeout) is not retried. Recovery settles keys with it too.
pub(crate) async fn persist(
    app: &AppState,
    held: &mut Held,
    key: KeyRef<'_>,
    outcome: Outcome,
    placed: Option<Placed<'_>>,
) -> Result<Outcome, ApiError> {
    let started = Instant::now();
    let mut result = complete(app, held, key, outcome.clone(), placed).await;
    for delay_ms in PERSIST_RETRY_DELAYS_MS {
        let transient = matches!(result, Err(ApiError::DatabaseUnavailable(_)));
        if !transient || started.elapsed() > PERSIST_RETRY_BUDGET {
            break;
        }
        // A request-scope transaction is broken now: drop it, go on with fresh connections.
        *held = Held::none();
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        app.metrics.persist_retries.inc();
        result = complete(app, held, key, outcome.clone(), placed).await;
    }
    if let (Ok(_), Some(Placed { doc, .. })) = (&result, placed) {
        events::after_commit(app, doc).await;
    }
    result
}

/// Stores the outcome on the key, with the order's rows (and its charge's key) when there is one.
async fn complete(
    app: &AppState,
    held: &mut Held,
    key: KeyRef<'_>,
    outcome: Outcome,
    placed: Option<Placed<'_>>,
) -> Result<Outcome, ApiError> {
    // PERSIST_BATCH_MAX > 1: the batch writer (batch.rs) commits the order together with others;
    // no connection is held while this request waits for that commit.
    if let Some(placed) = placed.filter(|_| app.batch.takes()) {
        if app.batch.persist(key, &outcome, placed).await? {
            return Ok(outcome);
        }
        let mut step = app.db.step(held, "persist").await?;
        return not_completed(&mut step, key, outcome).await;
    }
    let mut step = app.db.step(held, "persist").await?;
    let completed = match placed {
        Some(placed) => persist::persist_order(app, step.conn(), key, &outcome, placed).await?,
        None => queries::complete_key(step.conn(), key, &outcome).await?,
    };
    if !completed {
        return not_completed(&mut step, key, outcome).await;
    }
    drop(step);
    Ok(outcome)
}

/// This attempt's write completed nothing: either an earlier try of ours committed (its answer
/// was lost), or another attempt took the key over after our lease expired and owns the outcome.
async fn not_completed(
    step: &mut db::Step<'_>,
    key: KeyRef<'_>,
    outcome: Outcome,
) -> Result<Outcome, ApiError> {
    let existing = queries::find_key(step.conn(), key.seller_id, key.reference_id).await?;
    let ours = existing.is_some_and(|e| e.response_body.as_deref() == Some(&outcome.body));
    if ours {
        Ok(outcome)
    } else {
        Err(ApiError::RequestInProgress)
    }
}

/// `GET /orders/{id}`: the document as created, for its own seller only.
pub async fn get_order(app: &AppState, token: &str, id: &str) -> Result<String, ApiError> {
    let seller_id = app
        .deps
        .authenticate(token, app.settings.deps_timeout())
        .await?;
    app.db
        .find_order(id, &seller_id)
        .await?
        .ok_or(ApiError::NotFound)
}
