//! Fixed JSON answers, served from `'static` strings so the hot path allocates nothing for them.
//! Their own module, below both the routes and the fault injection that answers for them.

use actix_web::HttpResponse;
use actix_web::http::{StatusCode, header::ContentType};

pub fn fixed(status: StatusCode, body: &'static str) -> HttpResponse {
    HttpResponse::build(status)
        .content_type(ContentType::json())
        .body(body)
}

pub fn owned(status: StatusCode, body: String) -> HttpResponse {
    HttpResponse::build(status)
        .content_type(ContentType::json())
        .body(body)
}

pub fn service_unavailable() -> HttpResponse {
    fixed(
        StatusCode::SERVICE_UNAVAILABLE,
        r#"{"error":"injected_failure"}"#,
    )
}

/// What a hung request finally answers if its client is still there after `hang_ms`.
pub fn gateway_timeout() -> HttpResponse {
    fixed(StatusCode::GATEWAY_TIMEOUT, r#"{"error":"injected_hang"}"#)
}

pub fn unauthorized() -> HttpResponse {
    fixed(StatusCode::UNAUTHORIZED, r#"{"error":"unauthorized"}"#)
}

pub fn bad_request() -> HttpResponse {
    fixed(StatusCode::BAD_REQUEST, r#"{"error":"bad_request"}"#)
}
