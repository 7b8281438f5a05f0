//! # loadgen — the load lab's generator
//!
//! Part of the lab (`loadtest/loadgen`). Makes the load and counts it; knows nothing of how the APIs are started (that is the
//! `loadtest` binary's lab) nor of how the results are shown (`lab-report`). Its output is a
//! [`lab_results::RunResults`].
//!
//! - [`profile`]: the arrival schedules (`ramp-N`, `seed-gatling`, `stress`, `closed-C-N`), fixed in
//!   advance; [`shard`]: one generator's share of a schedule (`--shard I/N`), [`start`]: when it
//!   starts (`--start-at`, `--wait-for-start`); [`body`]: valid, unique, randomised orders, each
//!   a function of the seed and the arrival's index; [`http`]: one request and its outcome;
//!   [`retry`]: clients that retry like a careful payment client;
//! - [`driver`]: goose runs the load; the open model is a scheduler transaction that fires each
//!   arrival at its intended time whether or not earlier ones returned (`scheduler`, sharing the
//!   run's state in `shared`); [`recorder`] writes every request's fate into per-second,
//!   per-phase and whole-run HdrHistograms, and [`gave_up`] the keys whose client gave up;
//! - [`sampler`]: once a second, the API's CPU/RSS/threads/fds, its `/metrics`, and the harness's
//!   own CPU, on the run's [`clock`] (and, more often, the peaks of a few gauges), and over the
//!   plateau each of the API's threads ([`thread_roles`]: its CPU by thread role); [`assemble`] turns all that into the results file and flags
//!   harness-bound runs; [`histograms`] writes every histogram into it, so shards add up exactly.
//!
//! Modules depend downwards only (no import circle): `clock`, `profile` → `shard`, `start` →
//! `body` → `http`,
//! `gave_up`, `progress` → `recorder`, `retry` → `shared` → `scheduler` → `driver` → `assemble`, `histograms`.

pub mod assemble;
pub mod body;
pub mod clock;
pub mod control;
pub mod driver;
pub mod gave_up;
pub mod histograms;
pub mod http;
pub mod profile;
pub mod progress;
pub mod recorder;
pub mod retry;
pub mod sampler;
mod scheduler;
pub mod shard;
mod shared;
pub mod start;
pub mod thread_roles;
