//! The order event (`EVENTS_MODE`, see `order_core::events`), as plain blocking functions. Step for
//! step the same as reactive-api's `events.rs`:
//! - [`persist_order`]: the persist step's statement, alone (`off`, `after-commit`), with the
//!   outbox row in one transaction (`outbox`), or prepared, published, then committed
//!   (`two-phase`: the connection is held until the broker answers);
//! - [`after_commit`]: the publication after the order's commit (`after-commit`);
//! - [`resolve_in_doubt`]: two-phase recovery of prepared transactions, from the recovery loop.
//!
//! The outbox relay, a thread, is `outbox.rs`; the mode and its broker, [`Events`](crate::state::Events),
//! are held in `state.rs` with the rest of what the handlers share.

use std::time::Instant;

use diesel::sql_types::{Bool, Double, Text};
use diesel::{QueryableByName, RunQueryDsl, sql_query};
use event_broker::{Ack, Publication, PublishFailure};
use order_core::error::{ApiError, Dependency};
use order_core::events::{self, EventsMode, InDoubt, OrderCreated};
use order_core::idempotency::KeyRef;
use order_core::order::{OrderDocument, Outcome, Placed};
use order_core::sql;

use crate::broker::BlockingBroker;
use crate::connections::PgConn;
use crate::db::{self, Step, db_error};
use crate::state::AppState;

fn publication(ev: &OrderCreated) -> Publication {
    Publication {
        subject: event_broker::subject_of(&ev.order_id),
        msg_id: ev.event_id.clone(),
        payload: ev.to_json().into(),
    }
}

/// Publishes one event, counted and timed.
fn publish(
    app: &AppState,
    broker: &BlockingBroker,
    p: &Publication,
) -> Result<Ack, PublishFailure> {
    let started = Instant::now();
    let result = broker.publish(p);
    record(app, started, std::slice::from_ref(&result));
    result
}

pub(crate) fn record(app: &AppState, started: Instant, results: &[Result<Ack, PublishFailure>]) {
    let outcomes = results.iter().map(|r| {
        r.as_ref()
            .map(|ack| ack.duplicate)
            .map_err(PublishFailure::kind)
    });
    let elapsed = started.elapsed().as_secs_f64();
    app.metrics
        .events
        .record(app.events.mode, elapsed, outcomes);
}

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

fn exec(conn: &mut PgConn, statement: &str) -> Result<(), ApiError> {
    conn.run(|pg| sql_query(statement).execute(pg))
        .map(|_| ())
        .map_err(db_error)
}

