//! mock-deps, the APIs' HTTP dependencies, as a child process.

use std::path::Path;

use anyhow::Result;
use labkit::process::{ServiceProcess, find_binary};

use super::{READY_TIMEOUT, free_port};

/// mock-deps as a child process.
#[derive(Debug)]
pub struct MockDepsProcess {
    pub url: String,
    pub pid: u32,
    _process: ServiceProcess,
}

impl MockDepsProcess {
    /// Starts the `mock-deps` binary on a free port. The lab sets its latencies through the
    /// admin API next (`run::set_mock_latencies`, typed by `mock_deps::admin`), as it does for a
    /// mock-deps it did not start.
    pub fn start(logs: &Path) -> Result<MockDepsProcess> {
        let port = free_port()?;
        let env = vec![
            ("BIND_ADDR".to_owned(), format!("127.0.0.1:{port}")),
            // Two workers: the mock must never be the bottleneck (the seed's mock died first).
            ("HTTP_WORKERS".to_owned(), "2".to_owned()),
            ("RUST_LOG".to_owned(), "warn".to_owned()),
        ];
        let bin = find_binary("mock-deps")?;
        let process = ServiceProcess::spawn(
            "mock-deps",
            &bin,
            Vec::<String>::new(),
            env,
            &logs.join("mock-deps.log"),
        )?;
        let url = format!("http://127.0.0.1:{port}");
        process.wait_ready(&format!("{url}{}", mock_deps::admin::HEALTH), READY_TIMEOUT)?;
        Ok(MockDepsProcess {
            url,
            pid: process.pid(),
            _process: process,
        })
    }
}
