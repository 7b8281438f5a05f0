//! The OpenAPI 3.1 document of the order API, derived from the contract's own types (utoipa's
//! `ToSchema` on the request, the order document, the error body and its [`ErrorCode`] enum) and
//! served, as one string built once, by both APIs at `GET /openapi.json`.
//!
//! Both APIs implement one contract, so the operations are declared once, here, on the
//! documentation items below: utoipa reads a `#[utoipa::path]` off a function, and the real
//! handlers are two (one per API) behind one route table ([`crate::plumbing::server::order_routes`]). The
//! statuses and codes each response lists are checked against [`ErrorCode`] by this module's
//! tests; the document against both running APIs and `docs/openapi.json` by testkit's
//! `contract_openapi.rs`. Regenerate the committed copy with
//! `cargo run -p order-core --example openapi > docs/openapi.json`.

use std::sync::LazyLock;

use actix_web::HttpResponse;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::domain::contract::{
    Address, Card, CreateOrderRequest, Customer, Item, Payment, PaymentMethod,
};
use crate::domain::deps::{PayStatus, Recommendation};
use crate::domain::error::{Dependency, ErrorBody, ErrorCode};
use crate::domain::order::{OrderDocument, PaymentSummary, RiskSummary};
use crate::plumbing::probe::{Probe, ProbeStatus};

/// The name of the security scheme every order operation requires (its `security` attribute
/// takes a literal only, and spells it out).
pub const SELLER_TOKEN: &str = "seller_token";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "order API",
        description = "One order-creation contract, implemented twice (blocking-api and \
            reactive-api) and served identically by both. Amounts are integer cents. Every error \
            body is `ErrorBody`, whose `error` is one of the stable codes of `ErrorCode`."
    ),
    paths(create_order, get_order, health, ready, metrics, openapi_json),
    components(schemas(
        CreateOrderRequest,
        Payment,
        PaymentMethod,
        Card,
        Item,
        Customer,
        Address,
        OrderDocument,
        PaymentSummary,
        RiskSummary,
        PayStatus,
        Recommendation,
        ErrorBody,
        ErrorCode,
        Dependency,
        Probe,
        ProbeStatus
    )),
    modifiers(&SellerTokenScheme)
)]
struct Document;

/// The seller's token: OpenAPI ignores a header *parameter* named `Authorization`, so it is a
/// security scheme, an API key in that header.
struct SellerTokenScheme;

impl Modify for SellerTokenScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            SELLER_TOKEN,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "Authorization",
                "The seller's token, raw or as `Bearer <token>`; the seller service resolves it.",
            ))),
        );
    }
}

/// The document, as built from the code.
pub fn document() -> utoipa::openapi::OpenApi {
    Document::openapi()
}

/// The document as served and as committed in `docs/openapi.json`: pretty JSON and a final
/// newline, built once per process.
pub fn json() -> &'static str {
    static JSON: LazyLock<String> = LazyLock::new(|| {
        let mut text = document()
            .to_pretty_json()
            .expect("the OpenAPI document always serialises");
        text.push('\n');
        text
    });
    &JSON
}

/// `GET /openapi.json`.
pub async fn serve() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(json())
}

// The operations. Each item below exists only to carry its `#[utoipa::path]`; the handlers are
// the APIs' own. A response's description names, in backticks, every code it can carry: the
// tests read them back.

