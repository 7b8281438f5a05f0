//! What stopped an API at the first rate it could not serve within the objective, read from what
//! that run measured — never assumed from the execution model. The rules are [`RULES`], tried in
//! their order: the first that holds names the cause, with the figure it read, its threshold and
//! the evidence in words; none holds: **unidentified**, with the objective's figures as the
//! evidence. Each rule is one function (`cause/rules.rs`, `cause/cpu.rs`) whose doc says what it
//! reads.
//!
//! Why this order: a process that died is read first (its later figures are a dead process's),
//! then a run flagged harness-bound (the rig may have set the limit); the rest go from the limits
//! a rate runs into outright (memory, the thread bound, the admission cap), through the CPU and
//! blocking-api's pool, to the database (its pool before PostgreSQL; slow transactions in seconds
//! the quota throttled are the CPU's, read just before PostgreSQL's).

mod cpu;
mod reading;
mod rules;

use lab_results::RunResults;
use lab_results::scenario::{Cause, StoppedBy};

pub use reading::Reading;

/// Peak RSS at this share of the memory limit counts as the memory limit reached.
pub const MEMORY_SHARE: f64 = 0.90;
/// A plateau at this share of the Little's-law bound has reached it.
pub const BOUND_SHARE: f64 = 0.95;
/// Mean CPU over the plateau at this share of the API's quota is its CPU.
pub const CPU_SHARE: f64 = 0.95;
/// Throttled in this share of the plateau's CFS periods: the quota held it back.
pub use super::throttling::THROTTLED_SHARE;
/// blocking-api's threads all busy in this share of the plateau's samples: the pool ran out.
pub const POOL_FULL_SHARE: f64 = 0.9;
/// Refused for want of a thread in this share of the plateau's arrivals, with the pool busy
/// below its size on average: random arrivals found it full (half the objective's 1 %).
pub const LOSS_SHARE: f64 = 0.005;
/// Throttled in at least one CFS period in this share of the plateau's seconds …
pub const STALL_SECONDS_SHARE: f64 = 0.75;
/// … and in this share of all its periods, …
pub const STALL_PERIODS_SHARE: f64 = 0.05;
/// … at this share of its quota or more, on average, …
pub const STALL_CPU_SHARE: f64 = 0.5;
/// … with each second's p99 following its throttled periods (Pearson's r): the quota stalls it.
pub const STALL_CORRELATION: f64 = 0.5;
/// Runnable threads waiting for the CPU, summed, % of a core (100 = one thread always waiting):
/// a thousand threads on one core wake together, and the event loop waits behind them.
pub const RUN_QUEUE_PCT: f64 = 100.0;
/// PostgreSQL at this share of one core, on average over the plateau.
pub const POSTGRES_SHARE: f64 = 0.90;

/// The slowest plateau second's mean transaction time at this multiple of the median second's
/// is a burst of slow transactions …
pub const SLOW_TX_FACTOR: f64 = 2.5;
/// … when it is also this much slower, ms (a few tenths of a ms apart are noise).
pub const SLOW_TX_MIN_MS: f64 = 1.0;
/// Each slow second throttled in this share of its CFS periods or more: the slow transactions
/// are the API's own quota's (10 ms periods: ten stalls in the second; 100 ms: one).
pub const SLOW_TX_THROTTLED_SHARE: f64 = 0.10;
/// `Cause::unit` of the slow-transaction rule.
const SLOW_TX_UNIT: &str = "ms per transaction (slowest second)";

/// A cause that comes and goes within a run (a burst of slow commits, or nothing seen at its
/// limit): the rate is worth measuring once more before the miss counts.
pub fn is_transient(c: &Cause) -> bool {
    c.stopped_by == StoppedBy::Unidentified || c.unit == SLOW_TX_UNIT
}

/// A rule: the cause with its evidence where it holds in the run, else `None`.
pub type Rule = fn(&Reading) -> Option<Cause>;

/// The rules in the order they are tried, each named by the cause it gives.
pub const RULES: &[(&str, Rule)] = &[
    ("memory (killed) or crashed", rules::died),
    ("harness", rules::harness_bound),
    ("memory (peak)", rules::memory_peak),
    ("threads (Little's-law bound)", rules::thread_bound),
    ("in_flight_cap", rules::admission_cap),
    ("cpu (mean use)", cpu::cpu_use),
    ("cpu (throttled periods)", cpu::cpu_throttled),
    ("cpu (run queue)", cpu::cpu_run_queue),
    ("cpu (bursts)", cpu::cpu_bursts),
    ("threads (pool full)", rules::pool_full),
    ("threads (random arrivals)", rules::random_arrivals),
    ("cpu (stalls)", cpu::cpu_stalls),
    ("db_pool", rules::db_pool),
    ("postgres (core)", rules::postgres_core),
    (
        "cpu (throttled transactions)",
        cpu::cpu_throttled_transactions,
    ),
    ("postgres (slow transactions)", rules::slow_transactions),
];

/// What stopped the API in `r`, a run that missed the objective: the first of [`RULES`] that
/// holds, else unidentified.
pub fn stopped_by(r: &RunResults) -> Cause {
    let reading = Reading::of(r);
    RULES
        .iter()
        .find_map(|(_, rule)| rule(&reading))
        .unwrap_or_else(|| rules::unidentified(&reading))
}
