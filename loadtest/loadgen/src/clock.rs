//! The run's clock: started by the first arrival, read by the recorder's callers, the sampler and
//! the lab's fault timeline, so every second of the results counts from the same instant.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// The run's clock: set by the first transaction, read by the sampler.
pub type Clock = Arc<OnceLock<Instant>>;

/// Seconds from `t0` to `t` (0 when `t` is earlier).
pub fn since(t0: Instant, t: Instant) -> f64 {
    t.saturating_duration_since(t0).as_secs_f64()
}
