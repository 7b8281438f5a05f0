//! One lab cgroup: creation, limits, read-back, counters and removal.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use procfs_core::{FromRead, Meminfo};

use super::files::{checked, field, io, keyed, number, parse_cpu_max, parse_max, read, write};
use super::layout::{self, Hierarchy};
use super::{CgroupVersion, EnforcedLimits, GroupStats, LimitError, ResourceLimits};
use crate::cleanup::{self, CleanupGuard};

/// Above this a v1 limit is the kernel's "unlimited" (`PAGE_COUNTER_MAX` × page size).
const V1_UNLIMITED: u64 = 1 << 62;

/// A cgroup with CPU and memory limits; removed on drop. See the [module docs](super).
#[derive(Debug)]
pub struct LimitedGroup {
    name: String,
    version: CgroupVersion,
    /// (hierarchy, the group's directory in it)
    dirs: Vec<(Hierarchy, PathBuf)>,
    notes: Vec<String>,
    _guard: CleanupGuard,
}

impl LimitedGroup {
    /// Creates `labkit-NAME-PID-N` in each hierarchy and writes `limits`. Fails (removing what it
    /// made) if any limit cannot be written.
    pub fn create(name: &str, limits: ResourceLimits) -> Result<LimitedGroup, LimitError> {
        if let Err(why) = limits.check() {
            return Err(LimitError::InvalidLimits(format!("{why} ({limits:?})")));
        }
        let (version, hierarchies) = layout::discover().map_err(LimitError::Unavailable)?;
        let safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        // Unique per process and call: a lab may hold two groups of the same name at once.
        static COUNT: AtomicU64 = AtomicU64::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let dir_name = format!("labkit-{safe}-{}-{n}", std::process::id());
        let mut dirs = Vec::new();
        for h in hierarchies {
            let dir = h.base.join(&dir_name);
            if let Err(e) = fs::create_dir(&dir) {
                remove(&dirs);
                return Err(io("mkdir", &dir, e));
            }
            dirs.push((h, dir));
        }
        let guard = {
            let dirs = dirs.clone();
            cleanup::register(format!("remove cgroup {dir_name}"), move || remove(&dirs))
        };
        let mut group = LimitedGroup {
            name: name.to_owned(),
            version,
            dirs,
            notes: Vec::new(),
            _guard: guard,
        };
        group.write_limits(limits)?;
        Ok(group)
    }

    fn write_limits(&mut self, limits: ResourceLimits) -> Result<(), LimitError> {
        let (quota, period) = (limits.quota_us(), limits.period_us());
        let bytes = limits.memory_bytes.to_string();
        let (cpu, memory) = (self.dir("cpu")?.to_owned(), self.dir("memory")?.to_owned());
        let swap_file = match self.version {
            CgroupVersion::V2 => {
                write(&cpu.join("cpu.max"), &format!("{quota} {period}"))?;
                Self::write_burst(&cpu.join("cpu.max.burst"), limits.cfs_burst_us)?;
                write(&memory.join("memory.max"), &bytes)?;
                memory.join("memory.swap.max")
            }
            CgroupVersion::V1 => {
                write(&cpu.join("cpu.cfs_period_us"), &period.to_string())?;
                write(&cpu.join("cpu.cfs_quota_us"), &quota.to_string())?;
                Self::write_burst(&cpu.join("cpu.cfs_burst_us"), limits.cfs_burst_us)?;
                if let Err(e) = write(&memory.join("memory.swappiness"), "0") {
                    self.notes.push(format!("memory.swappiness not set: {e}"));
                }
                write(&memory.join("memory.limit_in_bytes"), &bytes)?;
                memory.join("memory.memsw.limit_in_bytes")
            }
        };
        let swap_value = if self.version == CgroupVersion::V2 {
            "0"
        } else {
            &bytes
        };
        if swap_file.exists() {
            write(&swap_file, swap_value)?;
        } else {
            let swap_total = Meminfo::from_file("/proc/meminfo")
                .ok()
                .map(|m| m.swap_total);
            let why = match swap_total {
                Some(0) => "this machine has no swap",
                _ => "the group may swap beyond its memory limit",
            };
            let file = swap_file.file_name().unwrap_or_default().to_string_lossy();
            self.notes.push(format!(
                "swap not limited ({file} absent: swap accounting off); {why}"
            ));
        }
        Ok(())
    }

