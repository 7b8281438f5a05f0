//! Everything the two order APIs share, so that they differ only in their execution model.
//!
//! The lab's claim is that `blocking-api` and `reactive-api` do exactly the same work. This crate
//! holds the parts that must therefore exist once: the HTTP contract and its validation
//! ([`contract`]), admission control and deadlines ([`admission`]), the error enum and its status mapping ([`error`]), the one server `DATABASE_URL` may name ([`database_url`]), how a database failure is judged by its SQLSTATE ([`db_failure`]), the dependencies' wire format and the one way their HTTP clients are built ([`deps`], [`deps_client`]), typed settings
//! ([`settings`]), the SQL text both database layers run ([`sql`]; persist batching's in [`batch`]), the idempotency decision
//! ([`idempotency`]), when a pooled connection is tested ([`connections`]), what recovery does with a charge left unfinished ([`recovery`]), the keyed
//! request hash ([`request_hash`]), the order document returned and replayed ([`order`]), the actix-web glue,
//! route table and server both use ([`http`], [`server`]; the bound between a kept-alive connection's requests, [`keep_alive`]; the cap on client connections, [`connection_cap`]), the Prometheus metrics with identical
//! names ([`metrics`]), the order event and its modes ([`events`]; two-phase's need of prepared transactions, [`prepared`]) and the migrations, applied by one migrator ([`migrate`]); the OpenAPI document both serve ([`openapi`]).
//!
//! Part of the product (`crates/`), not of the lab. What is written twice is each API's twin
//! files (`service`, `clients`, `db`, `connections`, `batch`, `events`, `outbox`, `recovery`,
//! `routes`, `startup`, `state`) — as plain functions on threads in `blocking-api`, as `async fn`s
//! in `reactive-api`, with diesel in one and sqlx in the other; the README's table of twin files
//! says what differs in each.

pub mod admission;
pub mod batch;
pub mod connection_cap;
pub mod connections;
pub mod contract;
pub mod database_url;
pub mod db_failure;
pub mod deps;
pub mod deps_client;
pub mod error;
pub mod events;
pub mod events_mode;
pub mod http;
pub mod idempotency;
pub mod keep_alive;
pub mod lifecycle;
pub mod metrics;
pub mod migrate;
pub mod openapi;
pub mod order;
pub mod prepared;
pub mod probe;
pub mod read_admission;
pub mod recovery;
pub mod request_hash;
pub mod retention;
pub mod server;
pub mod settings;
pub mod sql;
pub mod telemetry;
pub mod throttling;

pub use error::{ApiError, Dependency, ErrorCode};
