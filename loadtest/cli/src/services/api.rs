//! The API under test as a child process: started (or under callgrind), put in its cgroup and
//! pinned ([`super::placement`]), killed, restarted the same way, stopped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lab_results::Limits;
use labkit::cgroup::{LimitedGroup, ResourceLimits};
use labkit::process::{ServiceProcess, find_binary};

use super::placement::{confine, not_enforced, pin_api};
use super::{READY_TIMEOUT, free_port};

/// An API started by the lab.
#[derive(Debug)]
pub struct ApiProcess {
    pub url: String,
    pub pid: u32,
    pub limits: Limits,
    /// `release` or `debug`, from where the binary was found.
    pub build_profile: String,
    process: ServiceProcess,
    group: Option<LimitedGroup>,
    /// How it was started, to start it again the same way after a kill.
    name: String,
    bin: PathBuf,
    env: Vec<(String, String)>,
    log: PathBuf,
}

impl ApiProcess {
    /// Starts `name` (`blocking-api`, `reactive-api`) with `settings` (env var → value), in a
    /// cgroup of `pod`'s limits (none when `None`), and waits for `/ready`.
    pub fn start(
        name: &str,
        settings: &BTreeMap<String, String>,
        pod: Option<ResourceLimits>,
        logs: &Path,
    ) -> Result<ApiProcess> {
        Self::start_as(name, settings, pod, logs, None)
    }

    /// [`ApiProcess::start`] of the release build under callgrind (`labkit::callgrind`), its
    /// dumps written to `out_file`; no cgroup (valgrind needs several times the API's memory, and
    /// a CPU quota would only slow it down: instructions do not depend on it).
    pub fn start_under_callgrind(
        name: &str,
        settings: &BTreeMap<String, String>,
        logs: &Path,
        out_file: &Path,
    ) -> Result<ApiProcess> {
        Self::start_as(name, settings, None, logs, Some(out_file))
    }

    fn start_as(
        name: &str,
        settings: &BTreeMap<String, String>,
        pod: Option<ResourceLimits>,
        logs: &Path,
        callgrind: Option<&Path>,
    ) -> Result<ApiProcess> {
        let port = free_port()?;
        let bin: PathBuf = if callgrind.is_some() {
            labkit::process::find_release_binary(name)?
        } else {
            find_binary(name)?
        };
        let build_profile = if bin.components().any(|c| c.as_os_str() == "release") {
            "release"
        } else {
            "debug"
        };
        let mut env: Vec<(String, String)> = settings
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.push(("BIND_ADDR".to_owned(), format!("127.0.0.1:{port}")));
        env.push(("RUST_LOG".to_owned(), "warn".to_owned()));
        let log = logs.join(format!("{name}.log"));
        let (program, args, ready_timeout) = match callgrind {
            Some(out) => {
                anyhow::ensure!(
                    build_profile == "release",
                    "instructions are counted on the release build; found {} (build it: cargo \
                     build --release -p {name})",
                    bin.display()
                );
                let args = labkit::callgrind::valgrind_args(out, &bin);
                // Under valgrind the API starts (migrations included) some 50 times slower.
                (PathBuf::from("valgrind"), args, READY_TIMEOUT * 5)
            }
            None => (bin.clone(), Vec::new(), READY_TIMEOUT),
        };
        let process = ServiceProcess::spawn(name, &program, args, env.clone(), &log)?;
        let (group, mut limits) = if let Some(pod) = pod {
            confine(name, process.pid(), pod)
        } else if callgrind.is_some() {
            (
                None,
                not_enforced("under valgrind (instructions do not depend on limits)"),
            )
        } else {
            (None, not_enforced("disabled with --no-limits"))
        };
        pin_api(process.pid(), &mut limits)?;
        let url = format!("http://127.0.0.1:{port}");
        process.wait_ready(&format!("{url}/ready"), ready_timeout)?;
        Ok(ApiProcess {
            url,
            pid: process.pid(),
            limits,
            build_profile: build_profile.to_owned(),
            process,
            group,
            name: name.to_owned(),
            bin,
            env,
            log,
        })
    }

    /// The exit status, once the process has ended by itself (it is reaped), else `None`.
    pub fn exit_status(&self) -> Result<Option<std::process::ExitStatus>> {
        self.process.try_wait()
    }

    /// The OOM kills its cgroup has counted (`None` without a cgroup, or where the kernel does
    /// not count them).
    pub fn oom_kills(&self) -> Option<u64> {
        self.group.as_ref().and_then(|g| g.oom_kills().ok())
    }

    /// The most memory its cgroup has been charged since it was made (`None` without a cgroup,
    /// or where the kernel does not say).
    pub fn cgroup_memory_peak(&self) -> Option<u64> {
        self.group.as_ref().and_then(|g| g.memory_peak().ok())
    }

    /// `kill -9` of the API's process group: a crash, nothing flushed, nothing answered.
    pub fn kill(&self) -> Result<()> {
        self.process.kill()?;
        Ok(())
    }

    /// Starts the API again with the same binary, settings and port, in the same cgroup, and
    /// waits for `/ready`; `pid` is the new process's.
    pub fn restart(&mut self) -> Result<()> {
        self.replace().map(drop)
    }

    /// [`ApiProcess::restart`] beside the process still running (draining, its listener closed):
    /// the new one becomes this `ApiProcess`, the old one is handed back.
    pub fn replace(&mut self) -> Result<ServiceProcess> {
        let process = ServiceProcess::spawn(
            &self.name,
            &self.bin,
            Vec::<String>::new(),
            self.env.clone(),
            &self.log,
        )?;
        if let Some(g) = &self.group {
            g.add_pid(process.pid())
                .with_context(|| format!("moving the restarted {} into its cgroup", self.name))?;
        }
        if let Some(p) = &self.limits.pinning {
            labkit::affinity::pin_process(process.pid(), &p.api_cpus)?;
        }
        process.wait_ready(&format!("{}/ready", self.url), READY_TIMEOUT)?;
        self.pid = process.pid();
        Ok(std::mem::replace(&mut self.process, process))
    }

    /// SIGTERM, as a platform begins a stop; the process keeps running (it serves for its
    /// `SHUTDOWN_DELAY_MS`, then drains).
    pub fn sigterm(&self) -> Result<()> {
        self.process.sigterm()
    }

    /// The port it listens on.
    pub fn port(&self) -> Result<u16> {
        let port = self.url.rsplit(':').next().unwrap_or_default();
        port.parse()
            .with_context(|| format!("no port in {}", self.url))
    }

    /// A setting of its environment in ms (`SHUTDOWN_DELAY_MS`…), `default` (the API's own) when
    /// the lab did not state it.
    pub fn setting_ms(&self, name: &str, default: u64) -> Result<u64> {
        match self.env.iter().find(|(k, _)| k == name) {
            Some((_, v)) => v.parse().with_context(|| format!("{name}={v}")),
            None => Ok(default),
        }
    }

    /// Stops the process (SIGINT, then SIGKILL after the grace period) and removes its cgroup.
    /// SIGINT, not a platform's SIGTERM: the run is over and nothing routes here, so the API
    /// skips `SHUTDOWN_DELAY_MS` (a rolling restart sends SIGTERM, `faults::rolling_restart`).
    pub fn stop(self) -> Result<()> {
        self.process.interrupt(labkit::process::STOP_GRACE)?;
        Ok(())
    }
}
