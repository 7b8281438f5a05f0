//! HTTP routes: the three mocked dependencies, the gateway's reconciliation API and the admin
//! surface that steers them.

mod admin;
mod deps;
mod gateway;
mod reconcile;

use actix_web::web;
use order_core::domain::deps::{PAY_PATH, PAYMENTS_PATH, RISK_PATH, SELLER_PATH, VOID_SUFFIX};

use crate::admin as paths;

/// Registers every route. The dependencies' paths are the wire contract the APIs are written
/// against, taken from the one copy of it (`order_core::domain::deps`) that the APIs call.
pub(crate) fn configure(cfg: &mut web::ServiceConfig) {
    let payment = format!("{PAYMENTS_PATH}/{{idempotency_key}}");
    cfg.route(SELLER_PATH, web::get().to(deps::seller_authorization))
        .route(RISK_PATH, web::post().to(deps::risk_validate))
        .route(PAY_PATH, web::post().to(gateway::gateway_pay))
        .route(&payment, web::get().to(reconcile::payment_status))
        .route(
            &format!("{payment}{VOID_SUFFIX}"),
            web::post().to(reconcile::payment_void),
        )
        .route(paths::CONFIG, web::get().to(admin::get_config))
        .route(paths::CONFIG, web::put().to(admin::put_config))
        .route(paths::LEDGER, web::get().to(admin::get_ledger))
        .route(paths::STATS, web::get().to(admin::get_stats))
        .route(paths::RESET, web::post().to(admin::reset))
        .route(paths::HEALTH, web::get().to(admin::health));
}
