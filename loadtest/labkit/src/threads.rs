//! Where a process spends its CPU, thread by thread, over a window: the split of one CPU figure
//! by what each thread does (an event loop, the request threads, an HTTP client's runtime, a
//! pool's workers), named from the thread's `comm` by a role function the caller gives.
//!
//! A [`Ledger`] is opened with a first [`Snapshot`] and fed more of them (once a second in the
//! lab's sampler, or from a [`Watch`]); each thread's counters are kept as last seen, keyed by its
//! id and start time (a reused id is another thread). [`Ledger::account`] then gives each thread's
//! use from the first snapshot, or from its birth, to the last time it was seen:
//!
//! - CPU, user and system apart: `utime`, `stime` of `/proc/PID/task/TID/stat` (clock ticks);
//! - run time: `sum_exec_runtime` of `/proc/PID/task/TID/schedstat` (ns, where the kernel keeps
//!   schedstats);
//! - switches: `voluntary_ctxt_switches` (it blocked: a read, a lock, a sleep) and
//!   `nonvoluntary_ctxt_switches` (it was preempted) of `/proc/PID/task/TID/status`.
//!
//! A thread's CPU is its run time where the kernel keeps schedstats, split into user and system
//! as its ticks are ([`Account::by_role`]): its ticks alone are its run time cut to whole ticks at
//! each reading, which over 200 threads that each run a few ms a second loses a third of their
//! CPU. A thread that exits between two snapshots takes the use it had since the last one with
//! it; so does one born and gone between two. That part is not lost: the process's own
//! `utime`/`stime` (`/proc/PID/stat`) include its exited threads (its sum is cut to ticks once),
//! so [`Account::unseen`] is the process's use over the window less the threads'. It is clamped at
//! zero: the process's total is read a moment after its threads', and cut to a tick. Switches have no such total (the process's `status` counts its main thread's only): an
//! exited thread's switches are those it had when last seen.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A thread's counters at one reading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Clock ticks in user and in system mode.
    pub user_ticks: u64,
    pub system_ticks: u64,
    /// Nanoseconds on a CPU (`None`: no schedstat).
    pub run_ns: Option<u64>,
    pub voluntary: u64,
    pub involuntary: u64,
}

impl Counters {
    /// What was used from `before` to `self` (no counter goes back; saturating all the same).
    fn since(&self, before: &Counters) -> Counters {
        Counters {
            user_ticks: self.user_ticks.saturating_sub(before.user_ticks),
            system_ticks: self.system_ticks.saturating_sub(before.system_ticks),
            run_ns: self
                .run_ns
                .map(|n| n.saturating_sub(before.run_ns.unwrap_or(0))),
            voluntary: self.voluntary.saturating_sub(before.voluntary),
            involuntary: self.involuntary.saturating_sub(before.involuntary),
        }
    }
}

/// One thread at one reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadReading {
    pub tid: u32,
    /// `starttime` of its `stat` (ticks after boot): with `tid`, names the thread for good.
    pub start: u64,
    /// Its name (`comm`, at most 15 bytes).
    pub comm: String,
    pub counters: Counters,
}

/// Every live thread of a process, then the process's own CPU (read after the threads, so that it
/// covers them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub threads: Vec<ThreadReading>,
    /// `utime`, `stime` of `/proc/PID/stat`: every thread's, the exited ones' included.
    pub process_user_ticks: u64,
    pub process_system_ticks: u64,
}

/// Reads `pid`'s threads; a thread that exits during the walk is skipped.
pub fn snapshot(pid: u32) -> anyhow::Result<Snapshot> {
    imp::snapshot(pid)
}

type Key = (u32, u64);

/// Threads' counters from a first snapshot on; see the module docs.
#[derive(Debug, Clone)]
pub struct Ledger {
    /// Counters at the first snapshot, of the threads alive then.
    first: HashMap<Key, Counters>,
    /// Each thread seen, as last seen.
    last: HashMap<Key, (String, Counters)>,
    /// The threads of the latest snapshot.
    alive: HashSet<Key>,
    process_first: (u64, u64),
    process_last: (u64, u64),
    snapshots: u32,
}

