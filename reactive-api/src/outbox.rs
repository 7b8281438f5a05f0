//! The outbox relay (`EVENTS_MODE=outbox`, see `order_core::plumbing::events`), a task of `async fn`s.
//! Step for step the same as blocking-api's `outbox.rs`.
//!
//! Why it holds no transaction while it publishes: a relay that does, under a broker whose
//! acknowledgements take longer than `DB_STATEMENT_TIMEOUT_MS` (which is also the session's
//! `idle_in_transaction_session_timeout`), has its session killed every pass — nothing marked
//! sent, the same events published for ever (`contract_events_faults`, acknowledgements 1.5 s
//! against a 500 ms timeout). So a pass claims its rows with a lease in one statement, gives the
//! connection back, publishes, and settles the claim in a second statement.

use std::sync::Arc;
use std::time::{Duration, Instant};

use event_broker::Publication;
use order_core::domain::error::{ApiError, Dependency};
use order_core::domain::sql;
use order_core::plumbing::events::{self, EventsMode};
use sqlx::Row;

use crate::db::Step;
use crate::db::error::db_error;
use crate::events::record;
use crate::state::AppState;

/// Outbox rows a relay pass publishes at most.
pub const RELAY_BATCH: i64 = 256;

/// `outbox`: starts the relay as a task; a no-op in the other modes.
pub fn spawn_relay(app: Arc<AppState>) {
    if app.events.mode != EventsMode::Outbox {
        return;
    }
    tokio::spawn(async move {
        let idle = app.settings.events.outbox_poll();
        loop {
            match relay_pass(&app).await {
                Ok(n) if n as i64 == RELAY_BATCH => {}
                Ok(_) => tokio::time::sleep(idle).await,
                Err(e) => {
                    tracing::warn!(error = %e, "outbox relay pass failed; retrying");
                    tokio::time::sleep(idle.max(Duration::from_millis(500))).await;
                }
            }
        }
    });
}

/// One relay pass, with no transaction open across the broker: claims up to `RELAY_BATCH` unsent
/// rows for a lease (one statement, `sql::CLAIM_OUTBOX`), gives the connection back, publishes
/// them all and awaits their acknowledgements together (the batch bounded by `NATS_TIMEOUT_MS`),
/// then settles the claim: acknowledged rows sent, the others released for the next pass.
/// Returns how many rows it claimed.
pub async fn relay_pass(app: &AppState) -> Result<usize, ApiError> {
    let Some(broker) = &app.events.broker else {
        return Ok(0);
    };
    let token = events::claim_token();
    let mut step = Step::Own(app.db.acquire("outbox").await?);
    let rows = step
        .conn()
        .run(|pg| {
            sqlx::query(sql::CLAIM_OUTBOX)
                .bind(RELAY_BATCH)
                .bind(app.settings.outbox_claim_lease().as_secs_f64())
                .bind(&token)
                .fetch_all(pg)
        })
        .await
        .map_err(db_error)?;
    let batch: Vec<Publication> = rows
        .iter()
        .map(|r| {
            Ok(Publication {
                msg_id: r.try_get(0)?,
                subject: r.try_get(1)?,
                payload: r.try_get::<String, _>(2)?.into(),
            })
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(db_error)?;
    let mut unacknowledged = 0;
    if !batch.is_empty() {
        drop(step);
        let started = Instant::now();
        let results = broker.publish_all(&batch).await;
        record(app, started, &results);
        let sent: Vec<&str> = batch
            .iter()
            .zip(&results)
            .filter(|(_, r)| r.is_ok())
            .map(|(p, _)| p.msg_id.as_str())
            .collect();
        step = Step::Own(app.db.acquire("outbox").await?);
        step.conn()
            .run(|pg| {
                sqlx::query(sql::SETTLE_OUTBOX_CLAIM)
                    .bind(&token)
                    .bind(&sent)
                    .execute(pg)
            })
            .await
            .map_err(db_error)?;
        unacknowledged = batch.len() - sent.len();
    }
    if app.metrics.events.outbox_gauges_due() {
        let (backlog, oldest_age_s): (i64, f64) = step
            .conn()
            .run(|pg| sqlx::query_as(sql::OUTBOX_BACKLOG).fetch_one(pg))
            .await
            .map_err(db_error)?;
        app.metrics.events.outbox_backlog.set(backlog);
        app.metrics.events.outbox_oldest_unsent.set(oldest_age_s);
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
