//! blocking-api: the order API as thread-per-request.
//!
//! actix-web accepts connections on `HTTP_WORKERS` event loops, then hands each order request,
//! whole, to a bounded pool of `BLOCKING_THREADS` threads (`web::block`), where it runs as plain
//! sequential code: `reqwest::blocking` for the dependencies, diesel on r2d2-pooled connections for
//! PostgreSQL. A thread is occupied for the request's whole life, waits included — the model of a
//! servlet container with 200 threads, whose ceiling Little's law predicts:
//! `BLOCKING_THREADS ÷ request latency` requests per second.
//!
//! The contract, validation, SQL and metrics come from `order-core`; only [`service`], [`db`],
//! [`clients`], the [`recovery`] loop and the order event ([`events`], over the blocking facade
//! [`broker`]) are this crate's own, written to read step for step like
//! reactive-api's.

pub mod batch;
pub mod broker;
pub mod clients;
pub mod connections;
pub mod db;
pub mod events;
pub mod outbox;
pub mod pool;
pub mod recovery;
pub mod routes;
pub mod service;
pub mod startup;
pub mod state;
pub mod watchdog;

pub use startup::{Application, Settings};
