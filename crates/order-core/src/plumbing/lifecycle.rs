//! The server's lifecycle, read by the routes (`/ready`, the draining answer in `http`) and set by
//! the server when a shutdown signal arrives; its own module so that neither imports the other.

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the server is draining: set when SIGTERM or SIGINT arrives, after which `/ready`
/// answers 503 so that a load balancer stops sending before the listener closes.
#[derive(Debug, Default)]
pub struct Lifecycle {
    draining: AtomicBool,
}

impl Lifecycle {
    pub fn draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }
}
