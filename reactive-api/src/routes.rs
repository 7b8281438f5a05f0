//! HTTP handlers: each request is a future on the worker's event loop. An order's body is read
//! (within `CLIENT_BODY_TIMEOUT_MS`) before admission, so a slow client holds no place. An
//! admitted order runs as a task of its own, so that a client that disconnects (actix then drops
//! the handler) cannot abandon a reserved key or a charge half-way; it stops only if it has not
//! reserved yet.

use actix_web::{HttpRequest, HttpResponse, web};
use order_core::ApiError;
use order_core::domain::contract::CreateOrderRequest;
use order_core::plumbing::admission::LoopLag;
use order_core::plumbing::http::{self, metrics_response, read_json_body, seller_token};

use crate::service;
use crate::state::AppState;

pub fn configure(cfg: &mut web::ServiceConfig) {
    order_core::plumbing::server::order_routes(cfg, create_order, get_order, metrics);
}

async fn create_order(
    state: web::Data<AppState>,
    lag: web::Data<LoopLag>,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    // The body first: a client slow to send it waits holding no admission place.
    let body = read_json_body(&req, payload, state.settings.client_body_timeout()).await?;
    let (ticket, client) = state.admission.admit(&lag).await?;
    let token = seller_token(&req)?;
    let order = CreateOrderRequest::parse(&body)?.validate(&state.hash_key)?;
    let app = state.clone();
    // Boxed: the order's state machine is several KiB, and a task is moved by value a few
    // times between spawn and its result; a box moves as a pointer.
    let work = actix_web::rt::spawn(Box::pin(async move {
        service::create_order(&app, &ticket, &token, order).await
    }));
    let outcome = work
        .await
        .map_err(|e| ApiError::Internal(anyhow::anyhow!("order task: {e}")))?;
    client.answered();
    Ok(outcome?.into_response())
}

async fn get_order(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    // Before any work: an id no order can have costs no seller call.
    http::order_id(&id)?;
    let token = seller_token(&req)?;
    // Dropped with the handler when the client goes away, waiting or not.
    let _place = state.reads.enter().await?;
    let body = service::get_order(&state, &token, &id).await?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(body))
}

async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let (open, idle) = state.db.pool_state();
    state.metrics.set_pool(open, idle);
    metrics_response(&state.metrics)
}
