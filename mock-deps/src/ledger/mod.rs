//! The payment gateway's memory: one stored answer per `Idempotency-Key`, and what became of it.
//!
//! The lab's central correctness claim is "no order is charged twice", so the ledger counts
//! charges per key and derives `keys_charged_more_than_once` from those counts: a regression in
//! the de-duplication below would show up as a non-zero figure instead of being assumed away.
//!
//! The order APIs recover from a charge whose answer they lost by asking the gateway about the
//! key (`lookup`) and, when they cannot keep the order, voiding it (`void`). A void of a key the
//! gateway never saw leaves a tombstone, like an acquirer's technical cancel: the pay request it
//! raced with (still in flight, or retried later) is refused instead of charging a cancelled
//! order. A voided key never charges again.
//!
//! Only the amount, the answer and its code are kept; card data never reaches this module.

mod report;

use std::collections::HashMap;
use std::sync::Mutex;

use uuid::Uuid;

pub use report::{KeyCharges, Ledger};
pub(crate) use report::{Payment, Status};

/// The gateway's verdict on a new charge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Success,
    Declined,
}

impl Verdict {
    pub fn message(self) -> &'static str {
        self.status().as_str()
    }

    fn status(self) -> Status {
        match self {
            Verdict::Success => Status::Success,
            Verdict::Declined => Status::Declined,
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
    /// The key was voided (before or after its payment): refused, no charge.
    Voided,
}

/// One key. An enum rather than optional fields so a tombstone cannot carry an answer.
#[derive(Debug)]
enum Entry {
    Answered {
        amount: i64,
        code: Uuid,
        verdict: Verdict,
        /// Successful charges created under this key; anything above 1 is a de-dup bug.
        charges: u32,
        voided: bool,
    },
    /// Voided before any pay request reached the ledger.
    Tombstone,
}

impl Entry {
    fn payment(&self) -> Payment {
        match *self {
            Entry::Answered {
                amount,
                code,
                verdict,
                charges,
                voided,
            } => Payment {
                status: if voided {
                    Status::Voided
                } else {
                    verdict.status()
                },
                amount,
                code: Some(code),
                charged: charges > 0,
            },
            Entry::Tombstone => Payment {
                status: Status::Voided,
                amount: 0,
                code: None,
                charged: false,
            },
        }
    }

    fn detail(&self) -> KeyCharges {
        match *self {
            Entry::Answered {
                amount,
                verdict,
                charges,
                voided,
                ..
            } => KeyCharges {
                charges,
                amount,
                message: verdict.message().to_owned(),
                voided,
            },
            Entry::Tombstone => KeyCharges {
                charges: 0,
                amount: 0,
                message: Status::Voided.as_str().to_owned(),
                voided: true,
            },
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    pay_requests: u64,
    charges: u64,
    declined: u64,
    replayed_requests: u64,
    conflicts: u64,
    voids: u64,
    tombstones: u64,
    void_requests: u64,
    voided_pay_refusals: u64,
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
        match inner.entries.get(key) {
            // Checked before the amount: a tombstone's amount (0) means nothing to compare.
            Some(Entry::Tombstone | Entry::Answered { voided: true, .. }) => {
                inner.voided_pay_refusals += 1;
                return Outcome::Voided;
            }
            Some(&Entry::Answered {
                amount: stored_amount,
                code,
                verdict: stored,
                ..
            }) => {
                return if stored_amount == amount {
                    inner.replayed_requests += 1;
                    Outcome::Replay(code, stored)
                } else {
                    inner.conflicts += 1;
                    Outcome::Conflict
                };
            }
            None => {}
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
        let entry = Entry::Answered {
            amount,
            code,
            verdict,
            charges,
            voided: false,
        };
        inner.entries.insert(key.to_owned(), entry);
        Outcome::Fresh(code, verdict)
    }

    /// What the gateway knows about `key`; `None` if no pay request or void ever reached it.
    pub fn lookup(&self, key: &str) -> Option<Payment> {
        self.lock().entries.get(key).map(Entry::payment)
    }

    /// Voids `key` and returns where it stands afterwards (always `VOIDED`). Idempotent: a
    /// second void changes nothing but `void_requests`.
    pub fn void(&self, key: &str) -> Payment {
        let mut inner = self.lock();
        inner.void_requests += 1;
        let Inner {
            entries,
            voids,
            tombstones,
            ..
        } = &mut *inner;
        let entry = entries.entry(key.to_owned()).or_insert_with(|| {
            *tombstones += 1;
            Entry::Tombstone
        });
        if let Entry::Answered {
            charges, voided, ..
        } = entry
            && !*voided
        {
            *voided = true;
            // Only a charge gives money back; a voided decline just closes the key.
            if *charges > 0 {
                *voids += 1;
            }
        }
        entry.payment()
    }

    pub fn reset(&self) {
        *self.lock() = Inner::default();
    }

    /// O(keys): meant for the admin endpoint, not the hot path.
    pub fn snapshot(&self, detail: bool) -> Ledger {
        let inner = self.lock();
        let keys_charged_more_than_once = inner
            .entries
            .values()
            .filter(|e| matches!(e, Entry::Answered { charges, .. } if *charges > 1))
            .count() as u64;
        let charges_by_key = detail.then(|| {
            (inner.entries.iter())
                .map(|(key, e)| (key.clone(), e.detail()))
                .collect()
        });
        Ledger {
            charges: inner.charges,
            declined: inner.declined,
            // Tombstones never leave the map (only `reset` clears it), so this is exact.
            distinct_keys: inner.entries.len() as u64 - inner.tombstones,
            pay_requests: inner.pay_requests,
            replayed_requests: inner.replayed_requests,
            conflicts: inner.conflicts,
            keys_charged_more_than_once,
            voids: inner.voids,
            tombstones: inner.tombstones,
            void_requests: inner.void_requests,
            voided_pay_refusals: inner.voided_pay_refusals,
            charges_by_key,
        }
    }
}

#[cfg(test)]
mod tests;
