//! actix-web glue shared by both servers: reading the body within its limits, the seller token,
//! the metrics middleware, JSON fallbacks for unknown routes and methods, `/health`, `/metrics`,
//! `/openapi.json`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{Method, header};
use actix_web::middleware::Next;
use actix_web::web::{self, Bytes, BytesMut};
use actix_web::{FromRequest, Handler, HttpRequest, HttpResponse, Resource, Responder};
use futures_util::StreamExt;

use crate::domain::contract::MAX_BODY_BYTES;
use crate::domain::error::{ApiError, ErrorCode};
use crate::plumbing::lifecycle::Lifecycle;
use crate::plumbing::metrics::Metrics;
use crate::plumbing::probe::{Probe, ProbeStatus};

/// Reads a JSON request body: `application/json` only (415), at most 64 KiB (413, refused from
/// `Content-Length` before reading when the client announces it), all of it within `timeout`
/// (`CLIENT_BODY_TIMEOUT_MS`, else 408 `request_timeout`). The handlers read it before admission:
/// a client that sends its body slowly, or never, waits here holding nothing but its connection.
pub async fn read_json_body(
    req: &HttpRequest,
    payload: web::Payload,
    timeout: Duration,
) -> Result<Bytes, ApiError> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return Err(ApiError::UnsupportedMediaType);
    }
    let too_large = ApiError::PayloadTooLarge {
        limit: MAX_BODY_BYTES,
    };
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if announced.is_some_and(|n| n > MAX_BODY_BYTES) {
        return Err(too_large);
    }
    let read = read_body(payload, announced.unwrap_or(1024), too_large);
    tokio::time::timeout(timeout, read)
        .await
        .unwrap_or(Err(ApiError::RequestTimeout))
}

async fn read_body(
    mut payload: web::Payload,
    capacity: usize,
    too_large: ApiError,
) -> Result<Bytes, ApiError> {
    let mut body = BytesMut::with_capacity(capacity);
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| ApiError::invalid("body", format!("unreadable: {e}")))?;
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(too_large);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// The seller token from the `Authorization` header (raw or `Bearer`), or 401.
pub fn seller_token(req: &HttpRequest) -> Result<String, ApiError> {
    let value = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    crate::domain::deps::token_from_header(value)
}

/// Counts every request by route pattern, method and status, times it, and tracks those in flight
/// (`http_requests_in_flight`, through an [`InFlight`] guard: a request whose client disconnects
/// has its handler, and this future, dropped by actix, and must stop counting then too).
pub async fn track_metrics(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let metrics = req.app_data::<web::Data<Arc<Metrics>>>().cloned();
    let method = method_label(req.method());
    let start = Instant::now();
    let in_flight = metrics.as_ref().map(|m| InFlight::enter(&m.in_flight));
    let result = next.call(req).await;
    drop(in_flight);
    if let Some(m) = &metrics {
        let (route, status) = match &result {
            Ok(res) => (
                res.request()
                    .match_pattern()
                    .unwrap_or_else(|| "unmatched".to_owned()),
                res.status().as_u16(),
            ),
            Err(e) => (
                "unmatched".to_owned(),
                e.as_response_error().status_code().as_u16(),
            ),
        };
        m.http_requests
            .with_label_values(&[&route, method, &status.to_string()])
            .inc();
        m.http_duration
            .with_label_values(&[&route, method])
            .observe(start.elapsed().as_secs_f64());
    }
    result
}

/// Holds `http_requests_in_flight` up by one for its lifetime, however the request ends.
struct InFlight(prometheus::IntGauge);

