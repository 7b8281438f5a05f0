//! The services the lab starts: PostgreSQL, mock-deps and the API under test, each as a child
//! process (labkit::process) whose output goes to `<out>/logs/`. The API goes into its own cgroup
//! (its pod: `--api-cpus`, `--api-memory-mib`, by default 1 CPU, 1 GiB) right after it is spawned; PostgreSQL, mock-deps and the generator stay outside.
//! Limits are read back from the kernel: the results only claim what the kernel holds.
//!
//! One file per service: `database.rs` (PostgreSQL), `mock_deps.rs`, `api.rs` (the API process),
//! and `placement.rs` (the API's cgroup and the CPUs of the API and the harness, with the limits
//! read back); here what they share: the readiness bound, a free port, and the build of the
//! services' binaries.

mod api;
mod database;
mod mock_deps;
mod placement;

pub use api::ApiProcess;
pub use database::{Database, SharedDatabase};
pub use mock_deps::MockDepsProcess;
pub use placement::{api_cpus, not_enforced, place_harness};

use std::net::TcpListener;
use std::time::Duration;

use anyhow::{Context, Result};

/// How long a service may take to answer its readiness URL.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A free 127.0.0.1 port (bound then released: a tiny race the lab accepts).
pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Under `cargo run`, builds the services the lab is about to start with the same profile as the
/// lab itself, so `cargo run --release -p loadtest -- lab` never measures missing or stale
/// binaries. Outside cargo (an installed binary, the docker image) the binaries are used as found.
pub fn build_services(apis: &[String]) -> Result<()> {
    let Some(cargo) = std::env::var_os("CARGO") else {
        return Ok(());
    };
    let mut cmd = std::process::Command::new(cargo);
    cmd.arg("build").arg("--quiet");
    if !cfg!(debug_assertions) {
        cmd.arg("--release");
    }
    for package in apis
        .iter()
        .map(|a| crate::lab_args::api_names(a).0)
        .chain(["mock-deps".to_owned()])
    {
        cmd.args(["-p", &package]);
    }
    eprintln!("building the services: {cmd:?}");
    let status = cmd
        .status()
        .context("running cargo build for the services")?;
    if !status.success() {
        anyhow::bail!("building the services failed ({status})");
    }
    Ok(())
}
