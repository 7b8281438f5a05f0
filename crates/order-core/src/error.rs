//! The one error type of the order API, its stable machine codes and its HTTP statuses.
//!
//! Every failure a client can see maps to one variant; the body is always
//! `{"error": "<code>", "detail": "<human text>"}` (plus `field` or `dependency` where useful).
//! Internal causes are logged once, with their chain, and never leaked to the client.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;

/// One of the three services the order flow calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dependency {
    Seller,
    Risk,
    Payment,
    /// The events' broker (NATS JetStream), with `EVENTS_MODE=two-phase`.
    Broker,
}

impl Dependency {
    pub fn as_str(self) -> &'static str {
        match self {
            Dependency::Seller => "seller",
            Dependency::Risk => "risk",
            Dependency::Payment => "payment",
            Dependency::Broker => "broker",
        }
    }
}

impl std::fmt::Display for Dependency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{field}: {detail}")]
    InvalidRequest { field: String, detail: String },
    #[error("missing or unknown seller token")]
    Unauthorized,
    #[error("the risk analysis disapproved the order")]
    RiskRejected,
    #[error("the payment was declined")]
    PaymentDeclined,
    #[error("this reference_id was already used with a different request")]
    IdempotencyKeyReused,
    #[error("a request with this reference_id is still being processed")]
    RequestInProgress,
    #[error("the body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("the body must be application/json")]
    UnsupportedMediaType,
    /// The body did not arrive within `CLIENT_BODY_TIMEOUT_MS`.
    #[error("the request body was not received in time")]
    RequestTimeout,
    #[error("the {dependency} service failed, timed out or is unreachable")]
    DependencyUnavailable {
        dependency: Dependency,
        #[source]
        cause: anyhow::Error,
    },
    #[error("no database connection could be used in time")]
    DatabaseUnavailable(#[source] anyhow::Error),
    #[error("the service is at capacity; retry later")]
    Overloaded,
    #[error("the request ran past its deadline before the charge")]
    DeadlineExceeded,
    /// The client went away before the key was reserved: the work stopped. Nobody reads it; the
    /// status (nginx's 499) is for the metrics.
    #[error("the client closed the request")]
    ClientGone,
    #[error("the order could not be completed; its charge was voided")]
    OrderVoided,
    #[error("order not found")]
    NotFound,
    #[error("method not allowed on this path")]
    MethodNotAllowed,
    /// A bug: anything that should not happen. The only source of a 500.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dependency: Option<Dependency>,
}

impl ApiError {
    pub fn invalid(field: impl Into<String>, detail: impl Into<String>) -> Self {
        ApiError::InvalidRequest {
            field: field.into(),
            detail: detail.into(),
        }
    }

    pub fn dependency(dependency: Dependency, cause: impl Into<anyhow::Error>) -> Self {
        ApiError::DependencyUnavailable {
            dependency,
            cause: cause.into(),
        }
    }

    /// The stable machine code clients may branch on.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::InvalidRequest { .. } => "invalid_request",
            ApiError::Unauthorized => "unauthorized",
            ApiError::RiskRejected => "risk_rejected",
            ApiError::PaymentDeclined => "payment_declined",
            ApiError::IdempotencyKeyReused => "idempotency_key_reused",
            ApiError::RequestInProgress => "request_in_progress",
            ApiError::PayloadTooLarge { .. } => "payload_too_large",
            ApiError::UnsupportedMediaType => "unsupported_media_type",
            ApiError::RequestTimeout => "request_timeout",
            ApiError::DependencyUnavailable { .. } => "dependency_unavailable",
            ApiError::DatabaseUnavailable(_) => "database_unavailable",
            ApiError::Overloaded => "overloaded",
            ApiError::DeadlineExceeded => "deadline_exceeded",
            ApiError::ClientGone => "client_closed_request",
            ApiError::OrderVoided => "order_voided",
            ApiError::NotFound => "not_found",
            ApiError::MethodNotAllowed => "method_not_allowed",
            ApiError::Internal(_) => "internal_error",
        }
    }

    /// The error's JSON body, as sent (and, for completed outcomes, stored and replayed).
    pub fn body(&self) -> String {
        let body = ErrorBody {
            error: self.code(),
            detail: self.to_string(),
            field: match self {
                ApiError::InvalidRequest { field, .. } => Some(field),
                _ => None,
            },
            dependency: match self {
                ApiError::DependencyUnavailable { dependency, .. } => Some(*dependency),
                _ => None,
            },
        };
        serde_json::to_string(&body).expect("an error body always serialises")
    }

    /// Seconds a client should wait before retrying, for the errors that invite a retry.
    fn retry_after(&self) -> Option<&'static str> {
        match self {
            ApiError::RequestInProgress
            | ApiError::DatabaseUnavailable(_)
            | ApiError::DependencyUnavailable { .. }
            | ApiError::Overloaded
            | ApiError::DeadlineExceeded => Some("1"),
            _ => None,
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::InvalidRequest { .. } => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::PaymentDeclined => StatusCode::PAYMENT_REQUIRED,
            ApiError::RiskRejected | ApiError::IdempotencyKeyReused | ApiError::OrderVoided => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            ApiError::RequestInProgress => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            ApiError::DependencyUnavailable { .. }
            | ApiError::DatabaseUnavailable(_)
            | ApiError::Overloaded
            | ApiError::DeadlineExceeded => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::ClientGone => StatusCode::from_u16(499).expect("499 is a valid status code"),
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        // Causes are logged once, here, with their chain; the client only sees the code.
        match self {
            ApiError::Internal(cause) => tracing::error!(error = ?cause, "internal error"),
            ApiError::DependencyUnavailable { dependency, cause } => {
                tracing::debug!(%dependency, error = ?cause, "dependency unavailable")
            }
            ApiError::DatabaseUnavailable(cause) => {
                tracing::debug!(error = ?cause, "database unavailable")
            }
            _ => {}
        }
        let mut response = HttpResponse::build(self.status_code());
        response.content_type("application/json");
        if let Some(seconds) = self.retry_after() {
            response.insert_header(("Retry-After", seconds));
        }
        response.body(self.body())
    }
}
