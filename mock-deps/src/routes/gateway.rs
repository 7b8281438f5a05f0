//! The payment gateway's `POST /gateway/pay`: the one mocked call that changes state.
//!
//! A real gateway finishes a charge it has started whether or not the caller is still listening;
//! that is why the order APIs need a recovery path at all. actix drops a handler future when its
//! client goes away (the server refuses half-closed connections so that hangs end with their
//! clients), so the work that leads to a charge (injected latency, fault draw, ledger record)
//! runs in a detached task whose result the handler awaits. Dropping the handler drops only the
//! wait. An injected hang is the exception on purpose: a hung payment was never processed, it
//! charges nothing and ends with its client, as it always did.

use std::borrow::Cow;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use crate::bad_answer;
use crate::config::EndpointConfig;
use crate::fault::{self, Fate};
use crate::json;
use crate::ledger::{Outcome, Verdict};
use crate::state::State;
use crate::stats::Counters;

#[derive(Deserialize)]
struct PayRequest<'a> {
    amount: i64,
    #[allow(dead_code, reason = "required by the contract, not used by the rules")]
    installments: i64,
    #[serde(borrow)]
    payment_method: PaymentMethod<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum MethodType {
    CreditCard,
    DebitCard,
}

#[derive(Deserialize)]
struct PaymentMethod<'a> {
    #[serde(rename = "type")]
    #[allow(dead_code, reason = "validated by parsing, not used by the rules")]
    kind: MethodType,
    #[serde(borrow)]
    card: Card<'a>,
}

/// Card data. Deliberately not `Debug` nor `Serialize`: it cannot end up in a log line or in the
/// ledger by accident. It lives only as long as the request body.
#[derive(Deserialize)]
#[allow(
    dead_code,
    reason = "required by the contract; only the cvv drives a rule"
)]
struct Card<'a> {
    #[serde(borrow)]
    number: Cow<'a, str>,
    #[serde(borrow)]
    holder: Cow<'a, str>,
    #[serde(borrow)]
    cvv: Cow<'a, str>,
    #[serde(borrow)]
    expiration_date: Cow<'a, str>,
}

/// Keeps one pay request in `in_flight` while its handler or its detached charge runs. It owns a
/// handle to the state (not a borrow, like [`Counters::start`]'s guard) so that it can move into
/// the task, and back out to the handler when the task ends in a hang.
struct PayInFlight(web::Data<State>);

impl PayInFlight {
    fn start(state: &web::Data<State>) -> Self {
        state.stats.payment.enter();
        Self(state.clone())
    }
}

impl Drop for PayInFlight {
    fn drop(&mut self) {
        self.0.stats.payment.leave();
    }
}

/// How the detached part of a payment ended.
enum Processed {
    Answer(HttpResponse),
    /// Nothing was charged; the handler holds the request for the hang, cancellably.
    Hung(PayInFlight),
}

pub(crate) async fn gateway_pay(
    req: HttpRequest,
    body: web::Bytes,
    state: web::Data<State>,
) -> HttpResponse {
    if state.config().gateway_unreachable {
        return fault::unreachable().await;
    }
    let in_flight = PayInFlight::start(&state);
    let counters = &state.stats.payment;
    let key = match req.headers().get("idempotency-key").map(|v| v.to_str()) {
        Some(Ok(key)) if !key.trim().is_empty() => key.to_owned(),
        _ => {
            Counters::bump(&counters.bad_requests);
            return json::fixed(
                StatusCode::BAD_REQUEST,
                r#"{"error":"missing_idempotency_key"}"#,
            );
        }
    };
    // Only the amount and the verdict leave this scope: the card stays in `body`, dropped here.
    let (amount, verdict) = match serde_json::from_slice::<PayRequest>(&body) {
        Ok(pay) if pay.payment_method.card.cvv == "000" => (pay.amount, Verdict::Declined),
        Ok(pay) => (pay.amount, Verdict::Success),
        Err(_) => {
            Counters::bump(&counters.bad_requests);
            return json::bad_request();
        }
    };
    drop(body); // see `deps::risk_validate`
    let cfg = state.config();
    let charge = process(state.clone(), key, amount, verdict, cfg.payment, in_flight);
    // `rt::spawn` runs the task on this worker's own runtime (no `Send` needed, no thread hop);
    // the returned handle detaches the task when dropped instead of cancelling it.
    match actix_web::rt::spawn(charge).await {
        Ok(Processed::Answer(response)) => response,
        Ok(Processed::Hung(in_flight)) => {
            let response = fault::hang(cfg.hang_ms).await;
            drop(in_flight);
            response
        }
        // Only a panic in the task, or a worker shutting down under it, lands here.
        Err(e) => {
            tracing::error!(error = %e, "detached payment task failed");
            json::fixed(
                StatusCode::INTERNAL_SERVER_ERROR,
                r#"{"error":"internal_error"}"#,
            )
        }
    }
}

/// The part of a payment that runs to its end once started: latency, fault draw, ledger record.
async fn process(
    state: web::Data<State>,
    key: String,
    amount: i64,
    verdict: Verdict,
    cfg: EndpointConfig,
    in_flight: PayInFlight,
) -> Processed {
    let counters = &state.stats.payment;
    let fate = fault::delay_and_draw(&cfg, counters).await;
    match fate {
        // An injected failure or hang returns here, before the ledger: it must not charge.
        Fate::Fail => return Processed::Answer(json::service_unavailable()),
        Fate::Hang => return Processed::Hung(in_flight),
        Fate::Proceed | Fate::ChargedFail | Fate::BadAnswer => {}
    }
    let outcome = state.ledger.record(&key, amount, verdict);
    tracing::debug!(key, amount, ?outcome, ?fate, "gateway pay");
    if fate == Fate::ChargedFail {
        // The ledger has the request (a charge, unless the key was known): only the answer fails.
        return Processed::Answer(json::fixed(
            StatusCode::INTERNAL_SERVER_ERROR,
            r#"{"error":"injected_failure_after_charge"}"#,
        ));
    }
    let answer = answer(outcome, counters);
    Processed::Answer(match fate {
        // The charge is in the ledger: only the answer misbehaves.
        Fate::BadAnswer => bad_answer::spoil(cfg.answer_fault, answer),
        _ => answer,
    })
}

/// The gateway's answer to a pay request the ledger has recorded as `outcome`.
fn answer(outcome: Outcome, counters: &Counters) -> HttpResponse {
    let (code, verdict) = match outcome {
        Outcome::Fresh(code, verdict) | Outcome::Replay(code, verdict) => (code, verdict),
        Outcome::Conflict => {
            Counters::bump(&counters.conflicts);
            let body = r#"{"error":"idempotency_conflict"}"#;
            return json::fixed(StatusCode::CONFLICT, body);
        }
        Outcome::Voided => {
            Counters::bump(&counters.voided_refusals);
            let body = r#"{"error":"payment_voided"}"#;
            return json::fixed(StatusCode::CONFLICT, body);
        }
    };
    Counters::bump(&counters.ok);
    if verdict == Verdict::Declined {
        Counters::bump(&counters.negative);
    }
    let message = verdict.message();
    json::owned(
        StatusCode::OK,
        format!(r#"{{"code":"{code}","message":"{message}"}}"#),
    )
}
