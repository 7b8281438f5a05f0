//! The exit statuses the `loadtest` commands answer with beyond 0 and 1, read by CI: one place for
//! the commands and for `merge`, which answers like them.

/// Exit status when every run finished but an invariant was violated.
pub const INVARIANT_VIOLATED: u8 = 3;
/// Exit status of `lab --fail-on-slo` when every invariant held but an API missed the objective.
pub const SLO_MISSED: u8 = 4;
