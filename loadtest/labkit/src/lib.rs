//! labkit — the load lab's infrastructure (`loadtest/labkit`).
//!
//! The `loadtest` crate's `lab` command compares the thread-per-request `blocking-api` with the
//! async `reactive-api` under the same load. A comparison is only fair if both run against the same
//! database, under the same resource limits, and every number in the report can be traced to how it
//! was measured. labkit provides those pieces, and nothing about HTTP load or reporting. What the
//! product's tests need as well is the product crate `testbed`'s, re-exported here under the same
//! names, so that the lab has one place to look and the product depends on nothing of the lab:
//!
//! - [`pg`] (testbed's): a throw-away PostgreSQL cluster (its settings are exposed so the report
//!   can print them);
//! - [`nats`] (testbed's): a throw-away `nats-server -js` (the order events' broker);
//! - [`cgroup`]: CPU/memory limits for a child process (cgroup v2 or v1), read back from the kernel
//!   so a report never claims a limit that is not enforced;
//! - [`procstat`]: CPU seconds, RSS, threads and open files of processes (or process trees, e.g. a
//!   PostgreSQL server and its backends) sampled from `/proc`;
//! - [`process`] (testbed's, plus the lab's own): spawning the services as children with their
//!   output in log files, waiting for `/ready`, locating the workspace binaries, raising
//!   `RLIMIT_NOFILE`;
//! - [`threads`]: a process's CPU, run time and context switches thread by thread over a window,
//!   exited threads included, summed by a role named from each thread's name;
//! - [`counters`]: cumulative counters of a process (user and system CPU apart, context
//!   switches, RSS and its peak) and of the machine, for per-order arithmetic between two readings;
//! - [`callgrind`]: instructions a process executes (valgrind), zeroed and dumped around a window,
//!   and the dump read back per function;
//! - [`affinity`]: pinning a process, every thread of it, to CPUs (`taskset` for a running process);
//! - [`envinfo`]: the machine, OS, compiler and commit a run happened on;
//! - [`cleanup`] (testbed's): the one Ctrl-C/SIGTERM handler that stops everything above before
//!   exiting 130;
//! - [`prometheus`] (testbed's): the services' `/metrics` text read as samples;
//! - [`skip`] (testbed's): what a test does when the machine lacks a tool it needs (skips, or fails
//!   under CI).
//!
//! Everything is synchronous except [`process::wait_ready_async`], so it can be used from tests, from
//! plain `main`s and (sparingly, at set-up time) from async code.

pub mod affinity;
pub mod callgrind;
pub mod cgroup;
pub mod counters;
pub mod envinfo;
pub mod probe;
pub mod process;
pub mod procstat;
pub mod threads;

pub use testbed::{cleanup, nats, pg, prometheus, skip};
