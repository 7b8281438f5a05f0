//! The order document (what `POST /orders` creates and `GET /orders/{id}` returns) and the
//! stored outcome of a request, which a replay sends back byte for byte.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use chrono::{DateTime, SubsecRound, Utc};
use serde::{Deserialize, Serialize};

use crate::contract::{Customer, Item, ValidOrder};
use crate::deps::{PayResult, PayStatus, Recommendation};
use crate::error::ApiError;

pub const STATUS_CONFIRMED: &str = "CONFIRMED";

/// The order as returned to its seller. It carries the card's last four digits only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderDocument {
    pub id: String,
    pub reference_id: String,
    pub status: String,
    pub seller_id: String,
    pub amount: i64,
    pub installments: i64,
    pub payment: PaymentSummary,
    pub risk: RiskSummary,
    pub items: Vec<Item>,
    pub customer: Customer,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentSummary {
    pub method: String,
    /// The gateway's code for the charge.
    pub code: String,
    pub status: PayStatus,
    pub card_last4: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RiskSummary {
    pub recommendation: Recommendation,
}

impl OrderDocument {
    /// Builds the document for an approved and charged order, with a fresh id.
    pub fn confirmed(seller_id: &str, order: &ValidOrder, pay: &PayResult) -> Self {
        let req = &order.request;
        let method = &req.payment.payment_method;
        OrderDocument {
            id: new_order_id(),
            reference_id: req.reference_id.clone(),
            status: STATUS_CONFIRMED.to_owned(),
            seller_id: seller_id.to_owned(),
            amount: req.payment.amount,
            installments: method.installments,
            payment: PaymentSummary {
                method: method.kind.clone(),
                code: pay.code.clone(),
                status: pay.status,
                card_last4: method.card.last4().to_owned(),
            },
            risk: RiskSummary {
                recommendation: Recommendation::Approve,
            },
            items: req.items.clone(),
            customer: req.customer.clone(),
            // PostgreSQL keeps microseconds: the stored row and the document agree exactly.
            created_at: Utc::now().trunc_subsecs(6),
        }
    }

    pub fn location(&self) -> String {
        format!("/orders/{}", self.id)
    }
}

/// `ORDER_` followed by an upper-case UUID v4.
pub fn new_order_id() -> String {
    format!("ORDER_{}", uuid::Uuid::new_v4().hyphenated()).to_uppercase()
}

/// A finished request's answer: stored with the idempotency key when it is a completed outcome
/// (201, 402, 422 `risk_rejected`), and sent again unchanged on a replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: u16,
    pub body: String,
    pub order_id: Option<String>,
    pub replayed: bool,
}

impl Outcome {
    pub fn created(doc: &OrderDocument) -> Self {
        Outcome {
            status: 201,
            body: serde_json::to_string(doc).expect("an order document always serialises"),
            order_id: Some(doc.id.clone()),
            replayed: false,
        }
    }

    /// A business refusal that completes the request (and is replayed as such).
    pub fn refused(error: &ApiError) -> Self {
        use actix_web::ResponseError;
        Outcome {
            status: error.status_code().as_u16(),
            body: error.body(),
            order_id: None,
            replayed: false,
        }
    }

    pub fn replay(status: u16, body: String, order_id: Option<String>) -> Self {
        Outcome {
            status,
            body,
            order_id,
            replayed: true,
        }
    }

    pub fn into_response(self) -> HttpResponse {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = HttpResponse::build(status);
        response.content_type("application/json");
        if let (Some(id), 201) = (&self.order_id, self.status) {
            response.insert_header(("Location", format!("/orders/{id}")));
        }
        if self.replayed {
            response.insert_header(("Idempotent-Replayed", "true"));
        }
        response.body(self.body)
    }
}

/// Whether a payment answer completes the order or refuses it.
pub fn declined(pay: &PayResult) -> bool {
    pay.status == PayStatus::Declined
}

/// An enum's JSON spelling without the quotes (`Recommendation::Approve` → `APPROVE`), as stored.
pub fn plain<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}
