//! The order document (what `POST /orders` creates and `GET /orders/{id}` returns) and the
//! stored outcome of a request, which a replay sends back byte for byte.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use chrono::{DateTime, SubsecRound, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::contract::{Customer, Item, ValidOrder};
use crate::domain::deps::{PayResult, PayStatus, Recommendation};
use crate::domain::error::ApiError;

pub const STATUS_CONFIRMED: &str = "CONFIRMED";

/// An order placed: its document and the gateway idempotency key of its charge, what the persist
/// step writes beside the key's outcome.
#[derive(Debug, Clone, Copy)]
pub struct Placed<'a> {
    pub doc: &'a OrderDocument,
    pub payment_key: &'a str,
}

/// The order as returned to its seller. It carries the card's last four digits only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PaymentSummary {
    pub method: String,
    /// The gateway's code for the charge.
    pub code: String,
    pub status: PayStatus,
    pub card_last4: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RiskSummary {
    pub recommendation: Recommendation,
}

/// What recovery needs to finish an order whose charge may have been made, stored with the key
/// (state `CHARGING`) before the gateway is called: the order as it will be, less the gateway's
/// answer. It holds the card's last four digits only, never the number or the CVV.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingOrder {
    /// Fixed before the charge, so that a resumed or recovered attempt creates the same order.
    pub id: String,
    pub reference_id: String,
    pub seller_id: String,
    pub amount: i64,
    pub installments: i64,
    pub method: String,
    pub card_last4: String,
    pub items: Vec<Item>,
    pub customer: Customer,
}

impl PendingOrder {
    /// The order an approved request will create, with a fresh id.
    pub fn new(seller_id: &str, order: &ValidOrder) -> Self {
        let req = &order.request;
        let method = &req.payment.payment_method;
        PendingOrder {
            id: new_order_id(),
            reference_id: req.reference_id.clone(),
            seller_id: seller_id.to_owned(),
            amount: req.payment.amount,
            installments: method.installments,
            method: method.kind.clone(),
            card_last4: method.card.last4().to_owned(),
            items: req.items.clone(),
            customer: req.customer.clone(),
        }
    }

    /// The stored form (JSON).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a pending order always serialises")
    }

    /// Reads a stored pending order, strictly: a field this release does not know (written by a
    /// newer one) or one it misses is an error, never dropped or defaulted — the order made from
    /// it would silently lose what the newer release meant it to hold. Read back and written
    /// again, the order must be the same JSON.
    pub fn from_json(text: &str) -> Result<Self, ApiError> {
        let unreadable = |e: anyhow::Error| ApiError::Internal(e.context("stored pending order"));
        let stored: serde_json::Value =
            serde_json::from_str(text).map_err(|e| unreadable(e.into()))?;
        let pending: PendingOrder =
            serde_json::from_value(stored.clone()).map_err(|e| unreadable(e.into()))?;
        let known = serde_json::to_value(&pending).expect("a pending order always serialises");
        if known != stored {
            return Err(unreadable(anyhow::anyhow!(
                "it holds fields this release does not know"
            )));
        }
        Ok(pending)
    }

    /// The confirmed order, once the gateway has charged it.
    pub fn confirm(&self, pay: &PayResult) -> OrderDocument {
        OrderDocument {
            id: self.id.clone(),
            reference_id: self.reference_id.clone(),
            status: STATUS_CONFIRMED.to_owned(),
            seller_id: self.seller_id.clone(),
            amount: self.amount,
            installments: self.installments,
            payment: PaymentSummary {
                method: self.method.clone(),
                code: pay.code.clone(),
                status: pay.status,
                card_last4: self.card_last4.clone(),
            },
            risk: RiskSummary {
                recommendation: Recommendation::Approve,
            },
            items: self.items.clone(),
            customer: self.customer.clone(),
            // PostgreSQL keeps microseconds: the stored row and the document agree exactly.
            created_at: Utc::now().trunc_subsecs(6),
        }
    }
}

impl OrderDocument {
    pub fn location(&self) -> String {
        format!("/orders/{}", self.id)
    }
}

/// `ORDER_` followed by an upper-case UUID v4.
pub fn new_order_id() -> String {
    format!("ORDER_{}", uuid::Uuid::new_v4().hyphenated()).to_uppercase()
}

/// A charge on its way to becoming an order: the gateway's idempotency key and the pending order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charging {
    pub gateway_key: String,
    pub pending: PendingOrder,
}

impl Charging {
    /// A new charge for attempt `attempt` of the key row `key_id`. The attempt number makes the
    /// gateway key unique per charge of one row: after recovery found no charge and voided the key
    /// at the gateway (so a late request under it can never charge), a later attempt charges under
    /// a new key. The row's id makes it unique across rows, restored databases included
    /// ([`crate::domain::deps::payment_idempotency_key`]).
    pub fn new(seller_id: &str, order: &ValidOrder, key_id: &str, attempt: i32) -> Self {
        let reference_id = &order.request.reference_id;
        Charging {
            gateway_key: crate::domain::deps::payment_idempotency_key(
                seller_id,
                reference_id,
                key_id,
                attempt,
            ),
            pending: PendingOrder::new(seller_id, order),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::contract::CreateOrderRequest;
    use crate::domain::request_hash::RequestHashKey;

    fn order() -> ValidOrder {
        let body = serde_json::json!({
            "reference_id": "ref-1",
            "payment": {"amount": 100, "payment_method": {"type": "DEBIT_CARD", "installments": 1,
                "card": {"number": "4111111111111111", "holder": "ANA", "cvv": "123",
                         "expiration_date": "11-2099"}}},
            "items": [{"name": "Pen", "quantity": 1, "value": 100}],
            "customer": {"full_name": "Ana", "tax_id": "12345678901", "address": {"street": "A",
                "number": "1", "state": "SP", "city": "X", "locality": "Y", "zip_code": "1"}}
        });
        CreateOrderRequest::parse(&serde_json::to_vec(&body).unwrap())
            .unwrap()
            .validate(&RequestHashKey::new(b"k"))
            .unwrap()
    }

    #[test]
    fn pending_order_keeps_no_card_data_and_confirms_with_its_id() {
        let key_id = "7d3c0b1e-0000-4000-8000-000000000001";
        let charging = Charging::new("acme", &order(), key_id, 3);
        assert_eq!(charging.gateway_key, format!("acme:ref-1:{key_id}:3"));
        let stored = charging.pending.to_json();
        assert!(
            !stored.contains("4111111111111111") && !stored.contains("cvv"),
            "{stored}"
        );
        let back = PendingOrder::from_json(&stored).unwrap();
        assert_eq!(back, charging.pending);
        let pay = PayResult {
            code: "c-1".into(),
            status: PayStatus::Success,
        };
        let doc = back.confirm(&pay);
        assert_eq!(
            (doc.id.as_str(), doc.amount),
            (charging.pending.id.as_str(), 100)
        );
        assert_eq!(doc.payment.card_last4, "1111");
        assert!(PendingOrder::from_json("{").is_err());
        let mut newer: serde_json::Value = serde_json::from_str(&stored).unwrap();
        newer["customer"]["address"]["floor"] = "3".into();
        assert!(PendingOrder::from_json(&newer.to_string()).is_err());
        let mut older: serde_json::Value = serde_json::from_str(&stored).unwrap();
        older.as_object_mut().unwrap().remove("installments");
        assert!(PendingOrder::from_json(&older.to_string()).is_err());
    }
}