/// Create an order: authenticate, reserve the idempotency key (seller + `reference_id`), risk
/// analysis, charge, store. A retry of the same request is answered from the stored outcome.
#[utoipa::path(
    post,
    path = "/orders",
    operation_id = "create_order",
    request_body(content = CreateOrderRequest, content_type = "application/json",
        description = "At most 64 KiB; unknown fields are ignored."),
    security(("seller_token" = [])),
    responses(
        (status = 201, description = "The order was made (or, with `Idempotent-Replayed`, had been).",
            body = OrderDocument, headers(
                ("Location" = String, description = "`/orders/{id}` of the order."),
                ("Idempotent-Replayed" = String, description = "`true` on a replay of a completed request.")
            )),
        (status = 400, description = "`invalid_request`: malformed JSON or a field breaking a rule (`field` names it). \
            A body the schema accepts can still break a rule no schema can state: a card whose \
            `expiration_date` month has passed (`field` `payment.payment_method.card.expiration_date`, \
            judged after a replay could answer, so a retry of a completed order is still answered), \
            a card `number` failing the Luhn check, an `amount` other than Σ `quantity` × `value` \
            (`field` `payment.amount`), more than 1 installment on a `DEBIT_CARD`, a string holding a \
            control character or nothing but blanks.",
            body = ErrorBody),
        (status = 401, description = "`unauthorized`: missing seller token, or one the seller service does \
            not know (a well-formed token of no seller is refused only after that call).", body = ErrorBody),
        (status = 402, description = "`payment_declined`: nothing was charged; replayed to a retry.",
            body = ErrorBody, headers(
                ("Idempotent-Replayed" = String, description = "`true` on a replay.")
            )),
        (status = 405, description = "`method_not_allowed`: `/orders` with a method other than POST.",
            body = ErrorBody, headers(
                ("Allow" = String, description = "`POST`: the one method this path answers.")
            )),
        (status = 408, description = "`request_timeout`: the body did not arrive within `CLIENT_BODY_TIMEOUT_MS`.",
            body = ErrorBody),
        (status = 409, description = "`request_in_progress`: a request with this `reference_id` is still being processed.",
            body = ErrorBody, headers(
                ("Retry-After" = String, description = "Seconds to wait before retrying.")
            )),
        (status = 413, description = "`payload_too_large`: the body is over 64 KiB.", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`: the body is not `application/json`.",
            body = ErrorBody),
        (status = 422, description = "`risk_rejected`: the risk analysis disapproved (replayed); \
            `idempotency_key_reused`: this `reference_id` was already used by this seller with \
            another request (a body that parses to a different order; whitespace, field order and unknown \
            fields do not count); \
            `order_voided`: charged, but the order could not be made, and the charge was voided (replayed).",
            body = ErrorBody, headers(
                ("Idempotent-Replayed" = String, description = "`true` on a replay (`risk_rejected`, `order_voided`).")
            )),
        (status = 499, description = "`client_closed_request`: the client left before the key was reserved; \
            nothing was reserved. Never seen by the client (it is gone); counted in the metrics.",
            body = ErrorBody),
        (status = 500, description = "`internal_error`: a bug.", body = ErrorBody),
        (status = 503, description = "`dependency_unavailable` (`dependency` names it): a dependency failed, \
            timed out or is unreachable; `database_unavailable`: no database connection in time, or a \
            statement past its timeout; `overloaded`: more than `MAX_IN_FLIGHT` orders for longer than \
            `QUEUE_TIMEOUT_MS`, refused before any work; `deadline_exceeded`: `REQUEST_DEADLINE_MS` \
            passed before the charge, the key is freed; `too_many_connections`: the request came on a \
            connection above `MAX_CONNECTIONS`, which is closed after this answer (any path); \
            `idempotency_key_newer_release`: the key's request hash is of a form only a newer release \
            computes, so this one cannot tell a retry from another request (a replica of that release can).",
            body = ErrorBody, headers(
                ("Retry-After" = String, description = "Seconds to wait before retrying; a retry may go on at once.")
            ))
    )
)]
#[allow(dead_code)]
fn create_order() {}

/// The order, to the seller who made it.
#[utoipa::path(
    get,
    path = "/orders/{id}",
    operation_id = "get_order",
    params(("id" = String, Path, description = "The order's id: `ORDER_` and an upper-case UUID.")),
    security(("seller_token" = [])),
    responses(
        (status = 200, description = "The order, as `POST /orders` created it.", body = OrderDocument),
        (status = 401, description = "`unauthorized`: missing or unknown seller token.", body = ErrorBody),
        (status = 404, description = "`not_found`: no such order for this seller, or an id no order can \
            have (more than 64 bytes, or a byte outside `[A-Za-z0-9_-]`), refused before any work (also any unknown path).",
            body = ErrorBody),
        (status = 405, description = "`method_not_allowed`: `/orders/{id}` with a method other than GET.",
            body = ErrorBody, headers(
                ("Allow" = String, description = "`GET`: the one method this path answers.")
            )),
        (status = 500, description = "`internal_error`: a bug.", body = ErrorBody),
        (status = 503, description = "`dependency_unavailable`: the seller service failed; \
            `database_unavailable`: no database connection in time; `overloaded`: more reads than \
            their places (`READ_THREADS` / `READ_IN_FLIGHT`) and queue (`READ_QUEUE`) for longer than \
            `QUEUE_TIMEOUT_MS`; `too_many_connections`: the \
            request came on a connection above `MAX_CONNECTIONS`, which is closed after this answer.",
            body = ErrorBody, headers(
                ("Retry-After" = String, description = "Seconds to wait before retrying.")
            ))
    )
)]
#[allow(dead_code)]
fn get_order() {}

/// Liveness: 200 while the process runs.
#[utoipa::path(
    get,
    path = "/health",
    operation_id = "health",
    responses(
        (status = 200, description = "`status` is `ok`.", body = Probe),
        (status = 405, description = "`method_not_allowed`: `/health` with a method other than GET.",
            body = ErrorBody, headers(
                ("Allow" = String, description = "`GET`: the one method this path answers.")
            ))
    )
)]
#[allow(dead_code)]
fn health() {}

/// Readiness: whether this process can serve — 200 until SIGTERM, then 503. Answered from the
/// process's own state within milliseconds; the database is not asked (its state is in `/metrics`).
#[utoipa::path(
    get,
    path = "/ready",
    operation_id = "ready",
    responses(
        (status = 200, description = "`status` is `ready`.", body = Probe),
        (status = 503, description = "`status` `draining` with `shutting_down` once the server is stopping.",
            body = Probe),
        (status = 405, description = "`method_not_allowed`: `/ready` with a method other than GET.",
            body = ErrorBody, headers(
                ("Allow" = String, description = "`GET`: the one method this path answers.")
            ))
    )
)]
#[allow(dead_code)]
fn ready() {}

/// Prometheus metrics; the names are the same in both APIs (docs/lab-interfaces.md).
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "metrics",
    responses(
        (status = 200, description = "Prometheus text exposition format.", body = String,
            content_type = "text/plain; version=0.0.4"),
        (status = 405, description = "`method_not_allowed`: `/metrics` with a method other than GET.",
            body = ErrorBody, headers(
                ("Allow" = String, description = "`GET`: the one method this path answers.")
            ))
    )
)]
#[allow(dead_code)]
fn metrics() {}

/// This document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "openapi",
    responses(
        (status = 200, description = "The OpenAPI document, byte for byte the same from both APIs.",
            body = Object, content_type = "application/json"),
        (status = 405, description = "`method_not_allowed`: `/openapi.json` with a method other than GET.",
            body = ErrorBody, headers(
                ("Allow" = String, description = "`GET`: the one method this path answers.")
            ))
    )
)]
#[allow(dead_code)]
fn openapi_json() {}

#[cfg(test)]
mod tests;
