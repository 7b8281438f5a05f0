//! # mock-deps
//!
//! The lab compares a blocking and an async implementation of the same order API. Both call three
//! remote dependencies on every `POST /orders`: a seller token check, a risk analysis and a payment
//! gateway, each with a fixed delay (200 ms, 1000 ms, 1000 ms in the original experiment). This
//! crate plays those dependencies, for the lab (`loadtest/`), the contract suite and anyone running
//! the APIs by hand: it sits beside the two APIs, outside the lab's crates.
//!
//! In the experiment being reproduced, the mock server (a heavy JVM tool) died under load before
//! the apps did. So this mock is built to be the last thing standing: delays are tokio timers (a
//! waiting request is a small future, not a thread), fixed answers are static strings, requests
//! log at `debug` only, and no lock is held across an await. The `bench` example measures that
//! claim (`docs/mock-deps-bench.md`).
//!
//! It also keeps the evidence for the lab's correctness claims: the gateway stores one answer per
//! `Idempotency-Key` and `/admin/ledger` reports `keys_charged_more_than_once`, computed from
//! per-key charge counts. Latency, jitter, injected errors (503) and hangs are set per endpoint at
//! start ([`Settings`]) and changed live (`PUT /admin/config`, [`MockDeps::set_config`]).
//!
//! The gateway behaves like a real one where the APIs' charge-safety depends on it: a charge it
//! has started completes even when its client disconnects or times out, it can charge and then
//! answer 500 ([`EndpointConfig::charged_error_rate`]) or answer badly — endless, oversized,
//! dripped, cut or dropped ([`BadAnswer`], which the seller and risk endpoints can do too) — and
//! it offers a reconciliation API
//! (`GET /gateway/payments/{key}`, `POST /gateway/payments/{key}/void`) so that the APIs'
//! recovery can find out what happened to a charge and give it back; the ledger counts voids.
//!
//! The admin surface's paths and wire types are public in [`admin`]: the load lab steers the
//! mocks and reads the ledger through them.
//!
//! Layers: [`config`] (behaviour knobs) → `fault` (latency and failure injection) → `routes`
//! (the wire contract) → `server` ([`MockDeps`] in-process, [`run`] for the binary).

pub mod admin;
mod bad_answer;
pub mod config;
mod fault;
mod json;
mod ledger;
mod routes;
mod server;
mod settings;
mod state;
mod stats;

pub use config::{BadAnswer, ConfigPatch, EndpointConfig, EndpointPatch, MockConfig};
pub use ledger::{KeyCharges, Ledger};
pub use server::{MockDeps, run};
pub use settings::Settings;
pub use stats::{PaymentStats, RiskStats, SellerStats, Stats};
