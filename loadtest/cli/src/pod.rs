//! Each API's pod in a lab run: the cgroup limits `--api-cpus` and `--api-memory-mib` ask for,
//! the same for both APIs (`labkit::cgroup::ResourceLimits`, which holds the CFS period's rule).

use labkit::cgroup::ResourceLimits;

use crate::lab_args::HarnessArgs;

impl HarnessArgs {
    /// Each API's pod: its cgroup's limits, `None` with `--no-limits`.
    pub fn pod(&self) -> Option<ResourceLimits> {
        (!self.no_limits).then_some(ResourceLimits {
            cpus: self.api_cpus,
            memory_bytes: self.api_memory_mib << 20,
        })
    }
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
