//! The persist step (`service.rs`, step 5 of an order that was charged): the order's writes
//! (`db::queries::persist_order`), tied to its event as `EVENTS_MODE` says (see
//! `order_core::plumbing::events`) — the statement alone (`off`, `after-commit`), with the outbox row in one
//! transaction (`outbox`), or prepared, published, then committed (`two-phase`: the connection is
//! held until the broker answers). Step for step the same as blocking-api's `persist.rs`.
//!
//! Transactions are opened with a plain `BEGIN` on the step's autocommit connection, as in
//! blocking-api. The order's work runs as a task of its own (see `routes.rs`), never cancelled
//! half-way, so every `BEGIN` here reaches its `COMMIT`, `PREPARE` or `ROLLBACK`.

use event_broker::{Broker, PublishFailure, subject_of};
use order_core::domain::error::{ApiError, Dependency};
use order_core::domain::idempotency::KeyRef;
use order_core::domain::order::{Outcome, Placed};
use order_core::plumbing::events::{self, EventsMode, InDoubt, OrderCreated};

use crate::connections::PgConn;
use crate::db::queries;
use crate::events::{exec, finish, publication, publish};
use crate::state::AppState;

/// The persist step's writes (`queries::persist_order`), tied to the event as `EVENTS_MODE` says.
/// `false`: this attempt lost its key, and nothing was written.
pub async fn persist_order(
    app: &AppState,
    conn: &mut PgConn,
    key: KeyRef<'_>,
    outcome: &Outcome,
    placed: Placed<'_>,
) -> Result<bool, ApiError> {
    let broker = match (&app.events.broker, app.events.mode) {
        (Some(b), EventsMode::TwoPhase | EventsMode::Outbox) => b,
        _ => return queries::persist_order(conn, key, outcome, placed).await,
    };
    let doc = placed.doc;
    let ev = OrderCreated::of(doc);
    exec(conn, "BEGIN").await?;
    let written = async {
        if !queries::persist_order(&mut *conn, key, outcome, placed).await? {
            return Ok(false);
        }
        if app.events.mode == EventsMode::Outbox {
            queries::insert_outbox(&mut *conn, &ev).await?;
        }
        Ok(true)
    }
    .await;
    match written {
        Ok(true) => {}
        other => {
            // Nothing written (the key is another attempt's) or a failure: undo the BEGIN.
            let _ = exec(conn, "ROLLBACK").await;
            return other;
        }
    }
    if app.events.mode == EventsMode::Outbox {
        exec(conn, "COMMIT").await?;
        return Ok(true);
    }
    // Two-phase: prepare, then publish while holding the connection and the rows.
    let Some(gid) = events::prepared_gid(&doc.id) else {
        let _ = exec(conn, "ROLLBACK").await;
        let why = anyhow::anyhow!("order id {:?} is unfit for a gid", doc.id);
        return Err(ApiError::Internal(why));
    };
    exec(conn, &events::prepare_sql(&gid)).await?;
    finish_prepared(app, broker, conn, &gid, &ev).await?;
    Ok(true)
}

/// Two-phase, after `PREPARE TRANSACTION`: publish; `COMMIT PREPARED` on the acknowledgement,
/// `ROLLBACK PREPARED` when the broker refused; with no answer, the stream decides. If even that
/// cannot be asked, the transaction stays prepared (in doubt) for recovery. A transaction that
/// recovery finished first is answered as it was finished ([`finish`]). Every path but the
/// commit answers 503 `dependency_unavailable` (broker): the key stays `CHARGING` for a retry.
async fn finish_prepared(
    app: &AppState,
    broker: &Broker,
    conn: &mut PgConn,
    gid: &str,
    ev: &OrderCreated,
) -> Result<(), ApiError> {
    let (action, failure) = match publish(app, broker, &publication(ev)).await {
        Ok(_) => (InDoubt::Commit, None),
        Err(failure) => {
            let in_stream = match &failure {
                PublishFailure::Refused(_) => Ok(false),
                PublishFailure::Unknown(_) => broker.contains(&subject_of(&ev.order_id)).await,
            };
            match in_stream {
                Ok(found) => (events::in_doubt_action(found), Some(failure)),
                Err(e) => {
                    tracing::warn!(gid, error = %e, "event in doubt; recovery will resolve it");
                    return Err(ApiError::dependency(Dependency::Broker, failure));
                }
            }
        }
    };
    match finish(conn, gid, action).await?.unwrap_or(action) {
        InDoubt::Commit => Ok(()),
        InDoubt::Rollback => Err(ApiError::dependency(
            Dependency::Broker,
            failure.map_or_else(
                || anyhow::anyhow!("rolled back by recovery before the event's acknowledgement"),
                anyhow::Error::from,
            ),
        )),
    }
}