impl Ledger {
    /// A ledger whose window starts at `first`.
    pub fn begin(first: Snapshot) -> Ledger {
        let mut ledger = Ledger {
            first: first
                .threads
                .iter()
                .map(|t| ((t.tid, t.start), t.counters))
                .collect(),
            last: HashMap::new(),
            alive: HashSet::new(),
            process_first: (first.process_user_ticks, first.process_system_ticks),
            process_last: (0, 0),
            snapshots: 0,
        };
        ledger.observe(first);
        ledger
    }

    /// One more reading: every thread in it is as last seen.
    pub fn observe(&mut self, s: Snapshot) {
        self.alive = s.threads.iter().map(|t| (t.tid, t.start)).collect();
        for t in s.threads {
            self.last.insert((t.tid, t.start), (t.comm, t.counters));
        }
        self.process_last = (s.process_user_ticks, s.process_system_ticks);
        self.snapshots += 1;
    }

    /// Each thread's use over the window so far, and the process's.
    pub fn account(&self) -> Account {
        let tick = crate::counters::ticks_per_second();
        let mut threads: Vec<ThreadUse> = self
            .last
            .iter()
            .map(|(key, (comm, now))| {
                let used = now.since(&self.first.get(key).copied().unwrap_or_default());
                ThreadUse {
                    tid: key.0,
                    comm: comm.clone(),
                    gone: !self.alive.contains(key),
                    user_s: used.user_ticks as f64 / tick,
                    system_s: used.system_ticks as f64 / tick,
                    run_s: used.run_ns.map(|n| n as f64 / 1e9),
                    voluntary: used.voluntary,
                    involuntary: used.involuntary,
                }
            })
            .collect();
        threads.sort_by_key(|t| t.tid);
        let seconds = |last: u64, first: u64| last.saturating_sub(first) as f64 / tick;
        Account {
            threads,
            process_user_s: seconds(self.process_last.0, self.process_first.0),
            process_system_s: seconds(self.process_last.1, self.process_first.1),
            snapshots: self.snapshots,
        }
    }
}

/// One thread's use over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadUse {
    pub tid: u32,
    pub comm: String,
    /// Not in the window's last snapshot: it exited (its use is up to when it was last seen).
    pub gone: bool,
    pub user_s: f64,
    pub system_s: f64,
    pub run_s: Option<f64>,
    pub voluntary: u64,
    pub involuntary: u64,
}

/// What a [`Ledger`] counted over its window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Account {
    pub threads: Vec<ThreadUse>,
    /// The process's CPU over the window, exited threads included.
    pub process_user_s: f64,
    pub process_system_s: f64,
    /// Snapshots taken, the first included.
    pub snapshots: u32,
}

/// Threads of one role, summed over a window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoleUse {
    pub threads: u32,
    /// Of them, exited before the window's end.
    pub gone: u32,
    /// CPU seconds, user and system: see [`Account::by_role`].
    pub user_s: f64,
    pub system_s: f64,
    /// Schedstat's run time; `None` when a thread of the role had none.
    pub run_s: Option<f64>,
    pub voluntary: u64,
    pub involuntary: u64,
}

impl ThreadUse {
    /// Its CPU seconds: its run time where schedstat gave one (ns, exact), else its ticks.
    pub fn cpu_s(&self) -> f64 {
        self.run_s.unwrap_or(self.user_s + self.system_s)
    }
}

impl Account {
    /// The process's share of its CPU in user mode over the window (0.5 without any).
    fn user_ratio(&self) -> f64 {
        ratio(self.process_user_s, self.process_system_s).unwrap_or(0.5)
    }

    /// `(user, system)` seconds of the process that no thread seen accounts for: threads that
    /// exited since they were last seen, or lived between two snapshots (clamped at zero), split
    /// as the process's CPU is.
    pub fn unseen(&self) -> (f64, f64) {
        let seen: f64 = self.threads.iter().map(ThreadUse::cpu_s).sum();
        let left = (self.process_user_s + self.process_system_s - seen).max(0.0);
        (left * self.user_ratio(), left * (1.0 - self.user_ratio()))
    }