/// The persist step's writes (`db::persist_order`), tied to the event as `EVENTS_MODE` says.
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
        _ => return db::persist_order(conn, key, outcome, placed),
    };
    let doc = placed.doc;
    let ev = OrderCreated::of(doc);
    let mut tx = RawTx::begin(conn)?;
    if !db::persist_order(tx.conn(), key, outcome, placed)? {
        return Ok(false);
    }
    if app.events.mode == EventsMode::Outbox {
        tx.conn()
            .run(|pg| {
                sql_query(sql::INSERT_OUTBOX)
                    .bind::<Text, _>(&ev.event_id)
                    .bind::<Text, _>(&ev.order_id)
                    .bind::<Text, _>(event_broker::subject_of(&ev.order_id))
                    .bind::<Text, _>(ev.to_json())
                    .execute(pg)
            })
            .map_err(db_error)?;
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
                PublishFailure::Unknown(_) => {
                    broker.contains(&event_broker::subject_of(&ev.order_id))
                }
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

/// `COMMIT PREPARED` or `ROLLBACK PREPARED` (`action`). `Ok(None)`: done as asked. When it fails,
/// reads back what happened (`sql::PREPARED_OUTCOME`): `Ok(Some(outcome))` when someone else (the
/// live request, recovery) had already finished it — committed if its order is there, rolled
/// back if not (`events::finished_elsewhere`); the failure stands only while it is still prepared.
/// (diesel does not expose the SQLSTATE, `42704`, of the lost race; reading back needs none.)
fn finish(conn: &mut PgConn, gid: &str, action: InDoubt) -> Result<Option<InDoubt>, ApiError> {
    #[derive(QueryableByName)]
    struct Outcome {
        #[diesel(sql_type = Bool)]
        still_prepared: bool,
        #[diesel(sql_type = Bool)]
        order_made: bool,
    }
    let statement = match action {
        InDoubt::Commit => events::commit_prepared_sql(gid),
        InDoubt::Rollback => events::rollback_prepared_sql(gid),
    };
    let Err(failure) = exec(conn, &statement) else {
        return Ok(None);
    };
    let outcome: Result<Outcome, _> = conn.run(|pg| {
        sql_query(sql::PREPARED_OUTCOME)
            .bind::<Text, _>(gid)
            .bind::<Text, _>(events::order_of_gid(gid).unwrap_or_default())
            .get_result(pg)
    });
    match outcome.map(|o| events::finished_elsewhere(o.still_prepared, o.order_made)) {
        Ok(Some(outcome)) => {
            tracing::info!(gid, ?outcome, "prepared transaction finished elsewhere");
            Ok(Some(outcome))
        }
        _ => Err(failure),
    }
}

/// `after-commit`: publishes the event of an order whose transaction has committed. A failure
/// loses the event (counted in `events_publish_failures_total`); the order stands.
pub fn after_commit(app: &AppState, doc: &OrderDocument) {
    if let (EventsMode::AfterCommit, Some(broker)) = (app.events.mode, &app.events.broker)
        && let Err(e) = publish(app, broker, &publication(&OrderCreated::of(doc)))
    {
        tracing::warn!(order_id = %doc.id, error = %e, "order event lost (after-commit)");
    }
}

/// Two-phase recovery, once per recovery pass: every prepared transaction of ours in this
/// database older than a live order's publication can take is committed if its event is in the
/// stream, else rolled back. Returns how many it resolved.
pub fn resolve_in_doubt(app: &AppState) -> Result<usize, ApiError> {
    let (EventsMode::TwoPhase, Some(broker)) = (app.events.mode, &app.events.broker) else {
        return Ok(0);
    };
    #[derive(QueryableByName)]
    struct Prepared {
        #[diesel(sql_type = Text)]
        gid: String,
        #[diesel(sql_type = Double)]
        age_s: f64,
    }
    let mut step = Step::Own(app.db.acquire("recovery")?);
    let prepared: Vec<Prepared> = step
        .conn()
        .run(|pg| {
            sql_query(sql::PREPARED_TRANSACTIONS)
                .bind::<Text, _>(events::GID_PREFIX)
                .load(pg)
        })
        .map_err(db_error)?;
    let min_age = events::in_doubt_after(app.settings.events.nats_timeout()).as_secs_f64();
    let in_doubt: Vec<&Prepared> = prepared.iter().filter(|p| p.age_s >= min_age).collect();
    app.metrics.events.in_doubt.set(in_doubt.len() as i64);
    let mut resolved = 0;
    for p in in_doubt {
        let Some(order_id) = events::order_of_gid(&p.gid) else {
            continue;
        };
        let subject = event_broker::subject_of(order_id);
        let in_stream = broker
            .contains(&subject)
            .map_err(|e| ApiError::dependency(Dependency::Broker, e))?;
        let action = events::in_doubt_action(in_stream);
        if finish(step.conn(), &p.gid, action)?.is_some() {
            app.metrics.events.in_doubt.dec(); // its request finished it meanwhile
            continue;
        }
        let action = match action {
            InDoubt::Commit => "commit",
            InDoubt::Rollback => "rollback",
        };
        app.metrics
            .events
            .in_doubt_resolved
            .with_label_values(&[action])
            .inc();
        tracing::info!(gid = %p.gid, action, "in-doubt prepared transaction resolved");
        resolved += 1;
    }
    app.metrics.events.in_doubt.sub(resolved as i64);
    Ok(resolved)
}
