//! The service plumbing both APIs run the domain in: the actix-web glue, route table and server
//! ([`http`], [`server`]; the bound between a kept-alive connection's requests, [`keep_alive`];
//! the cap on client connections, [`connection_cap`]; `/health` and `/ready`, [`probe`] and
//! [`lifecycle`]), admission control and deadlines ([`admission`], [`read_admission`]), typed
//! settings ([`settings`], [`events_mode`]), the one server `DATABASE_URL` may name
//! ([`database_url`]), when a pooled connection is tested ([`connections`]), the dependencies'
//! HTTP clients ([`deps_client`]), the Prometheus metrics with identical names ([`metrics`],
//! [`throttling`]; the pod's limits as its cgroup sets them, [`cgroup`]), tracing ([`telemetry`]), the migrations and their one migrator ([`migrate`]),
//! persist batching's shared writer rules ([`batch`]), the order event and its modes
//! ([`events`]; two-phase's need of prepared transactions, [`prepared`]) and the OpenAPI document
//! both serve ([`openapi`]).
//!
//! Everything here is I/O, a framework or a process-wide resource (a registry, a semaphore, a
//! file limit); what it decides about an order it asks of `domain`.

pub mod admission;
pub mod batch;
pub mod cgroup;
pub mod connection_cap;
pub mod connections;
pub mod database_url;
pub mod deps_client;
pub mod dns;
pub mod events;
pub mod events_mode;
pub mod http;
pub mod keep_alive;
pub mod lifecycle;
pub mod metrics;
pub mod migrate;
pub mod openapi;
pub mod prepared;
pub mod probe;
pub mod read_admission;
pub mod server;
pub mod settings;
pub mod telemetry;
pub mod throttling;
