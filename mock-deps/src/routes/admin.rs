//! The admin surface: steer the mocks live and read what they saw. Not part of the mocked
//! dependencies' contract; the load lab and the tests use it.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use serde::Deserialize;

use crate::admin::{ConfigError, ConfigPatch};
use crate::json;
use crate::state::State;

pub(crate) async fn get_config(state: web::Data<State>) -> HttpResponse {
    HttpResponse::Ok().json(state.config())
}

/// Applies a partial document and answers the full new config; a bad document changes nothing.
pub(crate) async fn put_config(body: web::Bytes, state: web::Data<State>) -> HttpResponse {
    let result = serde_json::from_slice::<ConfigPatch>(&body)
        .map_err(|e| e.to_string())
        .and_then(|patch| state.update_config(|current| patch.apply(current)));
    match result {
        Ok(config) => {
            tracing::info!(?config, "config changed");
            HttpResponse::Ok().json(config)
        }
        Err(detail) => HttpResponse::BadRequest().json(ConfigError {
            error: "invalid_config".to_owned(),
            detail,
        }),
    }
}

#[derive(Deserialize)]
pub(crate) struct LedgerQuery {
    #[serde(default)]
    detail: bool,
}

pub(crate) async fn get_ledger(
    query: web::Query<LedgerQuery>,
    state: web::Data<State>,
) -> HttpResponse {
    HttpResponse::Ok().json(state.ledger.snapshot(query.detail))
}

pub(crate) async fn get_stats(state: web::Data<State>) -> HttpResponse {
    HttpResponse::Ok().json(state.stats.snapshot())
}

/// Clears ledger and counters, keeps the config.
pub(crate) async fn reset(state: web::Data<State>) -> HttpResponse {
    state.ledger.reset();
    state.stats.reset();
    tracing::info!("ledger and stats reset");
    HttpResponse::NoContent().finish()
}

pub(crate) async fn health() -> HttpResponse {
    json::fixed(StatusCode::OK, r#"{"status":"ok"}"#)
}
