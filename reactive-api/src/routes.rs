//! HTTP handlers: each request is a future on the worker's event loop.

use actix_web::{HttpRequest, HttpResponse, web};
use order_core::ApiError;
use order_core::contract::CreateOrderRequest;
use order_core::http::{metrics_response, read_json_body, ready_response, seller_token};

use crate::service;
use crate::startup::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    order_core::server::order_routes(cfg, create_order, get_order, ready, metrics);
}

async fn create_order(
    state: web::Data<AppState>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let token = seller_token(&req)?;
    let body = read_json_body(&req, payload).await?;
    let order = CreateOrderRequest::parse(&body)?.validate(&state.hash_key)?;
    let outcome = service::create_order(&state, &token, order).await?;
    Ok(outcome.into_response())
}

async fn get_order(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let token = seller_token(&req)?;
    let body = service::get_order(&state, &token, &id).await?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(body))
}

async fn ready(state: web::Data<AppState>) -> HttpResponse {
    ready_response(state.db.ping().await)
}

async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let (open, idle) = state.db.pool_state();
    state.metrics.set_pool(open, idle);
    metrics_response(&state.metrics)
}
