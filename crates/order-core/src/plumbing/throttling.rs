//! CPU throttling of the API's own cgroup, on `/metrics`: the trap a CPU limit sets for a
//! thread-per-request service. Under a CFS quota (a container's `cpus: 1`, a pod's `limits.cpu`)
//! 200 runnable threads can spend a period's whole quota in its first milliseconds and then wait,
//! all of them, for the next period — latency added even when the average CPU is below the limit.
//! The kernel counts it in the cgroup's `cpu.stat`; both APIs expose it with the same names, read
//! at each scrape (the lab moves an API into its cgroup after it started, so the path is looked up
//! each time): `cgroup_cpu_nr_periods`, `cgroup_cpu_nr_throttled` (periods in which the cgroup
//! was throttled) and `cgroup_cpu_throttled_seconds` (time its threads waited), all cumulative.
//! Without a readable `cpu.stat` (not Linux, no cpu controller) they stay at 0 and
//! `cgroup_cpu_stat_readable` says 0.

use std::path::PathBuf;

use prometheus::{Gauge, IntGauge};

/// The gauges, registered by `Metrics::new` and refreshed by `Metrics::render`.
pub struct CpuThrottling {
    pub readable: IntGauge,
    pub periods: IntGauge,
    pub throttled: IntGauge,
    pub throttled_seconds: Gauge,
}

/// What `cpu.stat` says, in one unit whatever the cgroup version.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CpuStat {
    pub nr_periods: u64,
    pub nr_throttled: u64,
    pub throttled_seconds: f64,
}

impl CpuThrottling {
    pub fn new() -> Self {
        let g = |name: &str, help: &str| IntGauge::new(name, help).expect("a valid gauge");
        CpuThrottling {
            readable: g(
                "cgroup_cpu_stat_readable",
                "1 when the cgroup's cpu.stat was read",
            ),
            periods: g("cgroup_cpu_nr_periods", "CFS periods elapsed (cumulative)"),
            throttled: g(
                "cgroup_cpu_nr_throttled",
                "CFS periods in which the cgroup was throttled (cumulative)",
            ),
            throttled_seconds: Gauge::new(
                "cgroup_cpu_throttled_seconds",
                "Time the cgroup's threads were throttled, seconds (cumulative)",
            )
            .expect("a valid gauge"),
        }
    }

    pub fn collectors(&self) -> Vec<Box<dyn prometheus::core::Collector>> {
        vec![
            Box::new(self.readable.clone()),
            Box::new(self.periods.clone()),
            Box::new(self.throttled.clone()),
            Box::new(self.throttled_seconds.clone()),
        ]
    }

    /// Reads `cpu.stat` again.
    pub fn refresh(&self) {
        let stat = cpu_stat_path().and_then(|p| std::fs::read_to_string(p).ok());
        let stat = stat.map(|text| parse_cpu_stat(&text));
        self.readable.set(i64::from(stat.is_some()));
        let s = stat.unwrap_or_default();
        self.periods
            .set(i64::try_from(s.nr_periods).unwrap_or(i64::MAX));
        self.throttled
            .set(i64::try_from(s.nr_throttled).unwrap_or(i64::MAX));
        self.throttled_seconds.set(s.throttled_seconds);
    }
}

impl Default for CpuThrottling {
    fn default() -> Self {
        Self::new()
    }
}

/// `cpu.stat` of cgroup v2 (`throttled_usec`) or v1 (`throttled_time`, ns).
pub fn parse_cpu_stat(text: &str) -> CpuStat {
    let mut s = CpuStat::default();
    for (key, value) in text.lines().filter_map(|l| l.split_once(' ')) {
        let Ok(v) = value.trim().parse::<u64>() else {
            continue;
        };
        match key {
            "nr_periods" => s.nr_periods = v,
            "nr_throttled" => s.nr_throttled = v,
            "throttled_usec" => s.throttled_seconds = v as f64 / 1e6,
            "throttled_time" => s.throttled_seconds = v as f64 / 1e9,
            _ => {}
        }
    }
    s
}

/// This process's `cpu.stat`: the v1 cpu controller's hierarchy if there is one, else v2's.
fn cpu_stat_path() -> Option<PathBuf> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let entries: Vec<(&str, &str)> = cgroups
        .lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once(':')?;
            rest.split_once(':')
        })
        .collect();
    let root = PathBuf::from("/sys/fs/cgroup");
    let v1 = entries
        .iter()
        .filter(|(controllers, _)| controllers.split(',').any(|c| c == "cpu"))
        .flat_map(|(controllers, path)| {
            let path = path.trim_start_matches('/');
            [
                root.join(controllers).join(path),
                root.join("cpu").join(path),
            ]
        });
    let v2 = entries
        .iter()
        .filter(|(controllers, _)| controllers.is_empty())
        .map(|(_, path)| root.join(path.trim_start_matches('/')));
    v1.chain(v2)
        .map(|dir| dir.join("cpu.stat"))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_stat_reads_in_seconds_in_both_cgroup_versions() {
        let v2 = "usage_usec 9000\nnr_periods 120\nnr_throttled 7\nthrottled_usec 350000\n";
        let v1 = "nr_periods 120\nnr_throttled 7\nthrottled_time 350000000\nnr_bursts 0\n";
        let want = CpuStat {
            nr_periods: 120,
            nr_throttled: 7,
            throttled_seconds: 0.35,
        };
        assert_eq!(parse_cpu_stat(v2), want);
        assert_eq!(parse_cpu_stat(v1), want);
    }

    #[test]
    fn the_gauges_show_this_process_cgroup_when_it_is_readable() {
        let t = CpuThrottling::new();
        t.refresh();
        if cfg!(target_os = "linux") && cpu_stat_path().is_some() {
            assert_eq!(t.readable.get(), 1);
        } else {
            assert_eq!((t.readable.get(), t.periods.get()), (0, 0));
        }
    }
}