impl InFlight {
    fn enter(gauge: &prometheus::IntGauge) -> Self {
        gauge.inc();
        InFlight(gauge.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The `method` label: the standard methods by name, anything else `OTHER`, so that a client
/// cannot grow the metric's label set (and the server's memory) by inventing methods.
pub fn method_label(method: &actix_web::http::Method) -> &'static str {
    use actix_web::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => "OTHER",
    }
}

/// `GET /health`: the process is up.
pub async fn health() -> HttpResponse {
    HttpResponse::Ok().json(Probe::of(ProbeStatus::Ok))
}

/// `GET /ready`: whether this process can serve — 200 until SIGTERM, then 503 `shutting_down`.
///
/// Answered on the event loop from the process's own state: no database call, no queue, no pool
/// or thread shared with orders or reads, so it answers within milliseconds however loaded the
/// API or slow the database. The database is deliberately not asked: every replica shares it, so
/// a slow or saturated database would fail every replica's probe at once and leave the Service
/// with no endpoint — a slowdown turned into an outage, and the requests that could still be
/// served (replays, reads, refusals with a `Retry-After`) refused by the load balancer instead.
/// The database's state is in `/metrics` (`db_pool_*`, `db_pool_acquire_timeouts_total`) and in
/// the answers themselves (503 `database_unavailable`).
pub async fn ready(lifecycle: web::Data<Lifecycle>) -> HttpResponse {
    if lifecycle.draining() {
        return HttpResponse::ServiceUnavailable().json(Probe {
            status: ProbeStatus::Draining,
            error: Some(ErrorCode::ShuttingDown),
            detail: Some("the server is shutting down".to_owned()),
        });
    }
    HttpResponse::Ok().json(Probe::of(ProbeStatus::Ready))
}

/// The longest `{id}` of `GET /orders/{id}` that can name an order: `ORDER_` and a hyphenated
/// UUID are 42 bytes.
pub const MAX_ORDER_ID_BYTES: usize = 64;

/// Checks an order id's shape before any work (no seller call, no queue, no query): one that no
/// order can have is 404 `not_found` at once, whatever its length.
pub fn order_id(id: &str) -> Result<&str, ApiError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ORDER_ID_BYTES
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    ok.then_some(id).ok_or(ApiError::NotFound)
}

/// Renders `/metrics` after the caller refreshed the pool gauges.
pub fn metrics_response(metrics: &Metrics) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(metrics.render())
}

/// Fallback for unknown paths: a JSON 404 rather than an empty body.
pub async fn not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound)
}

/// Every route of both APIs: `path` answered by `handler` for `method`, and any other method with
/// 405 `method_not_allowed` whose `Allow` header names `method` (RFC 9110 §15.5.6), taken from the
/// same value as the route's guard so the two cannot differ. Each path routes one method.
pub fn resource<F, Args>(path: &str, method: Method, handler: F) -> Resource
where
    F: Handler<Args>,
    Args: FromRequest + 'static,
    F::Output: Responder + 'static,
{
    let allow = method.clone();
    web::resource(path)
        .route(web::method(method).to(handler))
        .default_service(web::to(move || {
            let allow = allow.clone();
            async move { Err::<HttpResponse, _>(ApiError::MethodNotAllowed { allow }) }
        }))
}

/// Registers the routes whose handlers are the same in both APIs: the probes among them, which
/// answer on the event loop from the process's own state.
pub fn shared_routes(cfg: &mut web::ServiceConfig) {
    cfg.service(resource("/health", Method::GET, health))
        .service(resource("/ready", Method::GET, ready))
        // Like `/health`, outside admission: a client reads the contract however loaded the API is.
        .service(resource(
            "/openapi.json",
            Method::GET,
            super::openapi::serve,
        ));
}

#[cfg(test)]
mod tests {
    use actix_web::http::Method;

    #[test]
    fn only_ids_an_order_can_have_pass() {
        assert!(super::order_id("ORDER_0B7E4C1A-3F2D-4E5A-9C8B-1D2E3F4A5B6C").is_ok());
        assert!(super::order_id("").is_err());
        assert!(super::order_id(&"A".repeat(65)).is_err());
        assert!(super::order_id("ORDER_1%20x").is_err());
    }

    #[test]
    fn invented_methods_share_one_label() {
        assert_eq!(super::method_label(&Method::POST), "POST");
        let odd = Method::from_bytes(b"FOOBAR").unwrap();
        assert_eq!(super::method_label(&odd), "OTHER");
    }
}
