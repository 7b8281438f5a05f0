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
//! The CFS period ([`ResourceLimits::period_us`]) is **max(10 ms, 1 ms ÷ cpus)**: the kernel lets
//! a group run `cpus × period` per period, then stalls it to the period's end, so a request that
//! meets the quota waits up to `(1 − cpus) × period`. The kernel's default 100 ms period would add
//! up to 87.5 ms to a request at 0.125 CPU; 10 ms adds at most 8.75 ms there and nothing at 1 CPU
//! on the API's own core. The quota may not go under the kernel's 1 ms minimum, so below 0.1 CPU
//! the period grows to keep the quota at 1 ms (0.05 CPU: 20 ms period, 1 ms quota); above 1 s
//! (under 0.001 CPU, the kernel's longest period) no limit can be written.
//!
//! A pod as a team runs it has another period: Kubernetes and docker enforce a CPU limit over the
//! kernel's default 100 ms. [`ResourceLimits::cfs_period_us`] asks for such a period (the 1 ms
//! quota floor still applies), and [`ResourceLimits::cfs_burst_us`] lets the group spend quota it
//! left unused in earlier periods in one burst (v1 `cpu.cfs_burst_us`, v2 `cpu.max.burst`, kernel
//! ≥ 5.14; the kernel refuses a burst larger than the quota). Both are read back.
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
    /// CPU time per wall-clock second (1.0 = one core, 0.125 an eighth), enforced as a CFS quota
    /// of `cpus × period` per [`ResourceLimits::period_us`].
    pub cpus: f64,
    /// Memory (RSS + page cache) before the kernel reclaims, then OOM-kills inside the group.
    pub memory_bytes: u64,
    /// The CFS period asked for, µs; `None`: the lab's rule (see [`ResourceLimits::period_us`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cfs_period_us: Option<u64>,
    /// Unused quota the group may carry into a burst, µs per period (0: none, the kernel's
    /// default). At most the quota.
    #[serde(default)]
    pub cfs_burst_us: u64,
}

/// The CFS period the lab prefers: short, so that throttling stalls a request for a few ms at most.
pub const SHORT_PERIOD_US: u64 = 10_000;
/// The kernel's smallest CFS quota and its longest period.
pub const MIN_QUOTA_US: u64 = 1_000;
pub const MAX_PERIOD_US: u64 = 1_000_000;

impl ResourceLimits {
    /// The CFS period for these limits, µs: the one asked for, else max(10 ms, 1 ms ÷ cpus) —
    /// in both cases long enough for the kernel's 1 ms quota (see the [module docs](self)).
    pub fn period_us(&self) -> u64 {
        let for_min_quota = (MIN_QUOTA_US as f64 / self.cpus).ceil() as u64;
        self.cfs_period_us
            .unwrap_or(SHORT_PERIOD_US)
            .max(for_min_quota)
    }

    /// The CFS quota per [`Self::period_us`], µs.
    pub fn quota_us(&self) -> u64 {
        ((self.cpus * self.period_us() as f64).round() as u64).max(MIN_QUOTA_US)
    }

    /// Limits the kernel can hold: a finite CPU share whose period fits the kernel's (≥ 0.001
    /// CPU), a period asked for within the kernel's 1 ms–1 s, a burst no larger than the quota,
    /// and some memory.
    pub fn valid(&self) -> bool {
        self.check().is_ok()
    }

    /// [`Self::valid`], with what is wrong.
    pub fn check(&self) -> Result<(), String> {
        let ms = |us: u64| us as f64 / 1e3;
        if !(self.cpus.is_finite() && self.cpus * MAX_PERIOD_US as f64 >= MIN_QUOTA_US as f64) {
            return Err(format!(
                "{} CPU: a CPU quota is at least 0.001 (1 ms per 1 s period)",
                self.cpus
            ));
        }
        if let Some(p) = self
            .cfs_period_us
            .filter(|p| !(MIN_QUOTA_US..=MAX_PERIOD_US).contains(p))
        {
            return Err(format!(
                "a CFS period of {} ms is outside the kernel's 1–1000 ms",
                ms(p)
            ));
        }
        if self.cfs_burst_us > self.quota_us() {
            return Err(format!(
                "a CFS burst of {} ms is more than the quota, {} ms per {} ms period: the kernel \
                 refuses it",
                ms(self.cfs_burst_us),
                ms(self.quota_us()),
                ms(self.period_us())
            ));
        }
        if self.memory_bytes == 0 {
            return Err("a memory limit of 0 bytes".to_owned());
        }
        Ok(())
    }
}

impl Default for ResourceLimits {
    fn default() -> Self {
        ResourceLimits {
            cpus: 1.0,
            memory_bytes: 1 << 30,
            cfs_period_us: None,
            cfs_burst_us: 0,
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
    /// The CFS period the quota is counted over, µs (`None` with no quota).
    pub cpu_period_us: Option<u64>,
    /// The CFS burst, µs (`Some(0)`: none; `None`: this kernel has no burst file, or no quota).
    pub cpu_burst_us: Option<u64>,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(cpus: f64) -> ResourceLimits {
        ResourceLimits {
            cpus,
            ..ResourceLimits::default()
        }
    }

    #[test]
    fn the_period_is_short_unless_the_quota_would_go_under_a_millisecond() {
        let at = |cpus| (pod(cpus).period_us(), pod(cpus).quota_us());
        assert_eq!(at(1.0), (10_000, 10_000));
        assert_eq!(at(2.0), (10_000, 20_000));
        assert_eq!(at(0.5), (10_000, 5_000));
        // 1.25 ms run, then at most 8.75 ms stalled.
        assert_eq!(at(0.125), (10_000, 1_250));
        assert_eq!(at(0.1), (10_000, 1_000));
        // Below 0.1 CPU the quota stays at the kernel's 1 ms and the period grows.
        assert_eq!(at(0.05), (20_000, 1_000));
        assert_eq!(at(0.001), (1_000_000, 1_000));
        assert!(pod(0.001).valid());
        assert!(
            !pod(0.0005).valid(),
            "the period would pass the kernel's 1 s"
        );
        assert!(!pod(0.0).valid() && !pod(f64::NAN).valid() && !pod(-1.0).valid());
    }

    #[test]
    fn a_pod_as_kubernetes_runs_it_has_a_100_ms_period_and_a_burst_up_to_its_quota() {
        let k8s = |cpus, burst_us| ResourceLimits {
            cfs_period_us: Some(100_000),
            cfs_burst_us: burst_us,
            ..pod(cpus)
        };
        // 12.5 ms of CPU, then a stall of up to 87.5 ms.
        assert_eq!(
            (k8s(0.125, 0).period_us(), k8s(0.125, 0).quota_us()),
            (100_000, 12_500)
        );
        assert!(k8s(0.125, 12_500).valid());
        assert!(
            !k8s(0.125, 12_501).valid(),
            "the kernel refuses a burst above the quota"
        );
        // The 1 ms quota floor still stretches a period asked for: 0.005 CPU over 200 ms.
        assert_eq!(k8s(0.005, 0).period_us(), 200_000);
        let asked = |us| ResourceLimits {
            cfs_period_us: Some(us),
            ..pod(1.0)
        };
        assert!(!asked(999).valid() && !asked(1_000_001).valid());
        assert!(asked(1_000).valid() && asked(1_000_000).valid());
    }
}
