//! testbed — the processes the tests and the lab run the services against (PostgreSQL, NATS, the
//! proxy, children); what a contract test calls is `testkit`'s, which starts them through here.
//!
//! The contract suite (`crates/testkit`) and the lab (`loadtest/`) both start the APIs next to a
//! real PostgreSQL and a real NATS, sometimes with a proxy in between that delays or freezes the
//! path, and both must leave nothing running when they end or are interrupted. That is this
//! crate, and it is the product's (`crates/`): the product's tests need it, and the product
//! depends on nothing of the lab (`crates/testkit/tests/lab_free.rs`); the lab uses it too, most of
//! it through `labkit`, which re-exports these modules beside the lab's own (cgroups, `/proc`
//! sampling, instruction counts), and `latency-proxy`, the proxy's binary. Nothing here knows
//! about load, reports or either API:
//!
//! - [`pg`]: a throw-away PostgreSQL cluster (its settings exposed so a report can print them),
//!   and the `pg-ephemeral` binary that starts one for the shell scripts;
//! - [`nats`]: a throw-away `nats-server -js` (the order events' broker);
//! - [`proxy`]: a TCP proxy that adds a round-trip time, changeable while it runs, and freezes
//!   with its sockets open (a database or a broker that stopped answering);
//! - [`process`]: child processes with their output in log files, waiting for `/ready`,
//!   locating the workspace's binaries;
//! - [`cleanup`]: the one Ctrl-C/SIGTERM handler that stops everything above before exiting 130;
//! - [`prometheus`]: the services' `/metrics` text read as samples;
//! - [`skip`]: what a test does when the machine lacks a tool it needs (skips, or fails under CI).
//!
//! Everything is synchronous except the proxy's constructors and
//! [`process::wait_ready_async`], so it can be used from tests, from plain `main`s and (sparingly,
//! at set-up time) from async code.

pub mod cleanup;
pub mod nats;
pub mod pg;
pub mod process;
pub mod prometheus;
pub mod proxy;
pub mod skip;
