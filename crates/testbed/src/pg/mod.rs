//! A throw-away PostgreSQL cluster for one lab run or one run of the tests.
//!
//! [`EphemeralPostgres::start`] runs `initdb` (trust authentication) in a fresh temporary directory
//! and starts the server on a free 127.0.0.1 port. When the caller is root the server runs as the
//! `postgres` user (PostgreSQL refuses to run as root): the commands get that uid/gid directly
//! (`std::os::unix::process::CommandExt`, no `runuser`/PAM in between) and the directory is chowned
//! to it. The server is stopped and the directory removed on drop, and on Ctrl-C (see
//! [`crate::cleanup`]).
//!
//! Durability is traded for less disk noise: [`DEFAULT_SETTINGS`] turns `fsync`,
//! `synchronous_commit` and `full_page_writes` off. Reports must print [`EphemeralPostgres::settings`]
//! so a reader knows; pass `("fsync", "on")` etc. to [`EphemeralPostgres::start_with_settings`] for a
//! durable run.
//!
//! This is the project's one ephemeral PostgreSQL: the lab and the tests use it in-process, and
//! the shell scripts (`scripts/test.sh`, `scripts/profile-api.sh`) through the `pg-ephemeral`
//! binary beside it (`start` leaves a cluster running past the process,
//! [`EphemeralPostgres::detach`]; `stop DIR` ends it, [`stop_detached`]).

use std::fs;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{Context, bail};

use crate::cleanup::{self, CleanupGuard};

mod bins;
pub use bins::{find_bin_dir, find_bin_dir_in};

/// `max_connections` of the cluster; the pools of all services together must stay well below.
pub const MAX_CONNECTIONS: u32 = 300;

/// Server settings used by [`EphemeralPostgres::start`] (the port and socket directory come on top).
pub const DEFAULT_SETTINGS: &[(&str, &str)] = &[
    ("listen_addresses", "127.0.0.1"),
    ("max_connections", "300"),
    ("fsync", "off"),
    ("synchronous_commit", "off"),
    ("full_page_writes", "off"),
    // Statements per order are counted with pg_stat_statements (`CREATE EXTENSION` per database).
    ("shared_preload_libraries", "pg_stat_statements"),
    // EVENTS_MODE=two-phase ends each order's transaction with PREPARE TRANSACTION.
    ("max_prepared_transactions", "64"),
];

/// A running cluster; stopped and deleted on drop.
#[derive(Debug)]
pub struct EphemeralPostgres {
    port: u16,
    /// The postmaster; a new one after [`EphemeralPostgres::restart_immediate`].
    pid: AtomicU32,
    dir: PathBuf,
    bin_dir: PathBuf,
    settings: Vec<(String, String)>,
    _guard: CleanupGuard,
}

/// The uid/gid the server runs as when we are root.
#[derive(Debug, Clone, Copy)]
struct Owner {
    uid: u32,
    gid: u32,
}

impl EphemeralPostgres {
    /// Starts a cluster with [`DEFAULT_SETTINGS`].
    pub fn start() -> anyhow::Result<EphemeralPostgres> {
        Self::start_with_settings(&[])
    }

