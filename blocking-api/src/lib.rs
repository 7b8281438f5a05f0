//! blocking-api: the order API as thread-per-request — one of the lab's two products under test,
//! beside `reactive-api`; the load lab under `loadtest/` measures it, nothing of the lab is in it.
//!
//! actix-web accepts connections on `HTTP_WORKERS` event loops, then hands each order request,
//! whole, to a bounded pool of `BLOCKING_THREADS` threads (`web::block`), where it runs as plain
//! sequential code: ureq for the dependencies (each call's I/O on the request's own thread, see
//! [`clients`]), diesel on r2d2-pooled connections for PostgreSQL. A thread is occupied for the request's whole life, waits included — the model of a
//! servlet container with 200 threads, whose ceiling Little's law predicts:
//! `BLOCKING_THREADS ÷ request latency` requests per second.
//!
//! The contract, validation, SQL and metrics come from `order-core`. This crate's own modules are
//! twins of reactive-api's files of the same names, each written to read step for step like its
//! twin and differing by the execution model, the database driver (diesel here, sqlx there), or
//! both: [`service`], [`clients`], [`db`] (with its files by job), [`connections`], [`batch`],
//! [`persist`], [`events`], [`outbox`], [`recovery`], [`retention`], [`routes`], [`startup`],
//! [`state`]. Four have no twin: the thread pools ([`pool`]), the blocking facade over the NATS
//! client ([`broker`]), and a database call's client deadline — a thread that shuts a call's
//! socket down past it ([`watchdog`]: a libpq call blocked in `poll()` cannot be ended on its own
//! thread) and the lookup of each new connection's socket it needs ([`db_socket`]: diesel hides
//! libpq's). docs/design.md's table of twin files says what differs in each.

pub mod batch;
pub mod broker;
pub mod clients;
pub mod connections;
pub mod db;
pub mod db_socket;
pub mod events;
pub mod outbox;
pub mod persist;
pub mod pool;
pub mod recovery;
pub mod retention;
pub mod routes;
pub mod service;
pub mod startup;
pub mod state;
pub mod watchdog;

pub use startup::{Application, Settings};

/// The global allocator this build links (`main.rs`), reported on `/metrics` as
/// `api_allocator_info` so the lab names it beside the thread count.
pub const ALLOCATOR: &str = if cfg!(feature = "mimalloc") {
    "mimalloc"
} else {
    "system"
};
