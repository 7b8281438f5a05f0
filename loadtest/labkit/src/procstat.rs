//! Resource usage of processes, read from `/proc` (Linux).
//!
//! A [`Sampler`] holds named [`Target`]s — a single process, a process tree (PostgreSQL's postmaster
//! and every backend it forked), or the current process (the load generator itself) — and reads one
//! [`ProcSample`] per target per call. Counters are cumulative; rates come from two samples of the
//! same target ([`cpu_percent`]).
//!
//! CPU time is `utime + stime` from `/proc/PID/stat`, converted with the kernel's clock tick
//! (`sysconf(_SC_CLK_TCK)`). For a tree, each member also contributes `cutime + cstime` (the CPU of
//! children it has reaped), so a backend that exits between two samples does not make the tree's
//! counter go backwards. Memory is resident set size; for a tree it is the sum of the members' RSS,
//! which counts shared memory (PostgreSQL's shared buffers) once per process that touched it — an
//! upper bound, not the tree's real footprint.

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// What to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// One process (its threads included).
    Process(u32),
    /// A process and all its descendants, summed.
    Tree(u32),
    /// The calling process.
    Myself,
}

/// One reading of one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcSample {
    /// Seconds since the [`Sampler`] was created (monotonic clock).
    pub t: f64,
    /// Cumulative CPU time (user + system) in seconds, see the module docs.
    pub cpu_seconds: f64,
    /// Resident set size in bytes (summed over a tree).
    pub rss_bytes: u64,
    /// Number of threads (summed over a tree).
    pub threads: u64,
    /// Open file descriptors (summed over a tree); `None` when `/proc/PID/fd` was not readable.
    pub fds: Option<u64>,
    /// Number of processes read (1, or the size of the tree).
    pub processes: u64,
    /// Cumulative time the process's threads were runnable but waiting for a CPU, in seconds
    /// (`run_delay` of `/proc/PID/task/*/schedstat`); `None` for a tree, or where the kernel does
    /// not report it. Time a thread spends throttled by its cgroup's quota counts too.
    #[serde(default)]
    pub cpu_wait_seconds: Option<f64>,
}

/// Samples named targets; see the module docs.
#[derive(Debug, Clone)]
pub struct Sampler {
    start: Instant,
    targets: Vec<(String, Target)>,
}

impl Default for Sampler {
    fn default() -> Self {
        Self::new()
    }
}

impl Sampler {
    /// A sampler with no targets; its clock (`ProcSample::t`) starts now.
    pub fn new() -> Self {
        Sampler {
            start: Instant::now(),
            targets: Vec::new(),
        }
    }

    /// Adds a target under `name` (names are the caller's, e.g. "blocking-api", "postgres").
    pub fn add(&mut self, name: impl Into<String>, target: Target) -> &mut Self {
        self.targets.push((name.into(), target));
        self
    }

    /// The targets, in the order they were added.
    pub fn targets(&self) -> &[(String, Target)] {
        &self.targets
    }

    /// One sample per target, in the order added; `None` for a target that no longer exists.
    pub fn sample(&self) -> Vec<(String, Option<ProcSample>)> {
        let table = if self
            .targets
            .iter()
            .any(|(_, t)| matches!(t, Target::Tree(_)))
        {
            imp::process_table().ok()
        } else {
            None
        };
        self.targets
            .iter()
            .map(|(name, target)| {
                let usage = match (target, &table) {
                    (Target::Tree(pid), Some(table)) => imp::read_tree(*pid, table),
                    _ => read_usage(*target),
                };
                let sample = usage.ok().map(|u| u.at(self.start.elapsed().as_secs_f64()));
                (name.clone(), sample)
            })
            .collect()
    }
}

/// Reads a target once; `t` is 0 (use a [`Sampler`] for timed series).
pub fn read(target: Target) -> anyhow::Result<ProcSample> {
    Ok(read_usage(target)?.at(0.0))
}

