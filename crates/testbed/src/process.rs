//! The services under test as child processes.
//!
//! [`ServiceProcess`] starts a binary with its output in a log file (a lab run must not pay for a
//! terminal, and the log explains a failed run) and stops it — SIGTERM, then SIGKILL after a grace
//! period — when dropped or when the run is interrupted (see [`crate::cleanup`]).

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::cleanup::{self, CleanupGuard};

/// How long a service gets to exit after SIGTERM before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// A running child process, stopped on drop.
#[derive(Debug)]
pub struct ServiceProcess {
    name: String,
    pid: u32,
    log_path: PathBuf,
    child: Arc<Mutex<Child>>,
    _guard: CleanupGuard,
}

impl ServiceProcess {
    /// Starts `program args…` with the current environment plus `env`, stdin closed, and stdout and
    /// stderr appended to `log_path` (created with its parent directories).
    pub fn spawn<I, S>(
        name: &str,
        program: &Path,
        args: I,
        env: Vec<(String, String)>,
        log_path: &Path,
    ) -> anyhow::Result<ServiceProcess>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        if let Some(dir) = log_path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let log = File::options()
            .create(true)
            .append(true)
            .open(log_path)
            .with_context(|| format!("opening log file {}", log_path.display()))?;
        let child = Command::new(program)
            .args(args)
            .envs(env)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own process group, so stopping it also stops anything it started.
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting {name} ({})", program.display()))?;
        let pid = child.id();
        let child = Arc::new(Mutex::new(child));
        let for_cleanup = child.clone();
        let guard = cleanup::register(format!("stop {name} (pid {pid})"), move || {
            let mut child = for_cleanup.lock().unwrap_or_else(PoisonError::into_inner);
            let _ = terminate(&mut child, Signal::SIGTERM, STOP_GRACE);
        });
        Ok(ServiceProcess {
            name: name.to_owned(),
            pid,
            log_path: log_path.to_owned(),
            child,
            _guard: guard,
        })
    }

    /// The name given to [`ServiceProcess::spawn`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The child's process id (to signal it, put it in a cgroup or sample it).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Where its stdout and stderr go.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The exit status if the process has exited (it is reaped), else `None`.
    pub fn try_wait(&self) -> anyhow::Result<Option<ExitStatus>> {
        Ok(self.lock().try_wait()?)
    }

    /// The last `lines` lines of the log (for error messages).
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read(&self.log_path).unwrap_or_default();
        let text = String::from_utf8_lossy(&text);
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Like [`wait_ready`], but fails at once, with the log's tail, if the process exits.
    pub fn wait_ready(&self, url: &str, timeout: Duration) -> anyhow::Result<Duration> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.try_wait()? {
                bail!(
                    "{} exited ({status}) before {url} answered 200; last lines of {}:\n{}",
                    self.name,
                    self.log_path.display(),
                    self.log_tail(20)
                );
            }
            if http_status(url, Duration::from_secs(1)).ok() == Some(200) {
                return Ok(start.elapsed());
            }
            if start.elapsed() >= timeout {
                bail!(
                    "{} did not answer 200 on {url} within {timeout:?}; last lines of {}:\n{}",
                    self.name,
                    self.log_path.display(),
                    self.log_tail(20)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL to its whole process group at once — a crash, as `kill -9` does it — and reaps it.
    pub fn kill(&self) -> anyhow::Result<ExitStatus> {
        let mut child = self.lock();
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        // Not reaped yet, so the group it leads is still its own.
        if let Ok(group) = i32::try_from(child.id()) {
            let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
        }
        Ok(child.wait()?)
    }

    /// SIGTERM to its process group, without waiting: what a platform sends to begin a stop.
    pub fn sigterm(&self) -> anyhow::Result<()> {
        let mut child = self.lock();
        if let Some(status) = child.try_wait()? {
            bail!("{} had already exited ({status})", self.name);
        }
        // Not reaped, so the group it leads is still its own.
        let group = i32::try_from(child.id())?;
        killpg(Pid::from_raw(group), Signal::SIGTERM)?;
        Ok(())
    }

    /// SIGTERM, then SIGKILL after `grace`; returns how it exited.
    pub fn stop(self, grace: Duration) -> anyhow::Result<ExitStatus> {
        let status = terminate(&mut self.lock(), Signal::SIGTERM, grace)?;
        Ok(status)
    }

    /// SIGINT, as a terminal's Ctrl-C, then SIGKILL after `grace`: for a service whose SIGTERM
    /// means more than "stop" (the APIs keep serving for `SHUTDOWN_DELAY_MS` after it).
    pub fn interrupt(self, grace: Duration) -> anyhow::Result<ExitStatus> {
        let status = terminate(&mut self.lock(), Signal::SIGINT, grace)?;
        Ok(status)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Child> {
        self.child.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn terminate(child: &mut Child, signal: Signal, grace: Duration) -> std::io::Result<ExitStatus> {
    // An exited child is not signalled: it is reaped, so its pid may belong to someone else.
    if let Some(status) = child.try_wait()? {
        return Ok(status);
    }
    // Not yet reaped, so the pid is still this child's (at worst a zombie), and so is the
    // process group it leads.
    let group = i32::try_from(child.id()).ok().map(Pid::from_raw);
    if let Some(group) = group {
        let _ = killpg(group, signal);
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Some(group) = group {
        let _ = killpg(group, Signal::SIGKILL);
    }
    child.kill()?;
    child.wait()
}

/// Polls `url` (plain `http://host:port/path`) until it answers 200; returns how long that took.
pub fn wait_ready(url: &str, timeout: Duration) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let mut last = String::from("no attempt");
    while start.elapsed() < timeout {
        match http_status(url, Duration::from_secs(1)) {
            Ok(200) => return Ok(start.elapsed()),
            Ok(code) => last = format!("status {code}"),
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("{url} did not answer 200 within {timeout:?} (last: {last})")
}

/// [`wait_ready`] on tokio's blocking pool, for async callers.
pub async fn wait_ready_async(url: String, timeout: Duration) -> anyhow::Result<Duration> {
    tokio::task::spawn_blocking(move || wait_ready(&url, timeout)).await?
}

/// One `GET` over a fresh connection; returns the status code. Enough HTTP/1.1 for a readiness
/// probe, no more (no TLS, no redirects, no body).
pub fn http_status(url: &str, timeout: Duration) -> anyhow::Result<u16> {
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("{url}: only http:// URLs are supported"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let addr = addr
        .to_socket_addrs()
        .with_context(|| format!("resolving {authority}"))?
        .next()
        .with_context(|| format!("{authority} has no address"))?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes())?;
    let mut head = [0u8; 64];
    let mut len = 0;
    while len < 12 {
        let n = stream.read(&mut head[len..])?;
        if n == 0 {
            break;
        }
        len += n;
    }
    let line = String::from_utf8_lossy(&head[..len]);
    let code = line
        .strip_prefix("HTTP/1.")
        .and_then(|r| r.get(2..5))
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("{url}: not an HTTP response: {line:?}"))?;
    Ok(code)
}

/// Finds a workspace binary (`blocking-api`, `mock-deps`, …): next to the running executable (and
/// its parent when that is `deps/`, as for tests), then under `$CARGO_TARGET_DIR` and the workspace's
/// `target/`, release before debug.
pub fn find_binary(name: &str) -> anyhow::Result<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_owned))
    {
        if dir.ends_with("deps") || dir.ends_with("examples") {
            dirs.push(dir.parent().map(Path::to_owned).unwrap_or_default());
        }
        dirs.insert(0, dir);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target_dirs = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .into_iter()
        .chain([workspace.join("target")]);
    for target in target_dirs {
        dirs.push(target.join("release"));
        dirs.push(target.join("debug"));
    }
    find_binary_in(name, &dirs)
}

/// [`find_binary`] over an explicit list of directories.
pub fn find_binary_in(name: &str, dirs: &[PathBuf]) -> anyhow::Result<PathBuf> {
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    if let Some(found) = dirs.iter().map(|d| d.join(&file)).find(|p| p.is_file()) {
        return Ok(found);
    }
    let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    bail!(
        "binary `{name}` not found (looked in: {}); build it first: `cargo build --release -p {name}`",
        looked.join(", ")
    )
}
