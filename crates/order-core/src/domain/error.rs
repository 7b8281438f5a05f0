//! The one error type of the order API, its stable machine codes and its HTTP statuses.
//!
//! Every failure a client can see maps to one variant; the body is always
//! `{"error": "<code>", "detail": "<human text>"}` (plus `field` or `dependency` where useful).
//! Internal causes are logged once, with their chain, and never leaked to the client.

use actix_web::http::{Method, StatusCode, header};
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;
use utoipa::ToSchema;

/// One of the three services the order flow calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
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

/// The stable machine codes, the `error` of every error body. Each has one status
/// ([`ErrorCode::status`]); every [`ApiError`] has one code ([`ApiError::error_code`]), and
/// `shutting_down` is `/ready`'s while the server drains. Iterable (`ErrorCode::iter()`), so that
/// the OpenAPI document's tests can check every code against it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    ToSchema,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ErrorCode {
    InvalidRequest,
    Unauthorized,
    RiskRejected,
    PaymentDeclined,
    IdempotencyKeyReused,
    IdempotencyKeyNewerRelease,
    RequestInProgress,
    PayloadTooLarge,
    UnsupportedMediaType,
    RequestTimeout,
    DependencyUnavailable,
    DatabaseUnavailable,
    Overloaded,
    TooManyConnections,
    DeadlineExceeded,
    ClientClosedRequest,
    OrderVoided,
    NotFound,
    MethodNotAllowed,
    ShuttingDown,
    InternalError,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The status every response carrying this code has.
    pub fn status(self) -> StatusCode {
        use ErrorCode::*;
        match self {
            InvalidRequest => StatusCode::BAD_REQUEST,
            Unauthorized => StatusCode::UNAUTHORIZED,
            PaymentDeclined => StatusCode::PAYMENT_REQUIRED,
            RiskRejected | IdempotencyKeyReused | OrderVoided => StatusCode::UNPROCESSABLE_ENTITY,
            RequestInProgress => StatusCode::CONFLICT,
            PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            DependencyUnavailable
            | DatabaseUnavailable
            | IdempotencyKeyNewerRelease
            | Overloaded
            | TooManyConnections
            | DeadlineExceeded
            | ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            ClientClosedRequest => StatusCode::from_u16(499).expect("499 is a valid status code"),
            NotFound => StatusCode::NOT_FOUND,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            InternalError => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Seconds a client should wait before retrying (the `Retry-After` header), for the codes
    /// of an error response that invite a retry. `shutting_down` is `/ready`'s answer to a load
    /// balancer, which has its own probe period: it carries none.
    pub fn retry_after(self) -> Option<&'static str> {
        use ErrorCode::*;
        match self {
            RequestInProgress
            | IdempotencyKeyNewerRelease
            | DatabaseUnavailable
            | DependencyUnavailable
            | Overloaded
            | TooManyConnections
            | DeadlineExceeded => Some("1"),
            _ => None,
        }
    }
}

impl std::fmt::Display for ErrorCode {
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
    /// The key's hash is of a form only a newer release computes (`request_hash::stored_form`):
    /// this release cannot tell whether the request is the same; a replica of that release can.
    #[error("this reference_id was recorded by a newer release; retry")]
    IdempotencyKeyNewerRelease,
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
    /// The request came on a connection above `MAX_CONNECTIONS`; the connection is closed.
    #[error("the service holds as many connections as it may; retry on a new connection later")]
    TooManyConnections,
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
    /// A known path asked with a method it does not route; `allow` is the one it does, sent as
    /// the `Allow` header (RFC 9110 §15.5.6 requires it on every 405).
    #[error("this path answers {allow} only")]
    MethodNotAllowed { allow: Method },
    /// A bug: anything that should not happen. The only source of a 500.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

/// The body of every error response: `{"error": "<code>", "detail": "<human text>"}`, plus
/// `field` for a 400 and `dependency` for a dependency's failure.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody<'a> {
    /// The stable machine code clients may branch on.
    pub error: ErrorCode,
    /// Human-readable; never repeats a value that was sent.
    pub detail: String,
    /// The request field that failed validation (`invalid_request` only), e.g. `payment.amount`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<&'a str>,
    /// The service that failed (`dependency_unavailable` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependency: Option<Dependency>,
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
        self.error_code().as_str()
    }

    /// The code of this error, which also fixes its status and `Retry-After`.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            ApiError::InvalidRequest { .. } => ErrorCode::InvalidRequest,
            ApiError::Unauthorized => ErrorCode::Unauthorized,
            ApiError::RiskRejected => ErrorCode::RiskRejected,
            ApiError::PaymentDeclined => ErrorCode::PaymentDeclined,
            ApiError::IdempotencyKeyReused => ErrorCode::IdempotencyKeyReused,
            ApiError::IdempotencyKeyNewerRelease => ErrorCode::IdempotencyKeyNewerRelease,
            ApiError::RequestInProgress => ErrorCode::RequestInProgress,
            ApiError::PayloadTooLarge { .. } => ErrorCode::PayloadTooLarge,
            ApiError::UnsupportedMediaType => ErrorCode::UnsupportedMediaType,
            ApiError::RequestTimeout => ErrorCode::RequestTimeout,
            ApiError::DependencyUnavailable { .. } => ErrorCode::DependencyUnavailable,
            ApiError::DatabaseUnavailable(_) => ErrorCode::DatabaseUnavailable,
            ApiError::Overloaded => ErrorCode::Overloaded,
            ApiError::TooManyConnections => ErrorCode::TooManyConnections,
            ApiError::DeadlineExceeded => ErrorCode::DeadlineExceeded,
            ApiError::ClientGone => ErrorCode::ClientClosedRequest,
            ApiError::OrderVoided => ErrorCode::OrderVoided,
            ApiError::NotFound => ErrorCode::NotFound,
            ApiError::MethodNotAllowed { .. } => ErrorCode::MethodNotAllowed,
            ApiError::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// The error's JSON body, as sent (and, for completed outcomes, stored and replayed).
    pub fn body(&self) -> String {
        let body = ErrorBody {
            error: self.error_code(),
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
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.error_code().status()
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
        if let Some(seconds) = self.error_code().retry_after() {
            response.insert_header(("Retry-After", seconds));
        }
        if let ApiError::MethodNotAllowed { allow } = self {
            response.insert_header((header::ALLOW, allow.as_str()));
        }
        response.body(self.body())
    }
}