fn read_usage(target: Target) -> anyhow::Result<Usage> {
    match target {
        Target::Process(pid) => imp::read_process(pid),
        Target::Myself => imp::read_process(std::process::id()),
        Target::Tree(pid) => imp::read_tree(pid, &imp::process_table()?),
    }
}

/// `true` while `pid` runs: it exists and is not a zombie waiting to be reaped (the state in
/// `/proc/PID/stat`).
pub fn running(pid: u32) -> bool {
    imp::running(pid)
}

/// Each live process of `root`'s tree with its title and its own CPU (not its children's), and the
/// CPU that `root`'s reaped children left in it (`cutime + cstime`): what a tree's total is made
/// of, for telling PostgreSQL's backends from its WAL writer or checkpointer ([`postgres_role`]).
pub fn tree_parts(root: u32) -> anyhow::Result<TreeParts> {
    imp::tree_parts(root, &imp::process_table()?)
}

/// [`tree_parts`]' answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TreeParts {
    /// `(pid, title, CPU seconds)`: the title is `/proc/PID/cmdline`'s words joined by spaces,
    /// which PostgreSQL rewrites to name each process's job (`postgres: walwriter`).
    pub processes: Vec<(u32, String, f64)>,
    /// CPU seconds of `root`'s children that exited and were reaped.
    pub reaped_children_seconds: f64,
}

impl TreeParts {
    /// CPU seconds each job of the tree used from `prev` to `self` (both read from the same
    /// `root`), the jobs named by `role(title, is_root)`. A process that started in between counts
    /// whole; one gone since `prev` counts under `"exited"`: what its reaping added to `root`'s
    /// children's time, less what `prev` had already counted of it.
    pub fn cpu_since(
        &self,
        prev: &TreeParts,
        root: u32,
        role: impl Fn(&str, bool) -> &'static str,
    ) -> std::collections::BTreeMap<&'static str, f64> {
        let before: std::collections::HashMap<u32, f64> = prev
            .processes
            .iter()
            .map(|(pid, _, cpu)| (*pid, *cpu))
            .collect();
        let mut jobs = std::collections::BTreeMap::new();
        for (pid, title, cpu) in &self.processes {
            let used = cpu - before.get(pid).copied().unwrap_or(0.0);
            *jobs.entry(role(title, *pid == root)).or_insert(0.0) += used.max(0.0);
        }
        let counted_of_gone: f64 = prev
            .processes
            .iter()
            .filter(|(pid, _, _)| !self.processes.iter().any(|(p, _, _)| p == pid))
            .map(|(_, _, cpu)| cpu)
            .sum();
        let reaped = self.reaped_children_seconds - prev.reaped_children_seconds;
        *jobs.entry("exited").or_insert(0.0) += (reaped - counted_of_gone).max(0.0);
        jobs
    }
}

/// The job of a PostgreSQL process, from its title (see [`tree_parts`]): `postmaster` for the
/// server itself (`root`), one of the auxiliary processes' names, or `backends` for a client's
/// session (`postgres: USER DB HOST(PORT) STATE`). Titles as PostgreSQL 13–17 write them.
pub fn postgres_role(title: &str, is_root: bool) -> &'static str {
    if is_root {
        return "postmaster";
    }
    const AUXILIARY: &[&str] = &[
        "walwriter",
        "checkpointer",
        "background writer",
        "autovacuum launcher",
        "autovacuum worker",
        "logical replication launcher",
        "archiver",
        "stats collector",
        "walsender",
        "walreceiver",
    ];
    let job = title.strip_prefix("postgres: ").unwrap_or(title).trim();
    AUXILIARY
        .iter()
        .find(|a| job.starts_with(**a))
        .copied()
        .unwrap_or("backends")
}

/// CPU seconds (user + system) the calling thread has used, from `/proc/thread-self/stat`: what
/// one part of a process costs when that part runs on a thread of its own (the lab's sampler).
pub fn this_thread_cpu_seconds() -> anyhow::Result<f64> {
    imp::this_thread_cpu_seconds()
}

