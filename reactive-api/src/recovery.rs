//! The recovery loop, as a tokio task: every `RECONCILE_INTERVAL_MS`, and once at start-up, it
//! claims the keys left in `CHARGING` whose lease expired, asks the gateway what became of each
//! charge and settles it as `order_core::recovery::decide` says — an order, a stored decline, a
//! released key, or a voided charge. Step for step the same as blocking-api's `recovery.rs`.

use std::sync::Arc;

use order_core::error::ApiError;
use order_core::order::Outcome;
use order_core::recovery::{self, CLAIM_BATCH, ClaimedKey, Settle};

use crate::db::Held;
use crate::service;
use crate::state::AppState;

/// Starts the loop as a task on the current runtime.
pub fn spawn(app: Arc<AppState>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            run_pass(&app).await;
            tokio::time::sleep(app.settings.reconcile_interval()).await;
        }
    })
}

/// One pass: claims and settles due keys until none is left. Returns how many it settled.
pub async fn run_pass(app: &AppState) -> usize {
    app.metrics.recovery_passes.inc();
    // Two-phase: prepared transactions left in doubt first; a rolled-back order's key is then
    // settled below like any other key left in CHARGING.
    if let Err(e) = crate::events::resolve_in_doubt(app).await {
        tracing::warn!(error = %e, "in-doubt prepared transactions stay for the next pass");
    }
    let mut settled = 0;
    loop {
        let claimed = match app
            .db
            .claim_charging(app.settings.lease_seconds(), CLAIM_BATCH)
            .await
        {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::warn!(error = %e, "recovery could not claim keys; next pass will");
                return settled;
            }
        };
        for key in &claimed {
            let action = match settle(app, key).await {
                Ok(action) => action,
                Err(e) => {
                    tracing::warn!(gateway_key = %key.gateway_key, error = %e, "recovery deferred");
                    // End the claim's lease at once so the next pass tries again.
                    let (seller_id, reference_id) = (&key.seller_id, &key.reference_id);
                    app.db
                        .release(Held::none(), seller_id, reference_id, key.attempt)
                        .await;
                    "deferred"
                }
            };
            app.metrics
                .recovery_actions
                .with_label_values(&[action])
                .inc();
            settled += usize::from(action != "deferred");
        }
        if (claimed.len() as i64) < CLAIM_BATCH {
            return settled;
        }
    }
}

/// Settles one claimed key; returns the action taken for the metrics.
async fn settle(app: &AppState, key: &ClaimedKey) -> Result<&'static str, ApiError> {
    let found = app.deps.lookup_payment(&key.gateway_key).await?;
    let action = match recovery::decide(key, found.as_ref()) {
        Settle::Persist(pending, pay) => {
            let doc = pending.confirm(&pay);
            let placed = Some((&doc, key.gateway_key.as_str()));
            match finish(app, key, Outcome::created(&doc), placed).await {
                Ok(()) => "completed",
                // A bug or a row the database refuses for good: the order cannot be made.
                Err(ApiError::Internal(e)) => {
                    tracing::error!(gateway_key = %key.gateway_key, error = ?e, "order cannot be made");
                    void_and_refuse(app, key).await?
                }
                Err(other) => return Err(other),
            }
        }
        Settle::Decline => {
            finish(app, key, Outcome::refused(&ApiError::PaymentDeclined), None).await?;
            "declined"
        }
        Settle::VoidThenRelease => {
            app.deps.void_payment(&key.gateway_key).await?;
            app.db.release_uncharged(key).await?;
            "released"
        }
        Settle::Release => {
            app.db.release_uncharged(key).await?;
            "released"
        }
        Settle::VoidAndRefuse(why) => {
            tracing::error!(gateway_key = %key.gateway_key, why, "voiding the charge");
            void_and_refuse(app, key).await?
        }
        Settle::Refuse => {
            finish(app, key, recovery::voided_outcome(), None).await?;
            "voided"
        }
    };
    tracing::info!(
        seller_id = %key.seller_id,
        reference_id = %key.reference_id,
        gateway_key = %key.gateway_key,
        action,
        "recovery settled a key"
    );
    Ok(action)
}

async fn void_and_refuse(app: &AppState, key: &ClaimedKey) -> Result<&'static str, ApiError> {
    app.deps.void_payment(&key.gateway_key).await?;
    finish(app, key, recovery::voided_outcome(), None).await?;
    Ok("voided")
}

/// Completes the claimed key (fenced by the claim's attempt) with the outcome and its order.
async fn finish(
    app: &AppState,
    key: &ClaimedKey,
    outcome: Outcome,
    placed: Option<(&order_core::order::OrderDocument, &str)>,
) -> Result<(), ApiError> {
    let (seller_id, reference_id) = (&key.seller_id, &key.reference_id);
    let mut held = Held::none();
    service::persist(
        app,
        &mut held,
        seller_id,
        reference_id,
        key.attempt,
        outcome,
        placed,
    )
    .await?;
    Ok(())
}
