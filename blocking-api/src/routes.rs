//! HTTP handlers: the body is read on the event loop, then the whole order handler runs as one
//! closure on the bounded blocking pool.

use actix_web::{HttpRequest, HttpResponse, web};
use order_core::ApiError;
use order_core::contract::CreateOrderRequest;
use order_core::http::{metrics_response, read_json_body, ready_response, seller_token};

use crate::startup::AppState;
use crate::{pool, service};

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
    let app = state.clone();
    let outcome = pool::run(&state.metrics, move || {
        let order = CreateOrderRequest::parse(&body)?.validate(&app.hash_key)?;
        service::create_order(&app, &token, order)
    })
    .await?;
    Ok(outcome.into_response())
}

async fn get_order(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let token = seller_token(&req)?;
    let app = state.clone();
    let body = pool::run(&state.metrics, move || {
        service::get_order(&app, &token, &id)
    })
    .await?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(body))
}

async fn ready(state: web::Data<AppState>) -> HttpResponse {
    let app = state.clone();
    ready_response(pool::run(&state.metrics, move || app.db.ping()).await)
}

async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let (open, idle) = state.db.pool_state();
    state.metrics.set_pool(open, idle);
    metrics_response(&state.metrics)
}
