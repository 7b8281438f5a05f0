//! The faults the lab injects into a run (`lab --faults`, the `faults` scenario): what it does to
//! the API, its database, its payment gateway and its broker while the run is measured, each at
//! its time on the run's clock and recorded as an event of the run.
//!
//! - `carry_out.rs`: the plan carried out — payment faults through mock-deps' admin API, the API
//!   killed and restarted, PostgreSQL restarted or frozen, the gateway unreachable;
//! - `rolling_restart.rs`: the API restarted as a platform does (SIGTERM, still sent to while it
//!   drains, the new process on its port);
//! - `recovery.rs`: the time the API took to serve again after each fault (a module of its own,
//!   which the lab run reads without importing the plan's carrying out, which imports the run);
//! - `slow_uploads.rs`: connections that hold an order's body back, one byte at a time;
//! - `slow_broker.rs`: the NATS broker behind a latency proxy whose acknowledgements the fault
//!   slows, and the count of the events after the run.
//!
//! The plan itself (its syntax, its description, its labels) is [`lab_results::faults`]; the lab
//! run it is carried out in is [`crate::lab`]; a dependency slowed without a fault (`--inject`)
//! is [`crate::inject`].

mod carry_out;
pub(crate) mod recovery;
pub mod rolling_restart;
pub(crate) mod slow_broker;
mod slow_uploads;
