//! What the ledger shows to the outside: the admin snapshot and the reconciliation view of one key.
//!
//! Kept apart from the store so the wire shapes can be read (and diffed by the APIs' authors)
//! without the bookkeeping around them. Fields added after the first version carry
//! `#[serde(default)]`: a consumer built against an older mock still parses a newer answer, and
//! the other way round.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Snapshot served by `GET /admin/ledger`.
///
/// `pay_requests` counts the pay requests that reached the ledger (valid, not failed or hung by
/// injection); each of them is exactly one of: a new charge (`charges`), a new decline
/// (`declined`), a replay of a known key with the same amount (`replayed_requests`), a
/// `conflicts` (known key, other amount) or a `voided_pay_refusals` (the key was voided).
///
/// `charges` counts every charge ever made, voided ones included; `voids` is the part of them
/// given back. `distinct_keys` counts the keys pay requests created, not tombstones.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    pub charges: u64,
    pub declined: u64,
    pub distinct_keys: u64,
    pub pay_requests: u64,
    pub replayed_requests: u64,
    pub conflicts: u64,
    /// Must stay 0.
    pub keys_charged_more_than_once: u64,
    /// Successful charges voided (money given back); each counted once however often voided.
    #[serde(default)]
    pub voids: u64,
    /// Keys voided before any pay request reached the ledger.
    #[serde(default)]
    pub tombstones: u64,
    /// Every `POST /gateway/payments/{key}/void`, repeats included.
    #[serde(default)]
    pub void_requests: u64,
    /// Pay requests answered 409 `payment_voided`: none of them charged.
    #[serde(default)]
    pub voided_pay_refusals: u64,
    /// Only with `?detail=true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charges_by_key: Option<BTreeMap<String, KeyCharges>>,
}

/// One key of [`Ledger::charges_by_key`]. `message` is the answer the pay request got (SUCCESS or
/// DECLINED, kept after a void so the detail still says what was voided); a tombstone, which never
/// answered a payment, says `VOIDED` with 0 charges and amount 0.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyCharges {
    pub charges: u32,
    pub amount: i64,
    pub message: String,
    #[serde(default)]
    pub voided: bool,
}

impl KeyCharges {
    /// Money taken and not given back.
    pub fn live(&self) -> bool {
        self.charges > 0 && !self.voided
    }
}

/// Where a payment stands, as `GET /gateway/payments/{key}` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Success,
    Declined,
    Voided,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "SUCCESS",
            Status::Declined => "DECLINED",
            Status::Voided => "VOIDED",
        }
    }
}

/// The reconciliation view of one key: what a caller needs to decide whether to keep an order,
/// release its key or void the charge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Payment {
    pub status: Status,
    pub amount: i64,
    /// `None` for a tombstone: no payment was ever answered under this key.
    pub code: Option<Uuid>,
    /// Money was taken at some point: SUCCESS, or VOIDED after a SUCCESS.
    pub charged: bool,
}
