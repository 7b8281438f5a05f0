//! The services the lab starts: PostgreSQL, mock-deps and the API under test, each as a child
//! process (labkit::process) whose output goes to `<out>/logs/`. The API goes into its own cgroup
//! (its pod: `--api-cpus`, `--api-memory-mib`, by default 1 CPU, 1 GiB) right after it is spawned; PostgreSQL, mock-deps and the generator stay outside.
//! Limits are read back from the kernel: the results only claim what the kernel holds.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{Context, Result};
use labkit::cgroup::{LimitedGroup, ResourceLimits};
use labkit::pg::EphemeralPostgres;
use labkit::process::{ServiceProcess, find_binary};

use crate::lab_args::Durability;
use lab_results::{Limits, Pinning};

/// How long a service may take to answer its readiness URL.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// The database the APIs use.
#[derive(Debug)]
pub struct Database {
    pub url: String,
    /// The postmaster, when the lab started the cluster (sampled with its backends).
    pub pid: Option<u32>,
    cluster: Option<EphemeralPostgres>,
}

impl Database {
    /// `url` if given, else an ephemeral cluster from the system's PostgreSQL binaries.
    pub fn open(url: Option<&str>) -> Result<Database> {
        Self::open_with(url, Durability::On)
    }

    /// [`Database::open_with`] with the harness's `--pg-setting`s.
    pub fn open_for(url: Option<&str>, harness: &crate::lab_args::HarnessArgs) -> Result<Database> {
        Self::open_with_settings(url, harness.db_durability, &harness.pg_setting_pairs())
    }

    /// [`Database::open`]; an ephemeral cluster is durable with [`Durability::On`] (`fsync`,
    /// `synchronous_commit` and `full_page_writes` on, which labkit turns off by default): every
    /// commit waits for its WAL flush, and a committed order survives an immediate restart.
    pub fn open_with(url: Option<&str>, durability: Durability) -> Result<Database> {
        Self::open_with_settings(url, durability, &[])
    }

    /// [`Database::open_with`] with more server settings for an ephemeral cluster.
    pub fn open_with_settings(
        url: Option<&str>,
        durability: Durability,
        extra: &[(&str, &str)],
    ) -> Result<Database> {
        if let Some(url) = url {
            return Ok(Database {
                url: url.to_owned(),
                pid: None,
                cluster: None,
            });
        }
        let mut overrides: Vec<(&str, &str)> = match durability {
            Durability::On => vec![
                ("fsync", "on"),
                ("synchronous_commit", "on"),
                ("full_page_writes", "on"),
            ],
            Durability::Off => Vec::new(),
        };
        overrides.extend_from_slice(extra);
        let pg = EphemeralPostgres::start_with_settings(&overrides).context(
            "starting an ephemeral PostgreSQL (install the PostgreSQL server package, e.g. \
             `apt-get install postgresql`, or pass --database-url postgres://…)",
        )?;
        Ok(Database {
            url: pg.url(),
            pid: Some(pg.pid()),
            cluster: Some(pg),
        })
    }

    /// The URL the APIs are given: the lab's own cluster over its Unix-domain socket (both APIs
    /// alike; the harness's PostgreSQL CPU per order is what it saves) unless `via` says TCP, any
    /// other database at `url`. A `--db-rtt-ms` proxy is TCP and takes [`Database::url`] instead.
    pub fn api_url(&self, via: crate::lab_args::DbVia) -> String {
        match (&self.cluster, via) {
            (Some(pg), crate::lab_args::DbVia::Socket) => pg.socket_url(),
            _ => self.url.clone(),
        }
    }

    /// Points a scenario's run at this database, which the scenario started for all its runs:
    /// the lab's own connections at [`Database::url`], the APIs at [`Database::api_url`], and its
    /// postmaster sampled and its durability stated as when the lab starts it.
    pub fn share_with(&self, args: &mut crate::lab_args::LabArgs) {
        args.database_url = Some(self.url.clone());
        args.api_database_url = Some(self.api_url(args.harness.db_via));
        args.lab_owned_database = self.is_ephemeral();
        args.database_pid = self.pid;
    }

    /// `true` when the lab started this cluster (and so may restart it).
    pub fn is_ephemeral(&self) -> bool {
        self.cluster.is_some()
    }

    /// `pg_ctl restart -m immediate` of the lab's own cluster (a crash and recovery).
    pub fn restart_immediate(&self) -> Result<u32> {
        self.cluster
            .as_ref()
            .context("the database is not the lab's own cluster: it cannot be restarted")?
            .restart_immediate()
    }
}

