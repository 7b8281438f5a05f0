//! The order event (`EVENTS_MODE`, see `order_core::plumbing::events`), as `async fn`s on the async NATS
//! client. Step for step the same as blocking-api's `events.rs`:
//! - [`publish`]: one publication, counted and timed;
//! - [`finish`]: a two-phase prepared transaction committed or rolled back, by the request that
//!   prepared it or by recovery;
//! - [`after_commit`]: the publication after the order's commit (`after-commit`);
//! - [`resolve_in_doubt`]: two-phase recovery of prepared transactions, from the recovery loop.
//!
//! The persist step, which ties the order's writes to its event as the mode says, is
//! `persist.rs`; the outbox relay, a task, is `outbox.rs`; the mode and its broker,
//! [`Events`](crate::state::Events), are held in `state.rs` with the rest of what the handlers
//! share.

use std::time::Instant;

use event_broker::{Ack, Broker, Publication, PublishFailure, subject_of};
use order_core::domain::error::{ApiError, Dependency};
use order_core::domain::order::OrderDocument;
use order_core::domain::sql;
use order_core::plumbing::events::{self, EventsMode, InDoubt, OrderCreated};
use sqlx::{AssertSqlSafe, Row};

use crate::connections::PgConn;
use crate::db::Step;
use crate::db::error::db_error;
use crate::db::tx::control;
use crate::state::AppState;

pub(crate) fn publication(ev: &OrderCreated) -> Publication {
    Publication {
        subject: subject_of(&ev.order_id),
        msg_id: ev.event_id.clone(),
        payload: ev.to_json().into(),
    }
}

/// Publishes one event, counted and timed.
pub(crate) async fn publish(
    app: &AppState,
    broker: &Broker,
    p: &Publication,
) -> Result<Ack, PublishFailure> {
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

pub(crate) async fn exec(conn: &mut PgConn, statement: &str) -> Result<(), ApiError> {
    control(conn, AssertSqlSafe(statement.to_owned()))
        .await
        .map_err(db_error)
}

/// `COMMIT PREPARED` or `ROLLBACK PREPARED` (`action`). `Ok(None)`: done as asked. When it fails,
/// reads back what happened (`sql::PREPARED_OUTCOME`): `Ok(Some(outcome))` when someone else (the
/// live request, recovery) had already finished it — committed if its order is there, rolled
/// back if not (`events::finished_elsewhere`); the failure stands only while it is still prepared.
pub(crate) async fn finish(
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
