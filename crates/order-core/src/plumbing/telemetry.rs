//! Structured logs with `tracing`; `RUST_LOG` filters them (default `info`).

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber once; later calls (tests starting several apps) do nothing.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .try_init();
}