    /// The burst after the quota (the kernel checks it against the quota in force). A kernel
    /// without the file can hold no burst: asking for one there is an error, none is noted.
    fn write_burst(file: &Path, burst_us: u64) -> Result<(), LimitError> {
        if file.exists() {
            return write(file, &burst_us.to_string());
        }
        if burst_us > 0 {
            return Err(LimitError::Unavailable(format!(
                "{} absent: this kernel has no CFS burst (5.14 or later)",
                file.display()
            )));
        }
        Ok(())
    }

    /// The name given to [`LimitedGroup::create`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cgroup version in use.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// The group's directories (one for v2, one per hierarchy for v1).
    pub fn paths(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|(_, d)| d.clone()).collect()
    }

    /// Moves process `pid` (all its threads) into the group, in every hierarchy.
    pub fn add_pid(&self, pid: u32) -> Result<(), LimitError> {
        for (_, dir) in &self.dirs {
            write(&dir.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// The processes in the group.
    pub fn pids(&self) -> Result<Vec<u32>, LimitError> {
        let path = self.dir("memory")?.join("cgroup.procs");
        Ok(read(&path)?
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect())
    }

    /// The limits as the kernel holds them now; see [`EnforcedLimits`].
    pub fn enforced(&self) -> EnforcedLimits {
        let mut notes = self.notes.clone();
        let n = &mut notes;
        let (cpu, memory_bytes, swap_bytes) = match self.version {
            CgroupVersion::V2 => (
                checked(self.file("cpu", "cpu.max").map(|s| parse_cpu_max(&s)), n),
                checked(self.file("memory", "memory.max").map(|s| parse_max(&s)), n),
                // Absent when swap accounting is off (noted at creation).
                self.file("memory", "memory.swap.max")
                    .map(|s| parse_max(&s))
                    .unwrap_or(None),
            ),
            CgroupVersion::V1 => {
                let int = |c, f| self.file(c, f).map(|s| s.trim().parse::<i64>().ok());
                let quota = checked(int("cpu", "cpu.cfs_quota_us"), n);
                let period = checked(int("cpu", "cpu.cfs_period_us"), n);
                // -1 is "no quota"; huge values are the kernel's "unlimited".
                let cpu = quota.zip(period).filter(|(q, p)| *q > 0 && *p > 0);
                let bytes = |f| int("memory", f).map(|v| v.and_then(|v| u64::try_from(v).ok()));
                let limited = |v: Option<u64>| v.filter(|v| *v < V1_UNLIMITED);
                let memory = limited(checked(bytes("memory.limit_in_bytes"), n));
                // memsw is memory + swap; absent when swap accounting is off (noted at creation).
                let memsw = limited(bytes("memory.memsw.limit_in_bytes").unwrap_or(None));
                let swap = memory.zip(memsw).map(|(m, sw)| sw.saturating_sub(m));
                (cpu.map(|(q, p)| (q as u64, p as u64)), memory, swap)
            }
        };
        let burst_file = match self.version {
            CgroupVersion::V2 => "cpu.max.burst",
            CgroupVersion::V1 => "cpu.cfs_burst_us",
        };
        // Absent on kernels before 5.14: no burst is possible there, nothing to note.
        let burst = self
            .file("cpu", burst_file)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        EnforcedLimits {
            version: self.version,
            paths: self.paths(),
            cpu_quota: cpu.map(|(q, p)| q as f64 / p as f64),
            cpu_period_us: cpu.map(|(_, p)| p),
            cpu_burst_us: cpu.and(burst),
            memory_bytes,
            swap_bytes,
            notes,
        }
    }

    /// CPU seconds used by the group's processes so far.
    pub fn cpu_usage_seconds(&self) -> Result<f64, LimitError> {
        match self.version {
            CgroupVersion::V1 => Ok(number(&self.file("cpuacct", "cpuacct.usage")?)? as f64 / 1e9),
            CgroupVersion::V2 => {
                Ok(field(&self.file("cpu", "cpu.stat")?, "usage_usec")? as f64 / 1e6)
            }
        }
    }

    /// Memory charged to the group now, in bytes.
    pub fn memory_current(&self) -> Result<u64, LimitError> {
        match self.version {
            CgroupVersion::V1 => number(&self.file("memory", "memory.usage_in_bytes")?),
            CgroupVersion::V2 => number(&self.file("memory", "memory.current")?),
        }
    }

    /// The most memory charged to the group since it was made, in bytes (v1
    /// `memory.max_usage_in_bytes`, v2 `memory.peak`, kernel ≥ 5.19).
    pub fn memory_peak(&self) -> Result<u64, LimitError> {
        let file = match self.version {
            CgroupVersion::V1 => "memory.max_usage_in_bytes",
            CgroupVersion::V2 => "memory.peak",
        };
        number(&self.file("memory", file)?)
    }

    /// Processes the kernel's OOM killer killed inside the group.
    pub fn oom_kills(&self) -> Result<u64, LimitError> {
        match self.version {
            CgroupVersion::V1 => field(&self.file("memory", "memory.oom_control")?, "oom_kill"),
            CgroupVersion::V2 => field(&self.file("memory", "memory.events")?, "oom_kill"),
        }
    }

    /// Times the memory limit was hit (v1 `memory.failcnt` + `memory.memsw.failcnt`, v2
    /// `memory.events` `max`). Some kernels never count it on v1 (seen on 6.18): prefer
    /// [`Self::oom_kills`] and the peak in [`Self::stats`].
    pub fn memory_failcnt(&self) -> Result<u64, LimitError> {
        match self.version {
            CgroupVersion::V1 => {
                // With swap accounting the memory+swap counter is charged first, and only the
                // counter that refused a charge counts the failure.
                let memsw = self.file("memory", "memory.memsw.failcnt").ok();
                let memsw = memsw.map_or(Ok(0), |s| number(&s))?;
                Ok(number(&self.file("memory", "memory.failcnt")?)? + memsw)
            }
            CgroupVersion::V2 => field(&self.file("memory", "memory.events")?, "max"),
        }
    }

    /// Every counter at once; missing ones are `None`.
    pub fn stats(&self) -> GroupStats {
        let cpu_stat = self.file("cpu", "cpu.stat").unwrap_or_default();
        let (throttled, scale) = match self.version {
            CgroupVersion::V1 => ("throttled_time", 1e9),
            CgroupVersion::V2 => ("throttled_usec", 1e6),
        };
        GroupStats {
            cpu_usage_seconds: self.cpu_usage_seconds().ok(),
            cpu_periods: keyed(&cpu_stat, "nr_periods"),
            cpu_throttled_periods: keyed(&cpu_stat, "nr_throttled"),
            cpu_throttled_seconds: keyed(&cpu_stat, throttled).map(|t| t as f64 / scale),
            memory_current: self.memory_current().ok(),
            memory_peak: self.memory_peak().ok(),
            memory_failcnt: self.memory_failcnt().ok(),
            oom_kills: self.oom_kills().ok(),
        }
    }

    fn dir(&self, controller: &str) -> Result<&Path, LimitError> {
        self.dirs
            .iter()
            .find(|(h, _)| h.controllers.contains(&controller))
            .map(|(_, d)| d.as_path())
            .ok_or_else(|| LimitError::Unavailable(format!("no {controller} hierarchy")))
    }

    fn file(&self, controller: &str, file: &str) -> Result<String, LimitError> {
        read(&self.dir(controller)?.join(file))
    }
}

/// Moves leftover processes back to our own cgroup, then removes the directories.
fn remove(dirs: &[(Hierarchy, PathBuf)]) {
    for (h, dir) in dirs {
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            for pid in fs::read_to_string(dir.join("cgroup.procs"))
                .unwrap_or_default()
                .split_whitespace()
            {
                let _ = fs::write(h.origin.join("cgroup.procs"), pid);
            }
            match fs::remove_dir(dir) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(e) if Instant::now() >= deadline => {
                    eprintln!("labkit: could not remove cgroup {}: {e}", dir.display());
                    break;
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }
}
