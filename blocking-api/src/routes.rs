//! HTTP handlers: the body (within `CLIENT_BODY_TIMEOUT_MS`), then admission, on the event loop;
//! then the whole order handler runs as one closure on the bounded blocking pool. With
//! `MAX_IN_FLIGHT` = `BLOCKING_THREADS` (the default) an admitted order finds a thread at once; a
//! closure whose request waited past its deadline anyway is never started. The reads run on a
//! bounded pool of their own ([`pool::ReadPool`]); the probes on no pool at all
//! (`order_core::plumbing::http::ready`).

use actix_web::{HttpRequest, HttpResponse, web};
use order_core::ApiError;
use order_core::domain::contract::CreateOrderRequest;
use order_core::plumbing::admission::LoopLag;
use order_core::plumbing::http::{self, metrics_response, read_json_body, seller_token};

use crate::state::AppState;
use crate::{pool, service};

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
    let app = state.clone();
    // If this handler is dropped (the client left), the closure still runs to its end; `client`
    // tells it to stop if it has not reserved the key yet.
    let outcome = pool::run(&state.metrics, move || {
        ticket.check_deadline()?;
        let order = CreateOrderRequest::parse(&body)?.validate(&app.hash_key)?;
        service::create_order(&app, &ticket, &token, order)
    })
    .await;
    client.answered();
    Ok(outcome?.into_response())
}

async fn get_order(
    state: web::Data<AppState>,
    req: HttpRequest,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    // Before any work: an id no order can have costs no queue place and no seller call.
    http::order_id(&id)?;
    let token = seller_token(&req)?;
    let app = state.clone();
    let body = state
        .reads
        .run(move || service::get_order(&app, &token, &id))
        .await?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(body))
}

async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let (open, idle) = state.db.pool_state();
    state.metrics.set_pool(open, idle);
    metrics_response(&state.metrics)
}
