//! reactive-api: the order API on async actix-web handlers, tokio, reqwest and sqlx — one of the
//! lab's two products under test, beside `blocking-api`; the load lab under `loadtest/` measures
//! it, nothing of the lab is in it.
//!
//! Every request is a future on one of `HTTP_WORKERS` event loops: while it waits for a
//! dependency or a database connection it costs a few kilobytes of state and no thread. Its
//! ceiling is therefore CPU, memory and the database pool, not a thread count — which is what the
//! lab measures against `blocking-api`. The contract, validation, SQL and metrics come from
//! `order-core`. This crate's own modules are twins of blocking-api's files of the same names,
//! each written to read step for step like its twin and differing by the execution model, the
//! database driver (sqlx on deadpool here, diesel on r2d2 there), or both: [`service`],
//! [`clients`], [`db`] (with its files by job), [`connections`], [`batch`], [`persist`],
//! [`events`], [`outbox`], [`recovery`], [`retention`], [`routes`], [`startup`], [`state`].
//! docs/design.md's table of twin files says what differs in each.
//!
//! `clippy.toml` forbids blocking calls (`reqwest::blocking`, `std::thread::sleep`, `web::block`…)
//! so the async model cannot quietly borrow the blocking one's tricks.

pub mod batch;
pub mod clients;
pub mod connections;
pub mod db;
pub mod events;
pub mod outbox;
pub mod persist;
pub mod recovery;
pub mod retention;
pub mod routes;
pub mod service;
pub mod startup;
pub mod state;

pub use startup::{Application, Settings};

/// The global allocator this build links (`main.rs`), reported on `/metrics` as
/// `api_allocator_info` so the lab names it beside the other API's.
pub const ALLOCATOR: &str = if cfg!(feature = "system-allocator") {
    "system"
} else {
    "mimalloc"
};
