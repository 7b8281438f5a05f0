//! The order event (`EVENTS_MODE`, see `order_core::plumbing::events`), as plain blocking functions. Step for
//! step the same as reactive-api's `events.rs`:
//! - [`publish`]: one publication, counted and timed;
//! - [`finish`]: a two-phase prepared transaction committed or rolled back, by the request that
//!   prepared it or by recovery;
//! - [`after_commit`]: the publication after the order's commit (`after-commit`);
//! - [`resolve_in_doubt`]: two-phase recovery of prepared transactions, from the recovery loop.
//!
//! The persist step, which ties the order's writes to its event as the mode says, is
//! `persist.rs`; the outbox relay, a thread, is `outbox.rs`; the mode and its broker,
//! [`Events`](crate::state::Events), are held in `state.rs` with the rest of what the handlers
//! share.

use std::time::Instant;

use diesel::sql_types::{Bool, Double, Text};
use diesel::{QueryableByName, RunQueryDsl, sql_query};
use event_broker::{Ack, Publication, PublishFailure, subject_of};
use order_core::domain::error::{ApiError, Dependency};
use order_core::domain::order::OrderDocument;
use order_core::domain::sql;
use order_core::plumbing::events::{self, EventsMode, InDoubt, OrderCreated};

use crate::broker::BlockingBroker;
use crate::connections::PgConn;
use crate::db::Step;
use crate::db::error::db_error;
use crate::state::AppState;

pub(crate) fn publication(ev: &OrderCreated) -> Publication {
    Publication {
        subject: subject_of(&ev.order_id),
        msg_id: ev.event_id.clone(),
        payload: ev.to_json().into(),
    }
}

/// Publishes one event, counted and timed.
pub(crate) fn publish(
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

pub(crate) fn exec(conn: &mut PgConn, statement: &str) -> Result<(), ApiError> {
    conn.run(|pg| sql_query(statement).execute(pg))
        .map(|_| ())
        .map_err(db_error)
}

/// `COMMIT PREPARED` or `ROLLBACK PREPARED` (`action`). `Ok(None)`: done as asked. When it fails,
/// reads back what happened (`sql::PREPARED_OUTCOME`): `Ok(Some(outcome))` when someone else (the
/// live request, recovery) had already finished it — committed if its order is there, rolled
/// back if not (`events::finished_elsewhere`); the failure stands only while it is still prepared.
/// (diesel does not expose the SQLSTATE, `42704`, of the lost race; reading back needs none.)
pub(crate) fn finish(
    conn: &mut PgConn,
    gid: &str,
    action: InDoubt,
) -> Result<Option<InDoubt>, ApiError> {
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
        let subject = subject_of(order_id);
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