    /// The threads summed by `role(comm)`. A role's CPU is its threads' run time (schedstat's
    /// ns), split into user and system as their ticks are: a thread's ticks are its run time
    /// rounded down to whole ticks at each reading, which, summed over 200 threads that each run
    /// a few ms a second, loses whole ticks that the run time keeps.
    pub fn by_role<K: Ord>(&self, role: impl Fn(&str) -> K) -> BTreeMap<K, RoleUse> {
        let mut roles: BTreeMap<K, (RoleUse, f64, f64)> = BTreeMap::new();
        for t in &self.threads {
            let (r, user_ticks, system_ticks) = roles.entry(role(&t.comm)).or_insert_with(|| {
                let r = RoleUse {
                    run_s: Some(0.0),
                    ..RoleUse::default()
                };
                (r, 0.0, 0.0)
            });
            r.threads += 1;
            r.gone += u32::from(t.gone);
            *user_ticks += t.user_s;
            *system_ticks += t.system_s;
            r.user_s += t.cpu_s();
            r.run_s = r.run_s.zip(t.run_s).map(|(a, b)| a + b);
            r.voluntary += t.voluntary;
            r.involuntary += t.involuntary;
        }
        roles
            .into_iter()
            .map(|(k, (mut r, user, system))| {
                let cpu = r.user_s;
                let user_share = ratio(user, system).unwrap_or(self.user_ratio());
                (r.user_s, r.system_s) = (cpu * user_share, cpu * (1.0 - user_share));
                (k, r)
            })
            .collect()
    }
}

/// `user ÷ (user + system)`; `None` when both are zero.
fn ratio(user: f64, system: f64) -> Option<f64> {
    (user + system > 0.0).then(|| user / (user + system))
}

/// A [`Ledger`] fed from a thread of its own every `every` until [`Watch::finish`].
pub struct Watch {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<anyhow::Result<Account>>,
}

impl Watch {
    /// Takes the first snapshot of `pid` now (its window starts here), then one every `every`.
    pub fn start(pid: u32, every: Duration) -> anyhow::Result<Watch> {
        let mut ledger = Ledger::begin(snapshot(pid)?);
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let handle = std::thread::Builder::new()
            .name("thread-watch".into())
            .spawn(move || {
                // Sleeps in short steps, so that `finish` does not wait for a whole period.
                let step = every.min(Duration::from_millis(20));
                let mut next = std::time::Instant::now() + every;
                while !stopped.load(Ordering::SeqCst) {
                    if std::time::Instant::now() >= next {
                        ledger.observe(snapshot(pid)?);
                        next += every;
                    }
                    std::thread::sleep(step);
                }
                // The window's end.
                ledger.observe(snapshot(pid)?);
                Ok(ledger.account())
            })?;
        Ok(Watch { stop, handle })
    }

    /// Ends the window with a last snapshot; the account from the first to it.
    pub fn finish(self) -> anyhow::Result<Account> {
        self.stop.store(true, Ordering::SeqCst);
        self.handle
            .join()
            .map_err(|_| anyhow::anyhow!("the thread watch panicked"))?
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use anyhow::Context;
    use procfs::process::Process;

    use super::{Counters, Snapshot, ThreadReading};

    pub(super) fn snapshot(pid: u32) -> anyhow::Result<Snapshot> {
        let id = i32::try_from(pid).context("pid out of range")?;
        let process = Process::new(id).with_context(|| format!("process {pid} not found"))?;
        let tasks = process
            .tasks()
            .with_context(|| format!("listing /proc/{pid}/task"))?;
        let threads = tasks
            .filter_map(|t| {
                let task = t.ok()?;
                let stat = task.stat().ok()?;
                let status = task.status().ok()?;
                Some(ThreadReading {
                    tid: u32::try_from(task.tid).ok()?,
                    start: stat.starttime,
                    comm: stat.comm,
                    counters: Counters {
                        user_ticks: stat.utime,
                        system_ticks: stat.stime,
                        run_ns: task.schedstat().ok().map(|s| s.sum_exec_runtime),
                        voluntary: status.voluntary_ctxt_switches.unwrap_or(0),
                        involuntary: status.nonvoluntary_ctxt_switches.unwrap_or(0),
                    },
                })
            })
            .collect();
        let stat = process
            .stat()
            .with_context(|| format!("reading /proc/{pid}/stat"))?;
        Ok(Snapshot {
            threads,
            process_user_ticks: stat.utime,
            process_system_ticks: stat.stime,
        })
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Snapshot;

    pub(super) fn snapshot(_: u32) -> anyhow::Result<Snapshot> {
        anyhow::bail!("per-thread counters need Linux's /proc")
    }
}

#[cfg(test)]
#[path = "threads_tests.rs"]
mod tests;
