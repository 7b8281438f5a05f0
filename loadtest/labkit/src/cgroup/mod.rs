//! CPU and memory limits for the services under test (Linux cgroups, v2 or v1).
//!
//! The source experiment ran each API in a container with 1 CPU and 1 GB; the lab reproduces that
//! with a cgroup per service. [`LimitedGroup::create`] makes the group and writes the limits;
//! [`LimitedGroup::enforced`] reads back what the kernel holds, which is what a report must print —
//! a limit that was not read back is reported as absent, never assumed. Add a service with
//! [`LimitedGroup::add_pid`] right after spawning it (before waiting for readiness): all its threads
//! move, and the memory it allocates from then on is charged to the group (neither version moves
//! the charge of pages allocated before, so the few start-up pages stay outside the group's count).
//!
//! - v2 (unified): the group is created under this process's cgroup when cpu and memory are already
//!   delegated to its children, else under the hierarchy's root (enabling `+cpu +memory` in its
//!   `cgroup.subtree_control` if needed). Limits: `cpu.max`, `memory.max`, `memory.swap.max = 0`.
//! - v1: one directory per hierarchy (cpu, cpuacct, memory), nested under this process's own
//!   cgroup. Limits: `cpu.cfs_period_us`/`cpu.cfs_quota_us`, `memory.limit_in_bytes`,
//!   `memory.memsw.limit_in_bytes` (same value: no swap) when swap accounting exists, and
//!   `memory.swappiness = 0`.
//!
//! The group is removed on drop (or Ctrl-C): leftover processes are moved back to this process's
//! cgroup first.

mod files;
mod group;
mod layout;

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use group::LimitedGroup;

/// Limits for one service; the default is the source experiment's container: 1 CPU, 1 GiB.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ResourceLimits {
    /// CPU time per wall-clock second (1.0 = one core), enforced as a CFS quota per 100 ms period.
    pub cpus: f64,
    /// Memory (RSS + page cache) before the kernel reclaims, then OOM-kills inside the group.
    pub memory_bytes: u64,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        ResourceLimits {
            cpus: 1.0,
            memory_bytes: 1 << 30,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    V1,
    V2,
}

impl fmt::Display for CgroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CgroupVersion::V1 => "v1",
            CgroupVersion::V2 => "v2",
        })
    }
}

/// Whether limits can be applied here, and why (not).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// The hierarchy that would be used; `None` when neither is usable.
    pub version: Option<CgroupVersion>,
    /// A group could be created (and removed) just now.
    pub writable: bool,
    /// Human-readable explanation, for the report.
    pub reason: String,
}

/// What the kernel holds for a group, read back from its files. `None` means "not limited" or
/// "could not be read" (see `notes`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnforcedLimits {
    pub version: CgroupVersion,
    /// The group's directories (one for v2, one per hierarchy for v1).
    pub paths: Vec<PathBuf>,
    /// CPUs' worth of time per period (quota ÷ period).
    pub cpu_quota: Option<f64>,
    pub memory_bytes: Option<u64>,
    /// Swap the group may use on top of `memory_bytes` (`Some(0)`: none).
    pub swap_bytes: Option<u64>,
    /// Caveats worth printing (swap accounting off, unreadable files…).
    pub notes: Vec<String>,
}

/// Counters of a group, each `None` when this kernel does not provide it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupStats {
    /// CPU time used by the group's processes (v1: `cpuacct.usage`, v2: `cpu.stat` `usage_usec`).
    pub cpu_usage_seconds: Option<f64>,
    /// Scheduler periods in which the group was runnable / hit its quota, and the time throttled.
    pub cpu_periods: Option<u64>,
    pub cpu_throttled_periods: Option<u64>,
    pub cpu_throttled_seconds: Option<f64>,
    pub memory_current: Option<u64>,
    /// v1 `memory.max_usage_in_bytes`, v2 `memory.peak` (kernel ≥ 5.19).
    pub memory_peak: Option<u64>,
    /// Times the limit was hit (v1 `memory.failcnt` + `memory.memsw.failcnt`, v2 `memory.events`
    /// `max`).
    pub memory_failcnt: Option<u64>,
    /// Processes killed by the OOM killer inside the group.
    pub oom_kills: Option<u64>,
}

/// Why a group could not be created or read.
#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    #[error("cgroup limits are unavailable: {0}")]
    Unavailable(String),
    #[error("invalid limits: {0}")]
    InvalidLimits(String),
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Finds the hierarchy that [`LimitedGroup::create`] would use and tries to create and remove an
/// empty group there (on v2 this may enable the cpu and memory controllers for the root's children).
pub fn probe() -> Probe {
    match layout::discover() {
        Err(reason) => Probe {
            version: None,
            writable: false,
            reason,
        },
        Ok((version, hierarchies)) => {
            let name = format!("labkit-probe-{}", std::process::id());
            let mut failure = None;
            for h in &hierarchies {
                let dir = h.base.join(&name);
                if let Err(e) = std::fs::create_dir(&dir).and_then(|()| std::fs::remove_dir(&dir)) {
                    failure = Some(format!(
                        "cannot create a cgroup in {}: {e}",
                        h.base.display()
                    ));
                    break;
                }
            }
            let bases: Vec<String> = hierarchies
                .iter()
                .map(|h| h.base.display().to_string())
                .collect();
            Probe {
                version: Some(version),
                writable: failure.is_none(),
                reason: failure
                    .unwrap_or_else(|| format!("cgroup {version} under {}", bases.join(", "))),
            }
        }
    }
}
