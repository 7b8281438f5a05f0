//! Each API's pod in a lab run: the cgroup limits `--api-cpus`, `--api-memory-mib`,
//! `--api-cfs-period-ms` and `--api-cfs-burst-ms` ask for, the same for both APIs
//! (`labkit::cgroup::ResourceLimits`, which holds the CFS period's rule).

use labkit::cgroup::ResourceLimits;

/// The flags that size a pod, as parsed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PodFlags {
    pub cpus: f64,
    pub memory_mib: u64,
    pub cfs_period_ms: Option<f64>,
    pub cfs_burst_ms: f64,
}

/// Each API's pod: its cgroup's limits, `None` with `--no-limits` (`HarnessArgs::pod`).
pub fn of(no_limits: bool, flags: PodFlags) -> Option<ResourceLimits> {
    let us = |ms: f64| (ms * 1e3).round() as u64;
    (!no_limits).then_some(ResourceLimits {
        cpus: flags.cpus,
        memory_bytes: flags.memory_mib << 20,
        cfs_period_us: flags.cfs_period_ms.map(us),
        cfs_burst_us: us(flags.cfs_burst_ms),
    })
}

/// `--api-cfs-period-ms`: a period the kernel can hold, 1–1000 ms.
pub fn period_ms(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|ms| (1.0..=1000.0).contains(ms))
        .ok_or_else(|| format!("{text:?}: a CFS period is 1 to 1000 ms"))
}

/// `--api-cfs-burst-ms`: zero or more ms (checked against the quota when the pod is made).
pub fn burst_ms(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .ok_or_else(|| format!("{text:?}: a CFS burst is 0 or more ms"))
}

/// `--api-cpus`: a CPU share the kernel can hold as a quota (see [`ResourceLimits::valid`]).
pub fn api_cpus(text: &str) -> Result<f64, String> {
    let cpus: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of CPUs"))?;
    let pod = ResourceLimits {
        cpus,
        ..ResourceLimits::default()
    };
    pod.valid()
        .then_some(cpus)
        .ok_or_else(|| format!("{text}: a CPU quota is at least 0.001 (1 ms per 1 s period)"))
}
