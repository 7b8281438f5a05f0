//! The `POST /orders` request: its shape (the original experiment's snake_case body) and the rules
//! that make it valid. Parsing and validation happen once, here, for both APIs.

use crate::domain::error::ApiError;
use crate::domain::request_hash::RequestHashKey;
use chrono::{Datelike, NaiveDate};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Largest accepted request body, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Most items one order may carry.
pub const MAX_ITEMS: usize = 100;
/// Largest quantity of one item (keeps `quantity × value` far from overflowing).
pub const MAX_QUANTITY: i64 = 100_000;
/// Largest amount, in cents, of one order or one item value (one billion currency units).
pub const MAX_AMOUNT: i64 = 100_000_000_000;

// The `#[schema]` bounds below are the rules `validate` checks, written where the OpenAPI
// document can read them (utoipa takes literals only; openapi's tests compare them with the
// constants above). Lengths count characters; every string also refuses control characters.

/// The body of `POST /orders`. Unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CreateOrderRequest {
    /// The seller's key for this order: a retry with the same key and body is answered from the
    /// stored outcome, the same key with another body is refused.
    #[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
    pub reference_id: String,
    pub payment: Payment,
    #[schema(min_items = 1, max_items = 100)]
    pub items: Vec<Item>,
    pub customer: Customer,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Payment {
    /// Integer cents; must equal Σ quantity × value.
    #[schema(minimum = 1, maximum = 100_000_000_000_i64)]
    pub amount: i64,
    pub payment_method: PaymentMethod,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PaymentMethod {
    /// `CREDIT_CARD` or `DEBIT_CARD`.
    #[serde(rename = "type")]
    #[schema(pattern = "^(CREDIT_CARD|DEBIT_CARD)$")]
    pub kind: String,
    /// 1-12 for a credit card, 1 for a debit card.
    #[schema(minimum = 1, maximum = 12)]
    pub installments: i64,
    pub card: Card,
}

/// The card's number and CVV are never returned, logged or stored.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Card {
    /// 13-19 digits, Luhn-valid.
    #[schema(pattern = "^[0-9]{13,19}$")]
    pub number: String,
    #[schema(min_length = 1, max_length = 100)]
    pub holder: String,
    #[schema(pattern = "^[0-9]{3,4}$")]
    pub cvv: String,
    /// `MM-YYYY`, not before the current month.
    #[schema(pattern = "^(0[1-9]|1[0-2])-[0-9]{4}$")]
    pub expiration_date: String,
}

/// Never print a card number or CVV, not even in a debug log.
impl std::fmt::Debug for Card {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Card")
            .field("last4", &self.last4())
            .field("holder", &self.holder)
            .finish_non_exhaustive()
    }
}

