//! The persist step (`service.rs`, step 5 of an order that was charged): the order's writes
//! (`db::queries::persist_order`), tied to its event as `EVENTS_MODE` says (see
//! `order_core::plumbing::events`) — the statement alone (`off`, `after-commit`), with the outbox row in one
//! transaction (`outbox`), or prepared, published, then committed (`two-phase`: the connection is
//! held until the broker answers). Step for step the same as reactive-api's `persist.rs`.

use event_broker::{PublishFailure, subject_of};
use order_core::domain::error::{ApiError, Dependency};
use order_core::domain::idempotency::KeyRef;
use order_core::domain::order::{Outcome, Placed};
use order_core::plumbing::events::{self, EventsMode, InDoubt, OrderCreated};

use crate::broker::BlockingBroker;
use crate::connections::PgConn;
use crate::db::queries;
use crate::events::{exec, finish, publication, publish};
use crate::state::AppState;

/// A transaction opened with a plain `BEGIN` on an autocommit connection (diesel's transaction
/// manager never sees it, so a pooled connection never comes back believing it is in one);
/// rolled back if dropped before [`RawTx::end`].
struct RawTx<'c>(Option<&'c mut PgConn>);

impl<'c> RawTx<'c> {
    fn begin(conn: &'c mut PgConn) -> Result<Self, ApiError> {
        exec(conn, "BEGIN")?;
        Ok(RawTx(Some(conn)))
    }

    fn conn(&mut self) -> &mut PgConn {
        self.0.as_deref_mut().expect("open until ended")
    }

    /// Ends it with `statement` (`COMMIT`, `PREPARE TRANSACTION '…'`) and gives the connection
    /// back. A failed end has ended the transaction too (PostgreSQL rolls it back).
    fn end(mut self, statement: &str) -> Result<&'c mut PgConn, ApiError> {
        let conn = self.0.take().expect("open until ended");
        exec(conn, statement)?;
        Ok(conn)
    }
}

impl Drop for RawTx<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.0.take() {
            let _ = exec(conn, "ROLLBACK");
        }
    }
}

/// The persist step's writes (`queries::persist_order`), tied to the event as `EVENTS_MODE` says.
/// `false`: this attempt lost its key, and nothing was written.
pub fn persist_order(
    app: &AppState,
    conn: &mut PgConn,
    key: KeyRef<'_>,
    outcome: &Outcome,
    placed: Placed<'_>,
) -> Result<bool, ApiError> {
    let broker = match (&app.events.broker, app.events.mode) {
        (Some(b), EventsMode::TwoPhase | EventsMode::Outbox) => b,
        _ => return queries::persist_order(conn, key, outcome, placed),
    };
    let doc = placed.doc;
    let ev = OrderCreated::of(doc);
    let mut tx = RawTx::begin(conn)?;
    if !queries::persist_order(tx.conn(), key, outcome, placed)? {
        return Ok(false);
    }
    if app.events.mode == EventsMode::Outbox {
        queries::insert_outbox(tx.conn(), &ev)?;
        tx.end("COMMIT")?;
        return Ok(true);
    }
    // Two-phase: prepare, then publish while holding the connection and the rows.
    let gid = events::prepared_gid(&doc.id).ok_or_else(|| {
        ApiError::Internal(anyhow::anyhow!("order id {:?} is unfit for a gid", doc.id))
    })?;
    let conn = tx.end(&events::prepare_sql(&gid))?;
    finish_prepared(app, broker, conn, &gid, &ev)?;
    Ok(true)
}

/// Two-phase, after `PREPARE TRANSACTION`: publish; `COMMIT PREPARED` on the acknowledgement,
/// `ROLLBACK PREPARED` when the broker refused; with no answer, the stream decides. If even that
/// cannot be asked, the transaction stays prepared (in doubt) for recovery. A transaction that
/// recovery finished first is answered as it was finished ([`finish`]). Every path but the
/// commit answers 503 `dependency_unavailable` (broker): the key stays `CHARGING` for a retry.
fn finish_prepared(
    app: &AppState,
    broker: &BlockingBroker,
    conn: &mut PgConn,
    gid: &str,
    ev: &OrderCreated,
) -> Result<(), ApiError> {
    let (action, failure) = match publish(app, broker, &publication(ev)) {
        Ok(_) => (InDoubt::Commit, None),
        Err(failure) => {
            let in_stream = match &failure {
                PublishFailure::Refused(_) => Ok(false),
                PublishFailure::Unknown(_) => broker.contains(&subject_of(&ev.order_id)),
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
    match finish(conn, gid, action)?.unwrap_or(action) {
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
