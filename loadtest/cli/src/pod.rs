//! Each API's pod in a lab run: the cgroup limits `--api-cpus` and `--api-memory-mib` ask for,
//! the same for both APIs (`labkit::cgroup::ResourceLimits`, which holds the CFS period's rule).

use labkit::cgroup::ResourceLimits;

/// Each API's pod: its cgroup's limits, `None` with `--no-limits` (`HarnessArgs::pod`).
pub fn of(no_limits: bool, api_cpus: f64, api_memory_mib: u64) -> Option<ResourceLimits> {
    (!no_limits).then_some(ResourceLimits {
        cpus: api_cpus,
        memory_bytes: api_memory_mib << 20,
    })
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