    /// Starts a cluster with [`DEFAULT_SETTINGS`], each overridden (or extended) by `overrides`.
    pub fn start_with_settings(overrides: &[(&str, &str)]) -> anyhow::Result<EphemeralPostgres> {
        let mut settings: Vec<(String, String)> = DEFAULT_SETTINGS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        for (name, value) in overrides {
            match settings.iter_mut().find(|(k, _)| k == name) {
                Some(entry) => entry.1 = value.to_string(),
                None => settings.push((name.to_string(), value.to_string())),
            }
        }
        let bin_dir = find_bin_dir()?;
        let owner = server_owner()?;
        let dir = tempfile::Builder::new()
            .prefix("testbed-pg-")
            .tempdir()
            .context("creating a temporary directory")?
            .keep();
        // From here on the directory (and any server in it) is removed however we leave.
        let guard = {
            let (bin_dir, dir) = (bin_dir.clone(), dir.clone());
            cleanup::register(format!("stop PostgreSQL in {}", dir.display()), move || {
                stop_and_remove(&bin_dir, &dir, owner)
            })
        };
        if let Some(o) = owner {
            std::os::unix::fs::chown(&dir, Some(o.uid), Some(o.gid))
                .with_context(|| format!("chown {} to the postgres user", dir.display()))?;
        }
        let data = dir.join("data");
        run_logged(
            command(&bin_dir.join("initdb"), &dir, owner)
                .args([
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                ])
                .arg("-D")
                .arg(&data),
            &dir.join("initdb.log"),
        )
        .context("initdb failed")?;
        let conf: String = settings
            .iter()
            .map(|(k, v)| format!("{k} = '{v}'\n"))
            .chain([format!("unix_socket_directories = '{}'\n", dir.display())])
            .collect();
        fs::write(data.join("testbed.conf"), conf)?;
        let mut main_conf = fs::read_to_string(data.join("postgresql.conf"))?;
        main_conf.push_str("\ninclude 'testbed.conf'\n");
        fs::write(data.join("postgresql.conf"), main_conf)?;

        // A free port can be taken by someone else before the server binds it: retry.
        let mut last_error = None;
        for _ in 0..3 {
            let port = free_port()?;
            let started = run_logged(
                command(&bin_dir.join("pg_ctl"), &dir, owner)
                    .args(["start", "-w", "-t", "60", "-o", &format!("-p {port}"), "-D"])
                    .arg(&data)
                    .arg("-l")
                    .arg(dir.join("server.log")),
                &dir.join("pg_ctl.log"),
            );
            match started {
                Ok(()) => {
                    let pid = postmaster_pid(&data).context("reading postmaster.pid")?;
                    return Ok(EphemeralPostgres {
                        port,
                        pid: AtomicU32::new(pid),
                        dir,
                        bin_dir,
                        settings,
                        _guard: guard,
                    });
                }
                Err(e) => last_error = Some(e),
            }
        }
        let log = fs::read_to_string(dir.join("server.log")).unwrap_or_default();
        Err(last_error.unwrap_or_else(|| anyhow::anyhow!("no attempt")))
            .with_context(|| format!("starting PostgreSQL failed; server.log:\n{log}"))
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres` (trust authentication, no password).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The same server over its Unix-domain socket:
    /// `postgres://postgres@localhost:PORT/postgres?host=DIR`. libpq (diesel) and sqlx both read
    /// a `host` parameter that starts with `/` as the directory of the socket `.s.PGSQL.PORT`, and
    /// it overrides the URL's host; the port names the socket. A local client saves the TCP/IP
    /// stack on both sides of every round trip (pgbench here, simple-update, 16 clients on one
    /// core: 6,413 transactions/s over TCP, 7,015 over the socket).
    pub fn socket_url(&self) -> String {
        let mut url = url::Url::parse(&format!(
            "postgres://postgres@localhost:{}/postgres",
            self.port
        ))
        .expect("a literal URL");
        url.query_pairs_mut()
            .append_pair("host", &self.dir.display().to_string());
        url.into()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The postmaster's pid (the current one, after a restart).
    pub fn pid(&self) -> u32 {
        self.pid.load(Ordering::SeqCst)
    }

    /// `pg_ctl restart -m immediate`: every server process quits at once, without a checkpoint,
    /// as in a crash; the server then starts again on the same port and recovers from its WAL.
    /// Committed transactions survive only with `synchronous_commit = on` (with it off, the last
    /// commits may not have reached the WAL). Returns the new postmaster's pid.
    pub fn restart_immediate(&self) -> anyhow::Result<u32> {
        let data = self.dir.join("data");
        run_logged(
            command(&self.bin_dir.join("pg_ctl"), &self.dir, server_owner()?)
                .args(["restart", "-m", "immediate", "-w", "-t", "60", "-D"])
                .arg(&data)
                .arg("-l")
                .arg(self.dir.join("server.log")),
            &self.dir.join("pg_ctl-restart.log"),
        )
        .context("pg_ctl restart -m immediate failed")?;
        let pid = postmaster_pid(&data).context("reading postmaster.pid after the restart")?;
        self.pid.store(pid, Ordering::SeqCst);
        Ok(pid)
    }

    /// The settings the server was started with, as (name, value), for the report.
    pub fn settings(&self) -> &[(String, String)] {
        &self.settings
    }

    /// The effective `max_connections`.
    pub fn max_connections(&self) -> u32 {
        self.settings
            .iter()
            .find(|(k, _)| k == "max_connections")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(MAX_CONNECTIONS)
    }

    /// The directory holding the cluster (`data/`), its logs and its Unix socket.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the PostgreSQL binaries were found (`psql` usually sits there too).
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// The server log.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// Stops the server and removes its directory now (dropping does the same).
    pub fn stop(self) {}

    /// Leaves the server running after this value, and this process, are gone; returns its
    /// directory, which [`stop_detached`] takes to stop it.
    pub fn detach(self) -> PathBuf {
        let EphemeralPostgres { dir, _guard, .. } = self;
        _guard.disarm();
        dir
    }
}

/// Stops a cluster left running by [`EphemeralPostgres::detach`] (`dir` is what that returned)
/// and removes its directory.
pub fn stop_detached(dir: &Path) -> anyhow::Result<()> {
    stop_and_remove(&find_bin_dir()?, dir, server_owner()?);
    Ok(())
}

fn server_owner() -> anyhow::Result<Option<Owner>> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    let user = nix::unistd::User::from_name("postgres")
        .context("looking up the postgres user")?
        .context(
            "running as root, which PostgreSQL refuses, and there is no `postgres` user to run it \
             as: create one (`useradd --system postgres`) or pass `--database-url`",
        )?;
    Ok(Some(Owner {
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
    }))
}

/// A command run as `owner`, from `dir` (the postgres user may not be able to enter our cwd).
fn command(program: &Path, dir: &Path, owner: Option<Owner>) -> Command {
    let mut command = Command::new(program);
    command.current_dir(dir);
    if let Some(o) = owner {
        command
            .uid(o.uid)
            .gid(o.gid)
            .env("USER", "postgres")
            .env("HOME", dir);
    }
    command
}

fn run_logged(command: &mut Command, log: &Path) -> anyhow::Result<()> {
    let output = command
        .output()
        .with_context(|| format!("running {command:?}"))?;
    let text = [output.stdout, output.stderr].concat();
    let _ = fs::write(log, &text);
    if !output.status.success() {
        bail!(
            "{command:?} {}:\n{}",
            output.status,
            String::from_utf8_lossy(&text)
        );
    }
    Ok(())
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn postmaster_pid(data: &Path) -> anyhow::Result<u32> {
    let text = fs::read_to_string(data.join("postmaster.pid"))?;
    Ok(text.lines().next().unwrap_or_default().trim().parse()?)
}

/// Fast shutdown; SIGKILL if that fails; then the directory goes.
fn stop_and_remove(bin_dir: &Path, dir: &Path, owner: Option<Owner>) {
    let data = dir.join("data");
    if let Ok(pid) = postmaster_pid(&data) {
        let stopped = command(&bin_dir.join("pg_ctl"), dir, owner)
            .args(["stop", "-m", "fast", "-w", "-t", "20", "-D"])
            .arg(&data)
            .output()
            .is_ok_and(|o| o.status.success());
        if !stopped && let Ok(pid) = i32::try_from(pid) {
            let pid = nix::unistd::Pid::from_raw(pid);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            // Backends notice the postmaster's death and exit by themselves.
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
    }
    for _ in 0..5 {
        if fs::remove_dir_all(dir).is_ok() || !dir.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    eprintln!("testbed: could not remove {}", dir.display());
}
