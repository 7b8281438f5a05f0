//! Cumulative counters of one process and of the machine, for per-order arithmetic between two
//! readings (`loadtest bench`): CPU in user and kernel mode apart, context switches, RSS and its
//! peak. [`crate::procstat`] gives the sampled series (CPU as one figure, RSS, threads, files).
//!
//! - CPU: `utime` and `stime` of `/proc/PID/stat`, which include the process's exited threads.
//! - Context switches: `voluntary_ctxt_switches` and `nonvoluntary_ctxt_switches` of each
//!   `/proc/PID/task/TID/status` (the process's own `status` has only its main thread's), summed
//!   over the live threads: a thread that exits between two readings takes its count with it.
//! - Memory: `VmRSS` and `VmHWM` (the peak RSS since the process started) of `/proc/PID/status`.
//! - Machine: busy jiffies of all CPUs from the first line of `/proc/stat` (user, nice, system,
//!   irq, softirq, steal; not idle, not iowait), and all of them (busy, idle and iowait).
//!
//! Every file is read through the `procfs` crate, none parsed here.

use serde::{Deserialize, Serialize};

/// One reading of one process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessCounters {
    pub user_seconds: f64,
    pub system_seconds: f64,
    /// Summed over the live threads (see the module docs).
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    pub rss_bytes: u64,
    /// `VmHWM`: the highest RSS since the process started.
    pub peak_rss_bytes: u64,
    pub threads: u64,
}

impl ProcessCounters {
    /// CPU, user + system, seconds.
    pub fn cpu_seconds(&self) -> f64 {
        self.user_seconds + self.system_seconds
    }
}

/// Reads `pid`'s counters.
pub fn read_process(pid: u32) -> anyhow::Result<ProcessCounters> {
    imp::read_process(pid)
}

/// Rust's default thread stack (`std::thread`, tokio's and actix's pools): 2 MiB of address space.
pub const DEFAULT_STACK_KIB: u64 = 2048;

/// Thread stacks of `pid` and the memory they hold: `(stacks, RSS of all of them in bytes)`, from
/// `/proc/PID/smaps`. A stack is recognised as an anonymous mapping of exactly `stack_kib` KiB
/// (glibc maps its guard page apart), so only threads made with that stack size are counted.
pub fn thread_stacks(pid: u32, stack_kib: u64) -> anyhow::Result<(u64, u64)> {
    imp::thread_stacks(pid, stack_kib)
}

/// [`thread_stacks`] of a process's memory maps.
#[cfg(target_os = "linux")]
pub fn stacks_in(maps: &procfs::process::MemoryMaps, stack_kib: u64) -> (u64, u64) {
    let (mut count, mut rss) = (0, 0);
    for m in maps {
        // procfs gives the kB figures of smaps in bytes.
        let field = |k: &str| m.extension.map.get(k).copied().unwrap_or(0);
        if m.pathname == procfs::process::MMapPath::Anonymous && field("Size") == stack_kib * 1024 {
            count += 1;
            rss += field("Rss");
        }
    }
    (count, rss)
}

/// Busy CPU time of the whole machine so far, all CPUs together, seconds.
pub fn machine_busy_seconds() -> anyhow::Result<f64> {
    Ok(machine_jiffies()?.busy as f64 / ticks_per_second())
}

/// Jiffies of all CPUs so far, from `/proc/stat`'s `cpu` line: two readings give the share of
/// the machine's CPU time that was busy between them, and of it the share its hypervisor took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineJiffies {
    /// [`busy_jiffies`]: steal included.
    pub busy: u64,
    /// `steal`: time a virtual machine's CPUs were ready to run while its host ran something
    /// else (other tenants) — a machine's own processes cannot account for it.
    pub steal: u64,
    /// [`total_jiffies`]: busy, idle and iowait.
    pub total: u64,
}

pub fn machine_jiffies() -> anyhow::Result<MachineJiffies> {
    imp::machine_jiffies()
}