/// Where this lab put the API and the harness ([`place_harness`]): set once per process.
static PLACEMENT: OnceLock<Result<Pinning, String>> = OnceLock::new();

/// On a machine with two CPUs or more, pins this process — the generator, and every harness
/// process it starts from now on (PostgreSQL, mock-deps, NATS, the latency proxy) — to all CPUs
/// but the last, and every API started afterwards ([`ApiProcess::start`]) to the last one: the
/// API alone on its core, so that a harness-bound flag speaks about the harness. `Ok(Err(why))`
/// when it cannot or must not (`pin` false); the API's limits then say so. Idempotent.
pub fn place_harness(pin: bool) -> Result<std::result::Result<Pinning, String>> {
    if let Some(done) = PLACEMENT.get() {
        return Ok(done.clone());
    }
    let placed = if pin {
        match labkit::affinity::reserve_last_cpu()? {
            Some(split) => Ok(Pinning {
                api_cpus: split.api,
                harness_cpus: split.harness,
            }),
            None => Err(format!(
                "not pinned: {} CPU available, the API shares it with the harness",
                labkit::affinity::allowed_cpus().map_or(0, |c| c.len())
            )),
        }
    } else {
        Err("not pinned (--no-pin): the API shares the CPUs with the harness".to_owned())
    };
    Ok(PLACEMENT.get_or_init(|| placed).clone())
}

/// Pins `pid` to the API's CPU when [`place_harness`] reserved one; notes in `limits` either way.
fn pin_api(pid: u32, limits: &mut Limits) -> Result<()> {
    match PLACEMENT.get() {
        Some(Ok(p)) => {
            labkit::affinity::pin_process(pid, &p.api_cpus)
                .with_context(|| format!("pinning pid {pid} to CPU {:?}", p.api_cpus))?;
            limits.pinning = Some(p.clone());
        }
        Some(Err(why)) => {
            limits.note.push_str("; ");
            limits.note.push_str(why);
        }
        None => {}
    }
    Ok(())
}

/// A free 127.0.0.1 port (bound then released: a tiny race the lab accepts).
pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

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

    /// `kill -9` of the API's process group: a crash, nothing flushed, nothing answered.
    pub fn kill(&self) -> Result<()> {
        self.process.kill()?;
        Ok(())
    }

    /// Starts the API again with the same binary, settings and port, in the same cgroup, and
    /// waits for `/ready`; `pid` is the new process's.
    pub fn restart(&mut self) -> Result<()> {
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
        self.process = process;
        Ok(())
    }

    /// Stops the process (SIGTERM, then SIGKILL after the grace period) and removes its cgroup.
    pub fn stop(self) -> Result<()> {
        self.process.stop(labkit::process::STOP_GRACE)?;
        Ok(())
    }
}

/// Limits that were not applied, with the reason.
pub fn not_enforced(why: &str) -> Limits {
    Limits {
        limits_enforced: false,
        cpu_cores: None,
        cpu_period_us: None,
        memory_bytes: None,
        mechanism: "none".to_owned(),
        note: format!("limits NOT enforced: {why}"),
        pinning: None,
    }
}

fn confine(name: &str, pid: u32, pod: ResourceLimits) -> (Option<LimitedGroup>, Limits) {
    let group = match LimitedGroup::create(name, pod) {
        Ok(g) => g,
        Err(e) => return (None, not_enforced(&format!("cannot create a cgroup: {e}"))),
    };
    if let Err(e) = group.add_pid(pid) {
        return (
            None,
            not_enforced(&format!("cannot move pid {pid} into {}: {e}", group.name())),
        );
    }
    let held = group.enforced();
    let enforced = held.cpu_quota.is_some() && held.memory_bytes.is_some();
    let mut note = format!("cgroup {} at {:?}", held.version, held.paths);
    if !enforced {
        note = format!("limits NOT enforced: the kernel does not hold them ({note})");
    }
    for n in &held.notes {
        note.push_str("; ");
        note.push_str(n);
    }
    let limits = Limits {
        limits_enforced: enforced,
        cpu_cores: held.cpu_quota,
        cpu_period_us: held.cpu_period_us,
        memory_bytes: held.memory_bytes,
        mechanism: format!("cgroup {}", held.version),
        note,
        pinning: None,
    };
    (Some(group), limits)
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
