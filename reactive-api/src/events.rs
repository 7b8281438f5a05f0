//! The order event (`EVENTS_MODE`, see `order_core::events`), as `async fn`s on the async NATS
//! client. Step for step the same as blocking-api's `events.rs`:
//! - [`persist_order`]: the persist step's statement, alone (`off`, `after-commit`), with the
//!   outbox row in one transaction (`outbox`), or prepared, published, then committed
//!   (`two-phase`: the connection is held until the broker answers);
//! - [`after_commit`]: the publication after the order's commit (`after-commit`);
//! - [`resolve_in_doubt`]: two-phase recovery of prepared transactions, from the recovery loop.
//!
//! The outbox relay, a task, is `outbox.rs`; the mode and its broker, [`Events`](crate::state::Events),
//! are held in `state.rs` with the rest of what the handlers share.
//!
//! Transactions are opened with a plain `BEGIN` on the step's autocommit connection, as in
//! blocking-api. The order's work runs as a task of its own (see `routes.rs`), never cancelled
//! half-way, so every `BEGIN` here reaches its `COMMIT`, `PREPARE` or `ROLLBACK`.

use std::time::Instant;

use event_broker::{Ack, Broker, Publication, PublishFailure, subject_of};
use order_core::error::{ApiError, Dependency};
use order_core::events::{self, EventsMode, InDoubt, OrderCreated};
use order_core::idempotency::KeyRef;
use order_core::order::{OrderDocument, Outcome, Placed};
use order_core::sql;
use sqlx::{AssertSqlSafe, Row};

use crate::connections::PgConn;
use crate::db::{self, Step, db_error};
use crate::state::AppState;

fn publication(ev: &OrderCreated) -> Publication {
    Publication {
        subject: subject_of(&ev.order_id),
        msg_id: ev.event_id.clone(),
        payload: ev.to_json().into(),
    }
}

/// Publishes one event, counted and timed.
async fn publish(app: &AppState, broker: &Broker, p: &Publication) -> Result<Ack, PublishFailure> {
    let started = Instant::now();
    let result = broker.publish(p).await;
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

async fn exec(conn: &mut PgConn, statement: &str) -> Result<(), ApiError> {
    db::control(conn, AssertSqlSafe(statement.to_owned()))
        .await
        .map_err(db_error)
}

/// The persist step's writes (`db::persist_order`), tied to the event as `EVENTS_MODE` says.
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
        _ => return db::persist_order(conn, key, outcome, placed).await,
    };
    let doc = placed.doc;
    let ev = OrderCreated::of(doc);
    exec(conn, "BEGIN").await?;
    let written = async {
        if !db::persist_order(&mut *conn, key, outcome, placed).await? {
            return Ok(false);
        }
        if app.events.mode == EventsMode::Outbox {
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

/// `COMMIT PREPARED` or `ROLLBACK PREPARED` (`action`). `Ok(None)`: done as asked. When it fails,
/// reads back what happened (`sql::PREPARED_OUTCOME`): `Ok(Some(outcome))` when someone else (the
/// live request, recovery) had already finished it — committed if its order is there, rolled
/// back if not (`events::finished_elsewhere`); the failure stands only while it is still prepared.
async fn finish(
    conn: &mut PgConn,
    gid: &str,
    action: InDoubt,
) -> Result<Option<InDoubt>, ApiError> {
    let statement = match action {
        InDoubt::Commit => events::commit_prepared_sql(gid),
        InDoubt::Rollback => events::rollback_prepared_sql(gid),
    };
    let Err(failure) = exec(conn, &statement).await else {
        return Ok(None);
    };
    let outcome: Result<(bool, bool), _> = conn
        .run(|pg| {
            sqlx::query_as(sql::PREPARED_OUTCOME)
                .bind(gid)
                .bind(events::order_of_gid(gid).unwrap_or_default())
                .fetch_one(pg)
        })
        .await;
    match outcome.map(|(prepared, made)| events::finished_elsewhere(prepared, made)) {
        Ok(Some(outcome)) => {
            tracing::info!(gid, ?outcome, "prepared transaction finished elsewhere");
            Ok(Some(outcome))
        }
        _ => Err(failure),
    }
}

/// `after-commit`: publishes the event of an order whose transaction has committed. A failure
/// loses the event (counted in `events_publish_failures_total`); the order stands.
pub async fn after_commit(app: &AppState, doc: &OrderDocument) {
    if let (EventsMode::AfterCommit, Some(broker)) = (app.events.mode, &app.events.broker)
        && let Err(e) = publish(app, broker, &publication(&OrderCreated::of(doc))).await
    {
        tracing::warn!(order_id = %doc.id, error = %e, "order event lost (after-commit)");
    }
}

/// Two-phase recovery, once per recovery pass: every prepared transaction of ours in this
/// database older than a live order's publication can take is committed if its event is in the
/// stream, else rolled back. Returns how many it resolved.
pub async fn resolve_in_doubt(app: &AppState) -> Result<usize, ApiError> {
    let (EventsMode::TwoPhase, Some(broker)) = (app.events.mode, &app.events.broker) else {
        return Ok(0);
    };
    let mut step = Step::Own(app.db.acquire("recovery").await?);
    let rows = step
        .conn()
        .run(|pg| {
            sqlx::query(sql::PREPARED_TRANSACTIONS)
                .bind(events::GID_PREFIX)
                .fetch_all(pg)
        })
        .await
        .map_err(db_error)?;
    let min_age = events::in_doubt_after(app.settings.events.nats_timeout()).as_secs_f64();
    let mut in_doubt = Vec::new();
    for r in &rows {
        let (gid, age_s): (String, f64) = (
            r.try_get(0).map_err(db_error)?,
            r.try_get(1).map_err(db_error)?,
        );
        if age_s >= min_age {
            in_doubt.push(gid);
        }
    }
    app.metrics.events.in_doubt.set(in_doubt.len() as i64);
    let mut resolved = 0;
    for gid in &in_doubt {
        let Some(order_id) = events::order_of_gid(gid) else {
            continue;
        };
        let in_stream = broker
            .contains(&subject_of(order_id))
            .await
            .map_err(|e| ApiError::dependency(Dependency::Broker, e))?;
        let action = events::in_doubt_action(in_stream);
        if finish(step.conn(), gid, action).await?.is_some() {
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
        tracing::info!(gid = %gid, action, "in-doubt prepared transaction resolved");
        resolved += 1;
    }
    app.metrics.events.in_doubt.sub(resolved as i64);
    Ok(resolved)
}
