//! # loadtest — the load lab's generator, orchestrator and reports
//!
//! The lab's product is a comparison a reader can trust between the thread-per-request
//! `blocking-api` and the async `reactive-api` (experiment A of `shared/SEEDS.md`). Trust comes
//! from how the load is made and how it is counted, so the layers are kept apart:
//!
//! - [`profile`]: the arrival schedules (`ramp-N`, `seed-gatling`, `stress`, `closed-C-N`), fixed in
//!   advance; [`body`]: valid, unique, randomised orders; [`http`]: one request and its outcome;
//! - [`driver`]: goose runs the load; the open model is a scheduler transaction that fires each
//!   arrival at its intended time whether or not earlier ones returned; [`recorder`] writes every
//!   request's fate into per-second, per-phase and whole-run HdrHistograms;
//! - [`sampler`]: once a second, the API's CPU/RSS/threads/fds, its `/metrics`, and the harness's
//!   own CPU; [`assemble`] turns all that into [`lab_results::RunResults`] (the documented,
//!   versioned results file, crate `lab-results`) and flags harness-bound runs;
//! - [`lab`] + [`services`] + [`invariants`]: PostgreSQL, mock-deps and each API in its cgroup,
//!   fresh state, warm-up, measurement, end-of-run checks; [`money`]: every charge against the
//!   orders, once the API settled them; report.html and summary.md are the `lab-report` crate's;
//! - [`retry`]: clients that retry like a careful payment client; [`lab_results::faults`]: payment
//!   failures, a killed API and a restarted database during a run (`--scenario faults`).
//!
//! `main.rs` only parses [`cli`] and calls [`commands::run`].

pub mod cli;
pub mod commands;
pub mod gave_up;
pub mod inject;
pub mod invariants;
pub mod lab;
pub mod money;
pub mod run;
pub mod scenario;
pub mod services;