/// CPUs of the machine (`cpuN` lines of `/proc/stat`), whatever this process's affinity; at
/// least 1.
pub fn online_cpus() -> usize {
    imp::online_cpus().max(1)
}

/// Busy jiffies of a `/proc/stat` `cpu` line: user + nice + system + irq + softirq + steal
/// (guest time is already in user).
#[cfg(target_os = "linux")]
pub fn busy_jiffies(t: &procfs::CpuTime) -> u64 {
    let opt = |v: Option<u64>| v.unwrap_or(0);
    t.user + t.nice + t.system + opt(t.irq) + opt(t.softirq) + opt(t.steal)
}

/// All jiffies of a `/proc/stat` `cpu` line: [`busy_jiffies`] + idle + iowait.
#[cfg(target_os = "linux")]
pub fn total_jiffies(t: &procfs::CpuTime) -> u64 {
    busy_jiffies(t) + t.idle + t.iowait.unwrap_or(0)
}

/// The kernel's clock ticks per second (`USER_HZ`), the unit of `/proc`'s utime and stime.
pub(crate) fn ticks_per_second() -> f64 {
    imp::ticks_per_second()
}

#[cfg(target_os = "linux")]
mod imp {
    use anyhow::Context;
    use procfs::process::Process;

    use super::ProcessCounters;

    pub(super) fn ticks_per_second() -> f64 {
        procfs::ticks_per_second() as f64
    }

    fn kernel_stats() -> anyhow::Result<procfs::KernelStats> {
        use procfs::CurrentSI;
        procfs::KernelStats::current().context("reading /proc/stat")
    }

    pub(super) fn machine_jiffies() -> anyhow::Result<super::MachineJiffies> {
        let total = kernel_stats()?.total;
        Ok(super::MachineJiffies {
            busy: super::busy_jiffies(&total),
            steal: total.steal.unwrap_or(0),
            total: super::total_jiffies(&total),
        })
    }

    pub(super) fn thread_stacks(pid: u32, stack_kib: u64) -> anyhow::Result<(u64, u64)> {
        let id = i32::try_from(pid).context("pid out of range")?;
        let maps = Process::new(id)
            .and_then(|p| p.smaps())
            .with_context(|| format!("reading /proc/{pid}/smaps"))?;
        Ok(super::stacks_in(&maps, stack_kib))
    }

    pub(super) fn online_cpus() -> usize {
        kernel_stats().map_or(1, |s| s.cpu_time.len())
    }

