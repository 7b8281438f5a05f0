//! How long the API took to serve again after each fault: the time from the fault's mark to the
//! first order created after it, read from the run's timeline and the generator's record of 201s.

use lab_results::faults::{
    BROKER_ACK_LABEL, DB_FREEZE_LABEL, DB_RESTART_LABEL, GATEWAY_DOWN_LABEL, KILL_LABEL,
    ROLLING_RESTART_LABEL, SLOW_UPLOADS_LABEL,
};
use lab_results::{FaultRecovery, RetryRecord, TimelineMark};

/// For each fault's mark on the timeline, the time to the first 201 after it.
pub(crate) fn recovery(timeline: &[TimelineMark], retries: &RetryRecord) -> Vec<FaultRecovery> {
    timeline
        .iter()
        .filter(|e| {
            [
                KILL_LABEL,
                ROLLING_RESTART_LABEL,
                DB_RESTART_LABEL,
                DB_FREEZE_LABEL,
                SLOW_UPLOADS_LABEL,
                GATEWAY_DOWN_LABEL,
                BROKER_ACK_LABEL,
            ]
            .iter()
            .any(|l| e.label.starts_with(l))
        })
        .map(|e| FaultRecovery {
            fault: e.label.clone(),
            t: e.t,
            first_201_after_s: retries.first_created_after(e.t),
        })
        .collect()
}
