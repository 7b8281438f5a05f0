//! CPU affinity of the lab's processes: "the API alone on one CPU, everything else on the
//! others", as `taskset` does it, for every thread of a process.
//!
//! `sched_setaffinity` applies to one thread; a new thread inherits its creator's mask. So
//! [`pin_process`] sets every live thread of a process (twice, to catch threads created during
//! the first walk), and threads made afterwards by a pinned thread stay on the same CPUs. Pin this
//! process first and every child started afterwards (PostgreSQL, mock-deps) inherits the mask;
//! then move the one child that must run elsewhere.

use anyhow::Context;

/// CPUs this process may run on now (its affinity mask), in order.
pub fn allowed_cpus() -> anyhow::Result<Vec<usize>> {
    imp::allowed_cpus()
}

/// Splits `cpus` into (the API's: the last one, the harness's: the others); `None` with fewer
/// than two.
pub fn split_last(cpus: &[usize]) -> Option<(Vec<usize>, Vec<usize>)> {
    let (last, rest) = cpus.split_last()?;
    (!rest.is_empty()).then(|| (vec![*last], rest.to_vec()))
}

/// The lab's CPUs split between the API and everything else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSplit {
    pub api: Vec<usize>,
    pub harness: Vec<usize>,
}

/// Pins this process — and so every child it starts from now on — to all its CPUs but the last,
/// which it leaves to the API; `Ok(None)` with fewer than two CPUs (nothing pinned).
pub fn reserve_last_cpu() -> anyhow::Result<Option<CpuSplit>> {
    let cpus = allowed_cpus()?;
    let Some((api, harness)) = split_last(&cpus) else {
        return Ok(None);
    };
    pin_process(std::process::id(), &harness)
        .context("pinning this process to the harness's CPUs")?;
    Ok(Some(CpuSplit { api, harness }))
}

/// Pins every thread of `pid` to `cpus`; returns how many threads were set.
pub fn pin_process(pid: u32, cpus: &[usize]) -> anyhow::Result<usize> {
    anyhow::ensure!(!cpus.is_empty(), "no CPU to pin to");
    let mut set = 0;
    for _ in 0..2 {
        set = 0;
        for tid in imp::threads(pid).with_context(|| format!("listing the threads of {pid}"))? {
            // A thread that exited since the listing is skipped.
            if imp::pin_thread(tid, cpus).is_ok() {
                set += 1;
            }
        }
    }
    anyhow::ensure!(set > 0, "no thread of process {pid} could be pinned");
    Ok(set)
}

/// Pins the calling thread (only it: the others keep their mask) to `cpus`.
pub fn pin_this_thread(cpus: &[usize]) -> anyhow::Result<()> {
    anyhow::ensure!(!cpus.is_empty(), "no CPU to pin to");
    imp::pin_thread(0, cpus)
}

/// Pins `pid` and all its descendants (e.g. PostgreSQL's postmaster and backends).
pub fn pin_tree(pid: u32, cpus: &[usize]) -> anyhow::Result<usize> {
    let mut set = 0;
    for p in crate::procstat::tree_pids(pid)? {
        set += pin_process(p, cpus).unwrap_or(0);
    }
    Ok(set)
}

#[cfg(target_os = "linux")]
mod imp {
    use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
    use nix::unistd::Pid;

    /// The live threads of `pid` (`/proc/PID/task`); one that exits during the listing is skipped.
    pub(super) fn threads(pid: u32) -> anyhow::Result<Vec<u32>> {
        let tasks = procfs::process::Process::new(i32::try_from(pid)?)?.tasks()?;
        Ok(tasks
            .filter_map(|t| u32::try_from(t.ok()?.tid).ok())
            .collect())
    }

    pub(super) fn allowed_cpus() -> anyhow::Result<Vec<usize>> {
        let set = sched_getaffinity(Pid::from_raw(0))?;
        Ok((0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect())
    }

    pub(super) fn pin_thread(tid: u32, cpus: &[usize]) -> anyhow::Result<()> {
        let mut set = CpuSet::new();
        for &c in cpus {
            set.set(c)?;
        }
        sched_setaffinity(Pid::from_raw(i32::try_from(tid)?), &set)?;
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub(super) fn threads(_: u32) -> anyhow::Result<Vec<u32>> {
        anyhow::bail!("listing threads needs Linux's /proc")
    }

    pub(super) fn allowed_cpus() -> anyhow::Result<Vec<usize>> {
        anyhow::bail!("CPU affinity needs Linux")
    }

    pub(super) fn pin_thread(_: u32, _: &[usize]) -> anyhow::Result<()> {
        anyhow::bail!("CPU affinity needs Linux")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_cpu_is_the_apis() {
        assert_eq!(split_last(&[0, 1]), Some((vec![1], vec![0])));
        assert_eq!(split_last(&[0, 2, 5]), Some((vec![5], vec![0, 2])));
        assert_eq!(split_last(&[3]), None);
        assert_eq!(split_last(&[]), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_is_pinned_whole() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let one = [cpus[cpus.len() - 1]];
        assert_eq!(pin_process(child.id(), &one).unwrap(), 1);
        let pid = i32::try_from(child.id()).unwrap();
        let status = procfs::process::Process::new(pid)
            .unwrap()
            .status()
            .unwrap();
        let cpu = u32::try_from(one[0]).unwrap();
        assert_eq!(status.cpus_allowed_list, Some(vec![(cpu, cpu)]));
        let _ = child.kill();
        let _ = child.wait();
    }
}