/// `pid` followed by all its live descendants (children of children…), from a scan of `/proc`.
pub fn tree_pids(pid: u32) -> anyhow::Result<Vec<u32>> {
    Ok(imp::descendants(pid, &imp::process_table()?))
}

/// CPU use between two samples of the same target, in percent of one core (200 = two cores busy).
/// `None` if no time passed.
pub fn cpu_percent(prev: &ProcSample, cur: &ProcSample) -> Option<f64> {
    let dt = cur.t - prev.t;
    (dt > 0.0).then(|| 100.0 * (cur.cpu_seconds - prev.cpu_seconds) / dt)
}

/// Time waiting for a CPU between two samples of the same target, in percent of one core (the
/// share of a second its threads, together, were runnable but not running). `None` without both
/// readings; an exited thread's wait leaves the sum, so a drop reads as 0.
pub fn cpu_wait_percent(prev: &ProcSample, cur: &ProcSample) -> Option<f64> {
    let dt = cur.t - prev.t;
    let (a, b) = (prev.cpu_wait_seconds?, cur.cpu_wait_seconds?);
    (dt > 0.0).then(|| 100.0 * (b - a).max(0.0) / dt)
}

/// Counters before a timestamp is attached.
#[derive(Debug, Default)]
struct Usage {
    cpu_wait_seconds: Option<f64>,
    cpu_seconds: f64,
    rss_bytes: u64,
    threads: u64,
    fds: Option<u64>,
    processes: u64,
}