impl Card {
    /// The last four digits: the only part of the number that is stored or returned.
    pub fn last4(&self) -> &str {
        let n = self.number.len();
        &self.number[n.saturating_sub(4)..]
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Item {
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    #[schema(minimum = 1, maximum = 100_000)]
    pub quantity: i64,
    /// Integer cents, per unit.
    #[schema(minimum = 1, maximum = 100_000_000_000_i64)]
    pub value: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Customer {
    #[schema(min_length = 1, max_length = 200)]
    pub full_name: String,
    /// 11 or 14 digits.
    #[schema(pattern = "^([0-9]{11}|[0-9]{14})$")]
    pub tax_id: String,
    pub address: Address,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Address {
    #[schema(min_length = 1, max_length = 200)]
    pub street: String,
    #[schema(min_length = 1, max_length = 20)]
    pub number: String,
    #[schema(min_length = 1, max_length = 50)]
    pub state: String,
    #[schema(min_length = 1, max_length = 100)]
    pub city: String,
    #[schema(min_length = 1, max_length = 100)]
    pub locality: String,
    #[schema(min_length = 1, max_length = 20)]
    pub zip_code: String,
    #[serde(default)]
    #[schema(max_length = 200)]
    pub complement: Option<String>,
}

/// A request that passed every rule, with the hash that identifies it for idempotency.
#[derive(Debug, Clone)]
pub struct ValidOrder {
    pub request: CreateOrderRequest,
    /// Keyed hash ([`RequestHashKey`]) of the canonical form: the parsed request re-serialised
    /// with the fields in declaration order, unknown fields dropped, the CVV left out. Two bodies
    /// that parse to the same request (whitespace, field order, extra fields) are the same request.
    pub request_hash: String,
}

impl ValidOrder {
    /// Whether a key's stored hash is this request's, hashed under `key`: the current canonical
    /// form, or the JSON form that keys reserved before it hold (computed only when the first
    /// does not match).
    pub fn is_same_request(&self, stored_hash: &str, key: &RequestHashKey) -> bool {
        stored_hash == self.request_hash || stored_hash == self.json_hash(key)
    }

    fn json_hash(&self, key: &RequestHashKey) -> String {
        without_cvv(&mut self.request.clone(), |r| key.json_hash(r))
    }

    /// The one time-dependent rule: the card must not have expired by `today`. Checked after a
    /// replay could answer, so that a retry after the card's expiry month still gets its stored
    /// outcome.
    pub fn check_expiry(&self, today: NaiveDate) -> Result<(), ApiError> {
        check_expiration(
            &self.request.payment.payment_method.card.expiration_date,
            today,
        )
    }
}

impl CreateOrderRequest {
    /// Parses a JSON body. A syntax error, a missing field or a wrong type is a 400 naming the
    /// field; the message never repeats a value that was sent (it could be card digits).
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        // The path of a failure costs a wrapper around every value parsed; only a failed body
        // pays it, parsed a second time.
        serde_json::from_slice(body).map_err(|first| {
            let de = &mut serde_json::Deserializer::from_slice(body);
            match serde_path_to_error::deserialize::<_, Self>(de) {
                Err(e) => {
                    ApiError::invalid(field_name(e.path()), redact_values(&e.inner().to_string()))
                }
                Ok(_) => ApiError::invalid("body", redact_values(&first.to_string())),
            }
        })
    }

    /// Checks every rule of the contract except the card's expiry (see
    /// [`ValidOrder::check_expiry`]) and computes the request's keyed hash.
    pub fn validate(mut self, key: &RequestHashKey) -> Result<ValidOrder, ApiError> {
        check_reference_id(&self.reference_id)?;
        self.payment.validate()?;
        check_items(&self.items, self.payment.amount)?;
        self.customer.validate()?;
        let request_hash = without_cvv(&mut self, |r| key.hash_canonical(r));
        Ok(ValidOrder {
            request_hash,
            request: self,
        })
    }
}

/// `hash` of the request's canonical form, which leaves the CVV out: nothing stored is derived
/// from it (`request_hash`'s module doc). The CVV is put back after.
fn without_cvv(
    request: &mut CreateOrderRequest,
    hash: impl FnOnce(&CreateOrderRequest) -> String,
) -> String {
    let cvv = std::mem::take(&mut request.payment.payment_method.card.cvv);
    let hashed = hash(request);
    request.payment.payment_method.card.cvv = cvv;
    hashed
}

/// serde's messages quote the offending value (`invalid type: string "4539…", expected i64`,
/// ``integer `123` ``): any quoted segment holding a digit is replaced by `…`, so neither a card
/// number nor a CVV sent in the wrong place or type comes back. Field and type names, which hold
/// no digits, are kept; so are line and column numbers, which are not quoted.
pub fn redact_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find(['"', '`']) {
        // Both quote characters are ASCII and close themselves: "…" and `…`.
        let close = char::from(rest.as_bytes()[start]);
        out.push_str(&rest[..=start]);
        let inner = &rest[start + 1..];
        let Some(end) = inner.find(close) else {
            // An unterminated quote: keep nothing after it that could be a value.
            out.push('…');
            return out;
        };
        let segment = &inner[..end];
        out.push_str(if segment.bytes().any(|b| b.is_ascii_digit()) {
            "…"
        } else {
            segment
        });
        out.push(close);
        rest = &inner[end + close.len_utf8()..];
    }
    out.push_str(rest);
    out
}

/// The `field` of a parse error: the path as serde_path_to_error writes it (`payment.amount`,
/// `items[1]`), `body` for the whole body. A key the client made up is named only if it holds no
/// digit: the path can end inside an unknown key, and a card number sent as a key would otherwise
/// come back in the 400. Such a key (or enum variant) is written `…`, as [`redact_values`] writes a value.
fn field_name(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut field = String::new();
    for segment in path {
        if !field.is_empty() && !matches!(segment, Segment::Seq { .. }) {
            field.push('.');
        }
        match segment {
            Segment::Map { key: name } | Segment::Enum { variant: name }
                if name.bytes().any(|b| b.is_ascii_digit()) =>
            {
                field.push('…')
            }
            other => field.push_str(&other.to_string()),
        }
    }
    if field.is_empty() {
        field.push_str("body");
    }
    field
}

fn check_reference_id(id: &str) -> Result<(), ApiError> {
    let ok = (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    ok.then_some(()).ok_or_else(|| {
        ApiError::invalid("reference_id", "must be 1-64 characters of A-Z a-z 0-9 _ -")
    })
}

impl Payment {
    fn validate(&self) -> Result<(), ApiError> {
        if !(1..=MAX_AMOUNT).contains(&self.amount) {
            return Err(ApiError::invalid(
                "payment.amount",
                format!("must be between 1 and {MAX_AMOUNT} cents"),
            ));
        }
        let method = &self.payment_method;
        let max_installments = match method.kind.as_str() {
            "CREDIT_CARD" => 12,
            "DEBIT_CARD" => 1,
            _ => {
                return Err(ApiError::invalid(
                    "payment.payment_method.type",
                    "must be CREDIT_CARD or DEBIT_CARD",
                ));
            }
        };
        if !(1..=max_installments).contains(&method.installments) {
            return Err(ApiError::invalid(
                "payment.payment_method.installments",
                format!(
                    "must be between 1 and {max_installments} for {}",
                    method.kind
                ),
            ));
        }
        let card = &method.card;
        if !(13..=19).contains(&card.number.len()) || !all_digits(&card.number) {
            return Err(ApiError::invalid(
                "payment.payment_method.card.number",
                "must be 13-19 digits",
            ));
        }
        if !luhn_valid(&card.number) {
            return Err(ApiError::invalid(
                "payment.payment_method.card.number",
                "fails the Luhn check",
            ));
        }
        check_text("payment.payment_method.card.holder", &card.holder, 1, 100)?;
        if !(3..=4).contains(&card.cvv.len()) || !all_digits(&card.cvv) {
            return Err(ApiError::invalid(
                "payment.payment_method.card.cvv",
                "must be 3 or 4 digits",
            ));
        }
        // The format now; whether it has passed, in `ValidOrder::check_expiry`.
        check_expiration(&card.expiration_date, NaiveDate::MIN)
    }
}

fn check_expiration(value: &str, today: NaiveDate) -> Result<(), ApiError> {
    const FIELD: &str = "payment.payment_method.card.expiration_date";
    let parsed = value.split_once('-').and_then(|(mm, yyyy)| {
        let ok = mm.len() == 2 && yyyy.len() == 4 && all_digits(mm) && all_digits(yyyy);
        ok.then(|| (mm.parse::<u32>().ok(), yyyy.parse::<i32>().ok()))
    });
    let Some((Some(month @ 1..=12), Some(year))) = parsed else {
        return Err(ApiError::invalid(FIELD, "must be MM-YYYY"));
    };
    // A card is valid until the last day of its expiration month.
    if (year, month) < (today.year(), today.month()) {
        return Err(ApiError::invalid(FIELD, "the card has expired"));
    }
    Ok(())
}

fn check_items(items: &[Item], amount: i64) -> Result<(), ApiError> {
    if items.is_empty() || items.len() > MAX_ITEMS {
        return Err(ApiError::invalid(
            "items",
            format!("must hold 1-{MAX_ITEMS} items"),
        ));
    }
    let mut total: i64 = 0;
    for (i, item) in items.iter().enumerate() {
        check_text(&format!("items[{i}].name"), &item.name, 1, 200)?;
        if !(1..=MAX_QUANTITY).contains(&item.quantity) {
            return Err(ApiError::invalid(
                format!("items[{i}].quantity"),
                format!("must be between 1 and {MAX_QUANTITY}"),
            ));
        }
        if !(1..=MAX_AMOUNT).contains(&item.value) {
            return Err(ApiError::invalid(
                format!("items[{i}].value"),
                format!("must be between 1 and {MAX_AMOUNT} cents"),
            ));
        }
        // Both factors are bounded above, so neither the product nor the sum can overflow i64.
        total += item.quantity * item.value;
    }
    if total != amount {
        return Err(ApiError::invalid(
            "payment.amount",
            format!("must equal the sum of quantity x value of the items ({total})"),
        ));
    }
    Ok(())
}

impl Customer {
    fn validate(&self) -> Result<(), ApiError> {
        check_text("customer.full_name", &self.full_name, 1, 200)?;
        if !matches!(self.tax_id.len(), 11 | 14) || !all_digits(&self.tax_id) {
            return Err(ApiError::invalid(
                "customer.tax_id",
                "must be 11 or 14 digits",
            ));
        }
        let a = &self.address;
        check_text("customer.address.street", &a.street, 1, 200)?;
        check_text("customer.address.number", &a.number, 1, 20)?;
        check_text("customer.address.state", &a.state, 1, 50)?;
        check_text("customer.address.city", &a.city, 1, 100)?;
        check_text("customer.address.locality", &a.locality, 1, 100)?;
        check_text("customer.address.zip_code", &a.zip_code, 1, 20)?;
        if let Some(complement) = &a.complement {
            check_text("customer.address.complement", complement, 0, 200)?;
        }
        Ok(())
    }
}

/// A string of `min..=max` characters with no control characters, and not blank when required.
fn check_text(field: &str, value: &str, min: usize, max: usize) -> Result<(), ApiError> {
    let chars = value.chars().count();
    if chars < min || chars > max || (min > 0 && value.trim().is_empty()) {
        return Err(ApiError::invalid(
            field,
            format!("must be {min}-{max} characters and not blank"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            field,
            "must not contain control characters",
        ));
    }
    Ok(())
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// The Luhn checksum used by card numbers; `s` must be all ASCII digits.
pub fn luhn_valid(s: &str) -> bool {
    let sum: u32 = s
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            if i % 2 == 1 {
                let doubled = d * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

#[cfg(test)]
mod tests;
