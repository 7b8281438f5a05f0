//! Everything the two order APIs share, so that they differ only in their execution model.
//!
//! The lab's claim is that `blocking-api` and `reactive-api` do exactly the same work. This crate
//! holds the parts that must therefore exist once, in two layers:
//!
//! - [`domain`]: what an order is and what may be done with it — the HTTP contract and its
//!   validation, the error enum and its statuses, the dependencies' wire format, the order
//!   document, the request hash, the idempotency and recovery decisions, how a database failure
//!   is judged, what the retention sweep keeps, and the SQL text both database layers run. Pure
//!   functions of their inputs, each tested beside its rule.
//! - [`plumbing`]: what runs the domain as a service — the actix-web glue, route table and
//!   server, admission and deadlines, typed settings, metrics, tracing, the migrations and their
//!   one migrator, the dependencies' HTTP clients, the pooled connections' rule, persist batching
//!   and the order event's modes, the OpenAPI document.
//!
//! Two module trees in one crate, not two crates: the plumbing's every file uses the domain's
//! types and both APIs use both, so a second crate would split no build and no dependency — the
//! domain's types implement actix-web's `ResponseError` and utoipa's `ToSchema` (the status and
//! the schema are the contract's), so it would pull the same crates. The trees make the layer of
//! a file visible in its path (`order_core::domain::idempotency`, `order_core::plumbing::server`);
//! the domain reads of the plumbing only its settings (the hash key, the retention days).
//!
//! Part of the product (`crates/`), not of the lab. What is written twice is each API's twin
//! files (`service`, `clients`, `db`, `connections`, `batch`, `events`, `outbox`, `recovery`,
//! `routes`, `startup`, `state`) — as plain functions on threads in `blocking-api`, as `async fn`s
//! in `reactive-api`, with diesel in one and sqlx in the other; the README's table of twin files
//! says what differs in each.

pub mod domain;
pub mod plumbing;

pub use domain::error::{ApiError, Dependency, ErrorCode};
