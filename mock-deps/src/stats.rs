//! Per-endpoint request counters: lock-free atomics bumped on the hot path, read by `/admin/stats`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::{Deserialize, Serialize};

/// Counters of one endpoint. `negative` is the endpoint's "no" answer with a 200/401 status:
/// unauthorized (seller), DISAPPROVE (risk), DECLINED (payment). The payment-only ones stay 0
/// elsewhere; one struct for all three keeps the hot path free of per-endpoint branching.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub requests: AtomicU64,
    pub ok: AtomicU64,
    pub negative: AtomicU64,
    pub conflicts: AtomicU64,
    pub bad_requests: AtomicU64,
    pub injected_errors: AtomicU64,
    pub hangs: AtomicU64,
    pub in_flight: AtomicU64,
    /// Payment only: charged, then answered 500.
    pub injected_charged_errors: AtomicU64,
    /// Payment only: 409 `payment_voided`.
    pub voided_refusals: AtomicU64,
    /// Payment only: `GET /gateway/payments/{key}`, and the part of them answered 404.
    pub lookups: AtomicU64,
    pub lookups_not_found: AtomicU64,
}

impl Counters {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Relaxed);
    }

    /// Counts the request and marks it in flight until the guard drops: when the handler
    /// returns, or when actix drops the handler because the client went away.
    pub fn start(&self) -> InFlight<'_> {
        self.enter();
        InFlight(&self.in_flight)
    }

    /// The counting half of [`Counters::start`], for a guard that must own its way back to the
    /// counters (to move into a detached task); it calls [`Counters::leave`] when dropped.
    pub fn enter(&self) {
        self.requests.fetch_add(1, Relaxed);
        self.in_flight.fetch_add(1, Relaxed);
    }

    pub fn leave(&self) {
        self.in_flight.fetch_sub(1, Relaxed);
    }

    /// Zeroes everything but `in_flight`, which describes requests that still exist.
    fn reset(&self) {
        for c in [
            &self.requests,
            &self.ok,
            &self.negative,
            &self.conflicts,
            &self.bad_requests,
            &self.injected_errors,
            &self.hangs,
            &self.injected_charged_errors,
            &self.voided_refusals,
            &self.lookups,
            &self.lookups_not_found,
        ] {
            c.store(0, Relaxed);
        }
    }
}

/// Decrements `in_flight` on drop.
pub(crate) struct InFlight<'a>(&'a AtomicU64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// Counters of all three endpoints.
#[derive(Debug, Default)]
pub(crate) struct StatsStore {
    pub seller: Counters,
    pub risk: Counters,
    pub payment: Counters,
    /// Requests of any path that arrived over HTTP/2 (cleartext, prior knowledge).
    pub http2_requests: AtomicU64,
}

impl StatsStore {
    pub fn reset(&self) {
        self.seller.reset();
        self.risk.reset();
        self.payment.reset();
        self.http2_requests.store(0, Relaxed);
    }

    pub fn snapshot(&self) -> Stats {
        let (s, r, p) = (&self.seller, &self.risk, &self.payment);
        Stats {
            seller: SellerStats {
                requests: s.requests.load(Relaxed),
                ok: s.ok.load(Relaxed),
                unauthorized: s.negative.load(Relaxed),
                injected_errors: s.injected_errors.load(Relaxed),
                hangs: s.hangs.load(Relaxed),
                in_flight: s.in_flight.load(Relaxed),
            },
            risk: RiskStats {
                requests: r.requests.load(Relaxed),
                ok: r.ok.load(Relaxed),
                disapproved: r.negative.load(Relaxed),
                bad_requests: r.bad_requests.load(Relaxed),
                injected_errors: r.injected_errors.load(Relaxed),
                hangs: r.hangs.load(Relaxed),
                in_flight: r.in_flight.load(Relaxed),
            },
            payment: PaymentStats {
                requests: p.requests.load(Relaxed),
                ok: p.ok.load(Relaxed),
                declined: p.negative.load(Relaxed),
                conflicts: p.conflicts.load(Relaxed),
                bad_requests: p.bad_requests.load(Relaxed),
                injected_errors: p.injected_errors.load(Relaxed),
                hangs: p.hangs.load(Relaxed),
                in_flight: p.in_flight.load(Relaxed),
                injected_charged_errors: p.injected_charged_errors.load(Relaxed),
                voided_refusals: p.voided_refusals.load(Relaxed),
                lookups: p.lookups.load(Relaxed),
                lookups_not_found: p.lookups_not_found.load(Relaxed),
            },
            http2_requests: self.http2_requests.load(Relaxed),
        }
    }
}

/// Snapshot served by `GET /admin/stats`. Counters are read one by one, not atomically together.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    pub seller: SellerStats,
    pub risk: RiskStats,
    pub payment: PaymentStats,
    /// Requests of any path (admin included) that arrived over HTTP/2 — the APIs' `DEPS_HTTP=h2c`.
    #[serde(default)]
    pub http2_requests: u64,
}

/// `GET /sellers/authorization`: `ok` (200) + `unauthorized` (401) + injected errors + hangs
/// account for every finished request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SellerStats {
    pub requests: u64,
    pub ok: u64,
    pub unauthorized: u64,
    pub injected_errors: u64,
    pub hangs: u64,
    pub in_flight: u64,
}

/// `POST /risk-analysis/validate`: `ok` counts every 200, APPROVE or DISAPPROVE;
/// `disapproved` is the DISAPPROVE part of it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RiskStats {
    pub requests: u64,
    pub ok: u64,
    pub disapproved: u64,
    pub bad_requests: u64,
    pub injected_errors: u64,
    pub hangs: u64,
    pub in_flight: u64,
}

/// `POST /gateway/pay`: `ok` counts every 200, SUCCESS or DECLINED, replays included;
/// `declined` is the DECLINED part of it; `conflicts` are the 409 `idempotency_conflict`s and
/// `voided_refusals` the 409 `payment_voided`s; `injected_charged_errors` are the 500s that
/// charged. A pay request stays `in_flight` until its charge is done, even when its client has
/// gone (the charge runs detached); a hung one until its client leaves or the hang ends.
///
/// `lookups` counts the reconciliation API's `GET /gateway/payments/{key}` (not in `requests`),
/// `lookups_not_found` its 404s; voids are counted by the ledger (`void_requests`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentStats {
    pub requests: u64,
    pub ok: u64,
    pub declined: u64,
    pub conflicts: u64,
    pub bad_requests: u64,
    pub injected_errors: u64,
    pub hangs: u64,
    pub in_flight: u64,
    #[serde(default)]
    pub injected_charged_errors: u64,
    #[serde(default)]
    pub voided_refusals: u64,
    #[serde(default)]
    pub lookups: u64,
    #[serde(default)]
    pub lookups_not_found: u64,
}
