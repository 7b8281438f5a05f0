//! `--scenario overload`: the seed's peak, ramp-750, for both APIs with admission control
//! off (every request admitted: the original experiment) and on (each API's own `MAX_IN_FLIGHT`,
//! then 503 `overloaded` within `QUEUE_TIMEOUT_MS`) — 4 runs, one table.
//!
//! What the table must show: how many orders each API completes per second of the schedule and how
//! fast; how much it refuses and how fast the refusal comes; how many clients gave up waiting; and
//! how much work was finished for clients that had already given up (orders found by key in the
//! database after the run) — the cost of queueing without a bound
//! (`lab_report::scenario::overload`).

use crate::lab_args::LabArgs;
use lab_results::Shedding;

use super::Variant;

/// The load: the seed's peak rate (its Gatling injection reached 750 arrivals/s).
pub const PROFILE: &str = "ramp-750";

/// Shedding off, then on; each API in `base.apis` order.
pub(super) fn variants(base: &LabArgs) -> Vec<Variant> {
    let mut out = Vec::new();
    for shedding in [Shedding::Off, Shedding::On] {
        for api in &base.harness.apis {
            let mut args = base.clone();
            args.harness.apis = vec![api.clone()];
            args.load.profile = PROFILE.to_owned();
            args.shedding = shedding;
            out.push(Variant {
                slug: format!("{api}-shedding-{}", shedding.as_str()),
                args,
            });
        }
    }
    out
}
