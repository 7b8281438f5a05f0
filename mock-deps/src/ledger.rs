//! The payment gateway's memory: one stored answer per `Idempotency-Key`.
//!
//! The lab's central correctness claim is "no order is charged twice", so the ledger counts
//! charges per key and derives `keys_charged_more_than_once` from those counts: a regression in
//! the de-duplication below would show up as a non-zero figure instead of being assumed away.
//! Only the amount, the answer and its code are kept; card data never reaches this module.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The gateway's verdict on a new charge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Success,
    Declined,
}

impl Verdict {
    pub fn message(self) -> &'static str {
        match self {
            Verdict::Success => "SUCCESS",
            Verdict::Declined => "DECLINED",
        }
    }
}

/// What a pay request gets from the ledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// First request with this key: the answer is new (a charge, when `Success`).
    Fresh(Uuid, Verdict),
    /// The key was seen with the same amount: the stored answer, no new charge.
    Replay(Uuid, Verdict),
    /// The key was seen with another amount.
    Conflict,
}

#[derive(Debug)]
struct Entry {
    amount: i64,
    code: Uuid,
    verdict: Verdict,
    /// Successful charges created under this key; anything above 1 is a de-dup bug.
    charges: u32,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    pay_requests: u64,
    charges: u64,
    declined: u64,
    replayed_requests: u64,
    conflicts: u64,
}

/// The ledger. The mutex is held only for a map lookup/insert, never across an await.
#[derive(Debug, Default)]
pub(crate) struct LedgerStore {
    inner: Mutex<Inner>,
}

impl LedgerStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave the map half-updated in a way that
        // matters to a mock; keep serving rather than poisoning every later request.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records a pay request that passed validation and fault injection.
    pub fn record(&self, key: &str, amount: i64, verdict: Verdict) -> Outcome {
        let mut inner = self.lock();
        inner.pay_requests += 1;
        if let Some(entry) = inner.entries.get(key) {
            let (same_amount, code, stored) = (entry.amount == amount, entry.code, entry.verdict);
            return if same_amount {
                inner.replayed_requests += 1;
                Outcome::Replay(code, stored)
            } else {
                inner.conflicts += 1;
                Outcome::Conflict
            };
        }
        // A v4 UUID from the thread-local RNG: no syscall per charge.
        let code = uuid::Builder::from_random_bytes(rand::random()).into_uuid();
        let charges = match verdict {
            Verdict::Success => {
                inner.charges += 1;
                1
            }
            Verdict::Declined => {
                inner.declined += 1;
                0
            }
        };
        let entry = Entry {
            amount,
            code,
            verdict,
            charges,
        };
        inner.entries.insert(key.to_owned(), entry);
        Outcome::Fresh(code, verdict)
    }

    pub fn reset(&self) {
        *self.lock() = Inner::default();
    }

    /// O(keys): meant for the admin endpoint, not the hot path.
    pub fn snapshot(&self, detail: bool) -> Ledger {
        let inner = self.lock();
        let keys_charged_more_than_once =
            inner.entries.values().filter(|e| e.charges > 1).count() as u64;
        let charges_by_key = detail.then(|| {
            inner
                .entries
                .iter()
                .map(|(key, e)| {
                    let charges = KeyCharges {
                        charges: e.charges,
                        amount: e.amount,
                        message: e.verdict.message().to_owned(),
                    };
                    (key.clone(), charges)
                })
                .collect()
        });
        Ledger {
            charges: inner.charges,
            declined: inner.declined,
            distinct_keys: inner.entries.len() as u64,
            pay_requests: inner.pay_requests,
            replayed_requests: inner.replayed_requests,
            conflicts: inner.conflicts,
            keys_charged_more_than_once,
            charges_by_key,
        }
    }
}

/// Snapshot served by `GET /admin/ledger`.
///
/// `pay_requests` counts the pay requests that reached the ledger (valid, not failed or hung by
/// injection); each of them is exactly one of: a new charge (`charges`), a new decline
/// (`declined`), a replay of a known key with the same amount (`replayed_requests`) or a
/// `conflicts` (known key, other amount).
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
    /// Only with `?detail=true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charges_by_key: Option<BTreeMap<String, KeyCharges>>,
}

/// One key of [`Ledger::charges_by_key`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyCharges {
    pub charges: u32,
    pub amount: i64,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_key_same_amount_replays_the_stored_answer() {
        let ledger = LedgerStore::default();
        let Outcome::Fresh(code, Verdict::Success) = ledger.record("k", 100, Verdict::Success)
        else {
            panic!("first request must be fresh");
        };
        // Even a different card verdict on replay returns the stored answer.
        assert_eq!(
            ledger.record("k", 100, Verdict::Declined),
            Outcome::Replay(code, Verdict::Success)
        );
        assert_eq!(ledger.record("k", 101, Verdict::Success), Outcome::Conflict);
        let snap = ledger.snapshot(true);
        assert_eq!(
            (
                snap.charges,
                snap.pay_requests,
                snap.replayed_requests,
                snap.conflicts
            ),
            (1, 3, 1, 1)
        );
        assert_eq!(snap.keys_charged_more_than_once, 0);
        assert_eq!(snap.charges_by_key.unwrap()["k"].charges, 1);
    }

    #[test]
    fn declines_are_stored_but_not_charged() {
        let ledger = LedgerStore::default();
        ledger.record("d", 5, Verdict::Declined);
        let snap = ledger.snapshot(false);
        assert_eq!((snap.charges, snap.declined, snap.distinct_keys), (0, 1, 1));
        assert!(snap.charges_by_key.is_none());
        ledger.reset();
        assert_eq!(ledger.snapshot(false), Ledger::default());
    }
}
