//! # loadtest — the load lab's binary: CLI, orchestration, scenarios
//!
//! `loadtest/cli`, the top of the lab: `loadtest/` holds the whole lab (this crate and the ones it
//! is built from), `crates/` only what the product shares, none of the lab.
//!
//! The lab's product is a comparison a reader can trust between the thread-per-request
//! `blocking-api` and the async `reactive-api` (experiment A of `shared/SEEDS.md`). Trust comes
//! from how the load is made and how it is counted, so the layers are separate crates, each
//! depending only on the ones before it:
//!
//! - `lab-results` ([`lab_results`]): the documented, versioned results file, and the injection
//!   and fault plans it records;
//! - `lab-report` ([`lab_report`]): report.html and summary.md, from results files only;
//! - `loadgen` ([`loadgen`]): profiles, bodies, the goose driver with the open-model scheduler,
//!   retrying clients, the recorder, the sampler, the assembly of the results;
//! - this crate: [`cli`] (typed at the edge: clap parses every value) and [`commands`];
//!   [`api_env`]: the settings every API the lab starts is given, typed, written once;
//!   [`lab`] + [`services`] + [`invariants`]: PostgreSQL, mock-deps and each API in its cgroup
//!   ([`pod`]: its limits),
//!   fresh state, warm-up, measurement ([`run`]), end-of-run checks; [`money`]: every charge
//!   against the orders, once the API settled them; [`gave_up`]: the orders made for clients
//!   that gave up; [`inject`]: a dependency slowed mid-run; [`faults`]: the faults a run's plan
//!   injects (kills, restarts, outages, slow uploads, a slow broker); [`scenario`]: the source
//!   experiments as several lab runs and one table; [`bench`]: the cost-per-order benchmark
//!   (CPU, statements, calls and memory per order, each API alone in its CPU); [`merge`]: the
//!   shards of one run (`run --shard I/N`) added up into the run.
//!
//! `main.rs` only parses [`cli`] and calls [`commands::run`].

pub mod api_env;
pub mod bench;
pub mod cli;
pub mod commands;
pub mod exit_status;
pub mod faults;
pub mod gave_up;
pub mod inject;
pub mod invariants;
pub mod lab;
pub mod lab_args;
pub mod merge;
pub mod money;
pub mod pod;
pub mod predict;
pub mod run;
pub mod scenario;
pub mod services;
