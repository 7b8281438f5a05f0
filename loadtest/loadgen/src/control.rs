//! The handle a closed loop is watched and stopped through. It lives apart from [`crate::driver`]
//! because the state every goose user shares holds one, and the driver reads that state.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A closed loop seen and stopped from outside while it runs (`loadtest bench` measures a window
/// of a loop, then stops it; the events lab kills the API once so many requests were answered).
#[derive(Debug, Default)]
pub struct LoopControl {
    pub(crate) stop: AtomicBool,
    pub(crate) started: AtomicU64,
    pub(crate) answered: AtomicU64,
}

impl LoopControl {
    /// No client starts another request; each finishes the one it has in flight, then
    /// [`crate::driver::drive`] returns. (Goose's killswitch does the stopping; a client that finds this flag set triggers
    /// it again, so a run that was still starting — goose clears the killswitch as a run
    /// starts — stops too.)
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        goose::trigger_killswitch("closed loop stopped");
    }

    /// Requests the closed loop's clients have started so far.
    pub fn requests_started(&self) -> u64 {
        self.started.load(Ordering::SeqCst)
    }

    /// Requests of the closed loop that have ended so far (answered, timed out or failed).
    pub fn requests_answered(&self) -> u64 {
        self.answered.load(Ordering::SeqCst)
    }
}
