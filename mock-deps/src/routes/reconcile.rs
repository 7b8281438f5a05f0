//! The gateway's reconciliation API: what happened to the charge under a key, and voiding it.
//!
//! The order APIs call these from their recovery loop when a charge's answer was lost (timeout,
//! disconnect, a 500 after the charge). Both are answered at once, without injected latency or
//! faults: they are how the lab's correctness is restored, not dependencies being measured, and a
//! flaky reconciliation path would only make the recovery tests nondeterministic. The exception is
//! the whole gateway made unreachable (`MockConfig::gateway_unreachable`): then both hang, like
//! the pay endpoint, and recovery has to wait the outage out. Lookups are
//! still counted in `/admin/stats`, voids in `/admin/ledger`.
//!
//! The key comes from the path; actix percent-decodes it (`%2F` included) when extracting
//! `web::Path<String>`, so any key a client can send as a header can be looked up.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use serde::Serialize;

use crate::fault;
use crate::json;
use crate::ledger::Payment;
use crate::state::State;
use crate::stats::Counters;

/// The body of both endpoints. `code` is empty for a tombstone (no payment was ever answered).
#[derive(Serialize)]
struct PaymentBody<'a> {
    idempotency_key: &'a str,
    status: &'static str,
    amount: i64,
    code: String,
    charged: bool,
}

fn answer(key: &str, payment: Payment) -> HttpResponse {
    let body = PaymentBody {
        idempotency_key: key,
        status: payment.status.as_str(),
        amount: payment.amount,
        code: payment.code.map(|c| c.to_string()).unwrap_or_default(),
        charged: payment.charged,
    };
    // serde_json escapes the key: unlike the pay answer's code, it is arbitrary client text.
    HttpResponse::Ok().json(body)
}

/// `GET /gateway/payments/{idempotency_key}`: 200 with the payment, or 404 `not_found`.
pub(crate) async fn payment_status(
    key: web::Path<String>,
    state: web::Data<State>,
) -> HttpResponse {
    if state.config().gateway_unreachable {
        return fault::unreachable().await;
    }
    let counters = &state.stats.payment;
    Counters::bump(&counters.lookups);
    match state.ledger.lookup(&key) {
        Some(payment) => answer(&key, payment),
        None => {
            Counters::bump(&counters.lookups_not_found);
            json::fixed(StatusCode::NOT_FOUND, r#"{"error":"not_found"}"#)
        }
    }
}

/// `POST /gateway/payments/{idempotency_key}/void`: 200 with the payment after the void. Voiding
/// an unknown key leaves a tombstone that refuses any later pay under it.
pub(crate) async fn payment_void(key: web::Path<String>, state: web::Data<State>) -> HttpResponse {
    if state.config().gateway_unreachable {
        return fault::unreachable().await;
    }
    let payment = state.ledger.void(&key);
    tracing::debug!(key = %key, ?payment, "gateway void");
    answer(&key, payment)
}
