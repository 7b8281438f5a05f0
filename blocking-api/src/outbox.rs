//! The outbox relay (`EVENTS_MODE=outbox`, see `order_core::plumbing::events`), a thread of plain blocking
//! calls. Step for step the same as reactive-api's `outbox.rs`.
//!
//! Why it holds no transaction while it publishes: a relay that does, under a broker whose
//! acknowledgements take longer than `DB_STATEMENT_TIMEOUT_MS` (which is also the session's
//! `idle_in_transaction_session_timeout`), has its session killed every pass — nothing marked
//! sent, the same events published for ever (`contract_events_faults`, acknowledgements 1.5 s
//! against a 500 ms timeout). So a pass claims its rows with a lease in one statement, gives the
//! connection back, publishes, and settles the claim in a second statement.

use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel::sql_types::{Array, BigInt, Double, Text};
use diesel::{QueryableByName, RunQueryDsl, sql_query};
use event_broker::Publication;
use order_core::domain::error::{ApiError, Dependency};
use order_core::domain::sql;
use order_core::plumbing::events::{self, EventsMode};

use crate::db::Step;
use crate::db::error::db_error;
use crate::events::record;
use crate::state::AppState;

/// Outbox rows a relay pass publishes at most.
pub const RELAY_BATCH: i64 = 256;

/// `outbox`: starts the relay on a thread of its own; a no-op in the other modes.
pub fn spawn_relay(app: Arc<AppState>) -> std::io::Result<()> {
    if app.events.mode != EventsMode::Outbox {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("outbox-relay".into())
        .spawn(move || {
            let idle = app.settings.events.outbox_poll();
            loop {
                match relay_pass(&app) {
                    Ok(n) if n as i64 == RELAY_BATCH => {}
                    Ok(_) => std::thread::sleep(idle),
                    Err(e) => {
                        tracing::warn!(error = %e, "outbox relay pass failed; retrying");
                        std::thread::sleep(idle.max(Duration::from_millis(500)));
                    }
                }
            }
        })?;
    Ok(())
}

#[derive(QueryableByName)]
struct OutboxRow {
    #[diesel(sql_type = Text)]
    event_id: String,
    #[diesel(sql_type = Text)]
    subject: String,
    #[diesel(sql_type = Text)]
    payload: String,
}

/// One relay pass, with no transaction open across the broker: claims up to `RELAY_BATCH` unsent
/// rows for a lease (one statement, `sql::CLAIM_OUTBOX`), gives the connection back, publishes
/// them all, then awaits their acknowledgements together (the batch bounded by
/// `NATS_TIMEOUT_MS`), then settles the claim: acknowledged rows sent, the others released for
/// the next pass. Returns how many rows it claimed.
pub fn relay_pass(app: &AppState) -> Result<usize, ApiError> {
    let Some(broker) = &app.events.broker else {
        return Ok(0);
    };
    let token = events::claim_token();
    let mut step = Step::Own(app.db.acquire("outbox")?);
    let rows: Vec<OutboxRow> = step
        .conn()
        .run(|pg| {
            sql_query(sql::CLAIM_OUTBOX)
                .bind::<BigInt, _>(RELAY_BATCH)
                .bind::<Double, _>(app.settings.outbox_claim_lease().as_secs_f64())
                .bind::<Text, _>(&token)
                .load(pg)
        })
        .map_err(db_error)?;
    let batch: Vec<Publication> = rows
        .into_iter()
        .map(|r| Publication {
            subject: r.subject,
            msg_id: r.event_id,
            payload: r.payload.into(),
        })
        .collect();
    let mut unacknowledged = 0;
    if !batch.is_empty() {
        drop(step);
        let started = Instant::now();
        let results = broker.publish_all(&batch);
        record(app, started, &results);
        let sent: Vec<&str> = batch
            .iter()
            .zip(&results)
            .filter(|(_, r)| r.is_ok())
            .map(|(p, _)| p.msg_id.as_str())
            .collect();
        step = Step::Own(app.db.acquire("outbox")?);
        step.conn()
            .run(|pg| {
                sql_query(sql::SETTLE_OUTBOX_CLAIM)
                    .bind::<Text, _>(&token)
                    .bind::<Array<Text>, _>(&sent)
                    .execute(pg)
            })
            .map_err(db_error)?;
        unacknowledged = batch.len() - sent.len();
    }
    #[derive(QueryableByName)]
    struct Backlog {
        #[diesel(sql_type = BigInt)]
        backlog: i64,
        #[diesel(sql_type = Double)]
        oldest_age_s: f64,
    }
    if app.metrics.events.outbox_gauges_due() {
        let backlog: Backlog = step
            .conn()
            .run(|pg| sql_query(sql::OUTBOX_BACKLOG).get_result(pg))
            .map_err(db_error)?;
        app.metrics.events.outbox_backlog.set(backlog.backlog);
        app.metrics
            .events
            .outbox_oldest_unsent
            .set(backlog.oldest_age_s);
    }
    if unacknowledged > 0 {
        return Err(ApiError::dependency(
            Dependency::Broker,
            anyhow::anyhow!(
                "{unacknowledged} of {} outbox events unacknowledged",
                batch.len()
            ),
        ));
    }
    Ok(batch.len())
}