    pub(super) fn read_process(pid: u32) -> anyhow::Result<ProcessCounters> {
        let id = i32::try_from(pid).context("pid out of range")?;
        let process = Process::new(id).with_context(|| format!("process {pid} not found"))?;
        let stat = process
            .stat()
            .with_context(|| format!("reading /proc/{pid}/stat"))?;
        let status = process
            .status()
            .with_context(|| format!("reading /proc/{pid}/status"))?;
        let tick = ticks_per_second();
        let (mut voluntary, mut involuntary) = (0, 0);
        if let Ok(tasks) = process.tasks() {
            // A thread that exits during the walk is skipped.
            for s in tasks.filter_map(|t| t.ok()?.status().ok()) {
                voluntary += s.voluntary_ctxt_switches.unwrap_or(0);
                involuntary += s.nonvoluntary_ctxt_switches.unwrap_or(0);
            }
        }
        Ok(ProcessCounters {
            user_seconds: stat.utime as f64 / tick,
            system_seconds: stat.stime as f64 / tick,
            voluntary_switches: voluntary,
            involuntary_switches: involuntary,
            rss_bytes: status.vmrss.unwrap_or(0) * 1024,
            peak_rss_bytes: status.vmhwm.unwrap_or(0) * 1024,
            threads: u64::try_from(stat.num_threads).unwrap_or(0),
        })
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::ProcessCounters;

    pub(super) fn ticks_per_second() -> f64 {
        100.0
    }

    pub(super) fn machine_jiffies() -> anyhow::Result<super::MachineJiffies> {
        anyhow::bail!("machine counters need Linux's /proc")
    }

    pub(super) fn online_cpus() -> usize {
        1
    }

    pub(super) fn thread_stacks(_: u32, _: u64) -> anyhow::Result<(u64, u64)> {
        anyhow::bail!("thread stacks need Linux's /proc")
    }

    pub(super) fn read_process(_: u32) -> anyhow::Result<ProcessCounters> {
        anyhow::bail!("process counters need Linux's /proc")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn busy_jiffies_leave_idle_and_iowait_out() {
        use procfs::{ExplicitSystemInfo, FromReadSI, KernelStats};
        // user nice system idle iowait irq softirq steal guest guest_nice
        let text = "cpu  100 5 50 1000 30 2 3 4 7 0\ncpu0 100 5 50 1000 30 2 3 4 7 0\n\
                    ctxt 1\nbtime 1\nprocesses 1\nprocs_running 1\nprocs_blocked 0\n";
        let info = ExplicitSystemInfo {
            boot_time_secs: 0,
            ticks_per_second: 100,
            page_size: 4096,
            is_little_endian: true,
        };
        let stats = KernelStats::from_read(text.as_bytes(), &info).unwrap();
        assert_eq!(busy_jiffies(&stats.total), 100 + 5 + 50 + 2 + 3 + 4);
        assert_eq!(
            total_jiffies(&stats.total),
            100 + 5 + 50 + 1000 + 30 + 2 + 3 + 4
        );
        assert_eq!(stats.cpu_time.len(), 1);
    }

    #[test]
    fn stacks_are_anonymous_mappings_of_the_stack_size() {
        use procfs::FromRead;
        use procfs::process::MemoryMaps;
        let smaps = "\
7f00-7f01 ---p 00000000 00:00 0 \nSize:                  4 kB\nRss:                   0 kB\n\
7f01-7f02 rw-p 00000000 00:00 0 \nSize:               2048 kB\nRss:                  20 kB\n\
7f02-7f03 rw-p 00000000 00:00 0 \nSize:               2048 kB\nRss:                  24 kB\n\
7f03-7f04 r--p 00000000 08:01 42   /usr/lib/libfoo.so\nSize:               2048 kB\nRss:                 100 kB\n\
7f04-7f05 rw-p 00000000 00:00 0 \nSize:              65324 kB\nRss:                 300 kB\n";
        let maps = MemoryMaps::from_read(smaps.as_bytes()).unwrap();
        assert_eq!(stacks_in(&maps, 2048), (2, 44 * 1024));
        assert_eq!(stacks_in(&maps, 8192), (0, 0));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_process() {
        // Burn a little CPU and make a thread, so both counters move.
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_millis(5)))
            .join()
            .unwrap();
        let c = read_process(std::process::id()).unwrap();
        assert!(c.rss_bytes > 0 && c.peak_rss_bytes >= c.rss_bytes, "{c:?}");
        assert!(c.threads >= 1);
        assert!(c.voluntary_switches + c.involuntary_switches > 0, "{c:?}");
        assert!(machine_busy_seconds().unwrap() > 0.0);
        let j = machine_jiffies().unwrap();
        assert!(0 < j.busy && j.busy < j.total, "{j:?}");
        assert!(j.steal <= j.busy, "steal is a part of busy: {j:?}");
        assert!(online_cpus() >= 1);
        // Counted from a thread of Rust's default stack size, so there is at least that one.
        let (stacks, rss) =
            std::thread::spawn(|| thread_stacks(std::process::id(), DEFAULT_STACK_KIB).unwrap())
                .join()
                .unwrap();
        assert!(stacks >= 1 && rss > 0, "{stacks} stacks, {rss} bytes");
    }
}
