//! The money parts of [`RunResults`](super::RunResults): what the gateway charged against what
//! the database holds (every run), and how retrying clients ended (runs with `--retry-for-s`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The gateway's ledger (`GET /admin/ledger?detail=true`) against `orders.payment_key`, counted
/// once the API is idle and no idempotency key is `CHARGING` any more. A *live* charge is a key
/// with `charges > 0` that was not voided; every live charge must have exactly one order with the
/// same amount, and every order exactly one live charge.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MoneyRecord {
    /// Every charge the gateway made (voided ones included): the ledger's `charges`.
    pub charges: u64,
    /// Successful charges given back: the ledger's `voids`.
    pub voids: u64,
    /// Rows in `orders`.
    pub orders: u64,
    /// Live charges whose key no order carries: a customer charged for nothing.
    pub charges_without_order: u64,
    /// Orders whose `payment_key` has no live charge (none, voided, declined or a tombstone).
    pub orders_without_charge: u64,
    /// Keys charged more than once.
    pub double_charges: u64,
    /// Orders whose amount differs from their key's charged amount.
    pub amount_mismatches: u64,
    /// Idempotency keys still `CHARGING` when counted (0 unless the wait ran out). Absent (0) from
    /// a faults `scenario.json` written before its rows carried the whole record.
    #[serde(default)]
    pub charging_left: u64,
    /// Seconds spent waiting for the `CHARGING` keys to settle before counting (absent, 0, as
    /// above).
    #[serde(default)]
    pub settle_wait_s: f64,
    /// Up to a few offending keys per kind (`charge without order: <key>`, …), for the log.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

impl MoneyRecord {
    /// `true` when every charge ended as one order (or one void) and every order has its charge.
    pub fn balanced(&self) -> bool {
        self.charges_without_order == 0
            && self.orders_without_charge == 0
            && self.double_charges == 0
            && self.amount_mismatches == 0
    }
}

/// Logical clients that retry (`--retry-for-s`): each arrival is one client with one
/// `reference_id` and one body, re-sent until a final answer or the give-up time.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RetryRecord {
    /// A client stops retrying once this many seconds have passed since its first attempt.
    pub give_up_after_s: f64,
    /// First backoff and its cap, seconds (doubling in between, ±50 % jitter; never below the
    /// answer's `Retry-After`).
    pub backoff_s: (f64, f64),
    /// Logical clients (arrivals sent).
    pub clients: u64,
    /// HTTP requests sent, retries included.
    pub attempts: u64,
    /// Attempts by outcome kind (`201`, `201_replayed`, error codes, `timeout`, …).
    pub attempts_by_outcome: BTreeMap<String, u64>,
    /// Most attempts one client needed.
    pub max_attempts: u64,
    /// Clients whose last answer was a 201 (fresh or replayed).
    pub ended_created: u64,
    /// Clients whose last answer was a final 4xx, by error code.
    pub ended_terminal_4xx: BTreeMap<String, u64>,
    /// Clients that were still failing when their time ran out.
    pub ended_gave_up: u64,
    /// For each injected fault (see `RunResults::timeline`): how long until the next 201 answer.
    #[serde(default)]
    pub recovery: Vec<FaultRecovery>,
    /// When each 201 answer came (seconds since the start of the run), sorted. Kept in memory to
    /// compute `recovery`; not saved.
    #[serde(skip)]
    pub created_at_s: Vec<f64>,
}

impl RetryRecord {
    /// Clients that ended with a final 4xx.
    pub fn ended_terminal(&self) -> u64 {
        self.ended_terminal_4xx.values().sum()
    }

    /// Seconds from `t` to the first 201 answered after it, if any.
    pub fn first_created_after(&self, t: f64) -> Option<f64> {
        let i = self.created_at_s.partition_point(|&c| c <= t);
        self.created_at_s.get(i).map(|c| c - t)
    }
}

/// One fault and the time to the first 201 after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultRecovery {
    /// The fault's event label (`kill -9 of the API`, …).
    pub fault: String,
    /// When it happened, seconds since the start of the run.
    pub t: f64,
    /// Seconds until the first 201 answered after it; `None` = none came.
    pub first_201_after_s: Option<f64>,
}
