//! reactive-api: the order API on async actix-web handlers, tokio, reqwest and sqlx.
//!
//! Every request is a future on one of `HTTP_WORKERS` event loops: while it waits for a
//! dependency or a database connection it costs a few kilobytes of state and no thread. Its
//! ceiling is therefore CPU, memory and the database pool, not a thread count — which is what the
//! lab measures against `blocking-api`. The contract, validation, SQL and metrics come from
//! `order-core`; only [`service`], [`db`], [`clients`], the [`recovery`] loop and the order
//! event ([`events`]) are this crate's own, and they are written to read step for step like blocking-api's.
//!
//! `clippy.toml` forbids blocking calls (`reqwest::blocking`, `std::thread::sleep`, `web::block`…)
//! so the async model cannot quietly borrow the blocking one's tricks.

pub mod batch;
pub mod clients;
pub mod connections;
pub mod db;
pub mod events;
pub mod outbox;
pub mod recovery;
pub mod routes;
pub mod service;
pub mod startup;
pub mod state;

pub use startup::{Application, Settings};