impl Usage {
    fn at(self, t: f64) -> ProcSample {
        ProcSample {
            t,
            cpu_seconds: self.cpu_seconds,
            rss_bytes: self.rss_bytes,
            threads: self.threads,
            fds: self.fds,
            processes: self.processes,
            cpu_wait_seconds: self.cpu_wait_seconds,
        }
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::HashMap;

    use anyhow::Context;
    use procfs::process::{Process, Stat};

    use super::Usage;

    /// Every readable process's stat, by pid.
    pub(super) type Table = HashMap<u32, Stat>;

    pub(super) fn process_table() -> anyhow::Result<Table> {
        let all = procfs::process::all_processes().context("listing /proc")?;
        // Processes that exit during the scan are skipped.
        Ok(all
            .filter_map(|p| p.ok()?.stat().ok())
            .filter_map(|s| Some((u32::try_from(s.pid).ok()?, s)))
            .collect())
    }

    pub(super) fn descendants(root: u32, table: &Table) -> Vec<u32> {
        let mut children: HashMap<i32, Vec<u32>> = HashMap::new();
        for (pid, stat) in table {
            children.entry(stat.ppid).or_default().push(*pid);
        }
        let mut out = vec![root];
        let mut i = 0;
        while i < out.len() {
            if let Some(kids) = i32::try_from(out[i]).ok().and_then(|p| children.get(&p)) {
                out.extend(kids);
            }
            i += 1;
        }
        out
    }

    pub(super) fn read_process(pid: u32) -> anyhow::Result<Usage> {
        let process = open(pid)?;
        let stat = process
            .stat()
            .with_context(|| format!("reading /proc/{pid}/stat"))?;
        let mut usage = Usage::default();
        add(&mut usage, &process, &stat, false);
        usage.cpu_wait_seconds = run_delay(&process);
        Ok(usage)
    }

    pub(super) fn read_tree(root: u32, table: &Table) -> anyhow::Result<Usage> {
        anyhow::ensure!(table.contains_key(&root), "process {root} not found");
        let mut usage = Usage {
            fds: Some(0),
            ..Usage::default()
        };
        for pid in descendants(root, table) {
            // A member that exited since the scan is skipped; its CPU moves to its parent's cutime.
            if let (Ok(process), Some(stat)) = (open(pid), table.get(&pid)) {
                add(&mut usage, &process, stat, true);
            }
        }
        Ok(usage)
    }

    pub(super) fn tree_parts(root: u32, table: &Table) -> anyhow::Result<super::TreeParts> {
        let tick = procfs::ticks_per_second() as f64;
        let root_stat = table
            .get(&root)
            .with_context(|| format!("process {root} not found"))?;
        let mut parts = super::TreeParts {
            reaped_children_seconds: (root_stat.cutime + root_stat.cstime).max(0) as f64 / tick,
            ..Default::default()
        };
        for pid in descendants(root, table) {
            let (Ok(process), Some(stat)) = (open(pid), table.get(&pid)) else {
                continue; // exited since the scan: its CPU is in its parent's cutime
            };
            let title = process
                .cmdline()
                .map(|words| words.join(" "))
                .unwrap_or_default();
            let cpu = (stat.utime + stat.stime) as f64 / tick;
            parts.processes.push((pid, title, cpu));
        }
        Ok(parts)
    }

    pub(super) fn this_thread_cpu_seconds() -> anyhow::Result<f64> {
        use procfs_core::FromRead;
        let stat =
            Stat::from_file("/proc/thread-self/stat").context("reading /proc/thread-self/stat")?;
        Ok((stat.utime + stat.stime) as f64 / procfs::ticks_per_second() as f64)
    }

    /// The sum of the threads' `run_delay` (ns in schedstat), in seconds; threads that exit
    /// during the walk are skipped.
    fn run_delay(process: &Process) -> Option<f64> {
        let ns: u64 = process
            .tasks()
            .ok()?
            .filter_map(|t| t.ok()?.schedstat().ok())
            .map(|s| s.run_delay)
            .sum();
        Some(ns as f64 / 1e9)
    }

    pub(super) fn running(pid: u32) -> bool {
        open(pid).is_ok_and(|p| p.stat().is_ok_and(|s| s.state != 'Z'))
    }

    fn open(pid: u32) -> anyhow::Result<Process> {
        let id = i32::try_from(pid).context("pid out of range")?;
        Process::new(id).with_context(|| format!("process {pid} not found"))
    }

    fn add(usage: &mut Usage, process: &Process, stat: &Stat, with_children: bool) {
        let tick = procfs::ticks_per_second() as f64;
        let mut ticks = (stat.utime + stat.stime) as f64;
        if with_children {
            ticks += (stat.cutime + stat.cstime).max(0) as f64;
        }
        usage.cpu_seconds += ticks / tick;
        usage.rss_bytes += stat.rss * procfs::page_size();
        usage.threads += u64::try_from(stat.num_threads).unwrap_or(0);
        let fds = process.fd_count().ok().map(|n| n as u64);
        usage.fds = match (usage.processes, usage.fds, fds) {
            (0, _, fds) => fds,
            (_, Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        usage.processes += 1;
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Usage;

    pub(super) type Table = ();
    const UNSUPPORTED: &str = "process sampling needs Linux's /proc";

    pub(super) fn process_table() -> anyhow::Result<Table> {
        anyhow::bail!(UNSUPPORTED)
    }
    pub(super) fn descendants(root: u32, _: &Table) -> Vec<u32> {
        vec![root]
    }
    pub(super) fn read_process(_: u32) -> anyhow::Result<Usage> {
        anyhow::bail!(UNSUPPORTED)
    }
    pub(super) fn read_tree(_: u32, _: &Table) -> anyhow::Result<Usage> {
        anyhow::bail!(UNSUPPORTED)
    }
    pub(super) fn tree_parts(_: u32, _: &Table) -> anyhow::Result<super::TreeParts> {
        anyhow::bail!(UNSUPPORTED)
    }
    pub(super) fn this_thread_cpu_seconds() -> anyhow::Result<f64> {
        anyhow::bail!(UNSUPPORTED)
    }
    pub(super) fn running(_: u32) -> bool {
        false
    }
}
