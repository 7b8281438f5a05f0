//! The recovery loop, as a tokio task: every `RECONCILE_INTERVAL_MS`, and once at start-up, it
//! claims the keys left in `CHARGING` whose lease expired and whose back-off has passed, asks the
//! gateway what became of each charge and settles it as `order_core::domain::recovery::decide` says — an
//! order, a stored decline, a released key, or a voided charge. A key it cannot settle now is put
//! off for a growing pause, so a pass always ends. Voids are fenced and checked (see
//! `order_core::domain::recovery`). Step for step the same as blocking-api's `recovery.rs`.

use std::sync::Arc;

use order_core::domain::db_failure;
use order_core::domain::error::{ApiError, Dependency};
use order_core::domain::order::{Outcome, Placed};
use order_core::domain::recovery::{self, CLAIM_BATCH, ClaimedKey, Settle};

use crate::db::Held;
use crate::service;
use crate::state::AppState;

/// Starts the loop as a task on the current runtime; the retention sweep runs after each pass.
pub fn spawn(app: Arc<AppState>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            run_pass(&app).await;
            crate::retention::sweep(&app).await;
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
                break;
            }
        };
        for key in &claimed {
            let action = match settle(app, key).await {
                Ok(action) => action,
                Err(e) => {
                    tracing::warn!(gateway_key = %key.gateway_key, error = %e, "recovery deferred");
                    "deferred"
                }
            };
            if matches!(action, "deferred" | "superseded") {
                defer(app, key).await;
            }
            app.metrics
                .recovery_actions
                .with_label_values(&[action])
                .inc();
            settled += usize::from(!matches!(action, "deferred" | "superseded" | "unreadable"));
        }
        // Deferred keys are not due again in this pass: it ends once fewer than a claim are due.
        if (claimed.len() as i64) < CLAIM_BATCH {
            break;
        }
    }
    match app.db.deferred_keys().await {
        Ok((deferred, unreadable)) => {
            app.metrics.recovery_deferred_keys.set(deferred);
            app.metrics.recovery_unreadable_deferred.set(unreadable);
        }
        Err(e) => tracing::debug!(error = %e, "recovery could not count its deferred keys"),
    }
    settled
}

/// Puts a key off for its next back-off (fenced by the claim: a key another attempt owns now is
/// left alone). If even that fails, the claim's lease runs out and a later pass claims it.
async fn defer(app: &AppState, key: &ClaimedKey) {
    let pause = recovery::backoff(key.deferrals).as_secs_f64();
    if let Err(e) = app.db.defer(key, pause).await {
        tracing::debug!(gateway_key = %key.gateway_key, error = %e, "could not defer; the lease will expire");
    }
}

/// Settles one claimed key; returns the action taken for the metrics.
async fn settle(app: &AppState, key: &ClaimedKey) -> Result<&'static str, ApiError> {
    let found = app.deps.lookup_payment(&key.gateway_key).await?;
    let action = match recovery::decide(key, found.as_ref()) {
        Settle::Persist(pending, pay) => {
            let doc = pending.confirm(&pay);
            let placed = Some(Placed {
                doc: &doc,
                payment_key: &key.gateway_key,
            });
            match finish(app, key, Outcome::created(&doc), placed).await {
                Ok(()) => "completed",
                // The database refuses this order's rows for good: it can never be made. Any
                // other failure may pass, and the key waits for the next pass.
                Err(e) if db_failure::is_refusal(&e) => {
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
            if !void(app, key).await? {
                return Ok("superseded");
            }
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
        Settle::Unreadable(why) => {
            // Never a void for it: the charge waits, logged once, for a release that can read it.
            let pause = recovery::backoff(key.deferrals).as_secs_f64();
            if app.db.defer_unreadable(key, pause).await? {
                tracing::warn!(
                    seller_id = %key.seller_id,
                    reference_id = %key.reference_id,
                    gateway_key = %key.gateway_key,
                    why,
                    "this release cannot read the key's pending order: left charged for a release that can"
                );
            }
            return Ok("unreadable");
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

/// Voids the key's charge at the gateway, fenced like recovery's writes: `false` (nothing voided)
/// when the claim no longer holds — another attempt owns the key, or an order was made under this
/// charge. A void whose answer does not show the key voided is an error: the key stays
/// `CHARGING` for the next pass.
async fn void(app: &AppState, key: &ClaimedKey) -> Result<bool, ApiError> {
    let lease = app.settings.lease_seconds();
    if !app.db.reassert_claim(key, lease).await? {
        tracing::warn!(gateway_key = %key.gateway_key, "stale claim or an order exists: not voided");
        return Ok(false);
    }
    let after = app.deps.void_payment(&key.gateway_key).await?;
    if !recovery::void_took_effect(&after) {
        return Err(ApiError::DependencyUnavailable {
            dependency: Dependency::Payment,
            cause: anyhow::anyhow!("the void did not take effect: {}", after.status),
        });
    }
    Ok(true)
}

async fn void_and_refuse(app: &AppState, key: &ClaimedKey) -> Result<&'static str, ApiError> {
    if !void(app, key).await? {
        return Ok("superseded");
    }
    finish(app, key, recovery::voided_outcome(), None).await?;
    Ok("voided")
}

/// Completes the claimed key (fenced by the claim's attempt) with the outcome and its order.
async fn finish(
    app: &AppState,
    key: &ClaimedKey,
    outcome: Outcome,
    placed: Option<Placed<'_>>,
) -> Result<(), ApiError> {
    let mut held = Held::none();
    service::persist(app, &mut held, key.key_ref(), outcome, placed).await?;
    Ok(())
}
