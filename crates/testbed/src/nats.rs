//! A throw-away NATS server with JetStream for one lab run or one test (the order events' broker).
//!
//! [`EphemeralNats::start`] runs `nats-server -js` from the system (Debian: `apt-get install
//! nats-server`) on a free 127.0.0.1 port, with its JetStream store in a fresh temporary directory
//! and its HTTP monitoring on another free port, and waits for `/healthz` (JetStream ready).
//! Dropping it stops the server (SIGTERM, then SIGKILL) and removes the directory; Ctrl-C does the
//! same (see [`crate::cleanup`]), as for [`crate::pg::EphemeralPostgres`].

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};

use crate::cleanup::{self, CleanupGuard};
use crate::process::ServiceProcess;

/// How long the server may take to report JetStream healthy.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `nats-server -js`; stopped, and its store removed, on drop.
#[derive(Debug)]
pub struct EphemeralNats {
    // Dropped first: the server stops before its directory goes.
    process: ServiceProcess,
    port: u16,
    dir: PathBuf,
    _dir: CleanupGuard,
}

impl EphemeralNats {
    pub fn start() -> anyhow::Result<EphemeralNats> {
        let bin = find_nats_server()?;
        let dir = tempfile::Builder::new()
            .prefix("testbed-nats-")
            .tempdir()
            .context("creating a temporary directory")?
            .keep();
        let guard = {
            let dir = dir.clone();
            cleanup::register(format!("remove {}", dir.display()), move || {
                let _ = std::fs::remove_dir_all(&dir);
            })
        };
        let (port, monitor) = (free_port()?, free_port()?);
        let store = dir.join("store");
        let args: Vec<String> = vec![
            "-js".into(),
            "-a".into(),
            "127.0.0.1".into(),
            "-p".into(),
            port.to_string(),
            "-m".into(),
            monitor.to_string(),
            "-sd".into(),
            store.display().to_string(),
        ];
        let process = ServiceProcess::spawn(
            "nats-server",
            &bin,
            args,
            Vec::new(),
            &dir.join("server.log"),
        )?;
        process.wait_ready(
            &format!("http://127.0.0.1:{monitor}/healthz"),
            READY_TIMEOUT,
        )?;
        Ok(EphemeralNats {
            process,
            port,
            dir,
            _dir: guard,
        })
    }

    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The directory holding the JetStream store and `server.log`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// `nats-server` on `PATH`, or where Debian puts it (`/usr/sbin`, off a normal user's `PATH`).
pub fn find_nats_server() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path).chain(["/usr/sbin".into(), "/usr/bin".into()]);
    for dir in dirs {
        let candidate = dir.join("nats-server");
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!("nats-server not found: install it (Debian: apt-get install nats-server)")
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
