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
use std::time::Duration;

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
        let stat = cpu_dir().and_then(|d| std::fs::read_to_string(d.join("cpu.stat")).ok());
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

/// The longest a throttled cgroup's threads wait in one CFS period: the period less the time
/// its quota lasts with every CPU the process may use running (`period − quota ÷ CPUs`); zero
/// where there is no quota or this process's cgroup cannot be read. At 0.125 CPU on two CPUs and
/// a 10 ms period that is 9.4 ms, at Kubernetes' 100 ms period 93.75 ms: a lateness any task of
/// a throttled pod can meet while its CPU is not spent on average. Read each time (the lab moves
/// an API into its cgroup after it started).
pub fn cfs_stall() -> Duration {
    let Some(dir) = cpu_dir() else {
        return Duration::ZERO;
    };
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let quota = match read("cpu.max") {
        Some(v2) => parse_cpu_max(&v2),
        None => read("cpu.cfs_quota_us")
            .zip(read("cpu.cfs_period_us"))
            .and_then(|(q, p)| parse_cpu_max(&format!("{} {}", q.trim(), p.trim()))),
    };
    let cpus = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| allowed_cpus(&s))
        .unwrap_or(1);
    quota.map_or(Duration::ZERO, |(quota, period)| stall(quota, period, cpus))
}

/// `period − quota ÷ cpus`, at least zero.
fn stall(quota: Duration, period: Duration, cpus: u32) -> Duration {
    period.saturating_sub(quota / cpus.max(1))
}

/// cgroup v2's `cpu.max` (`"12500 100000"`, `"max 100000"`: no quota), v1's two files in the
/// same form (`-1` for none): the quota and the period.
fn parse_cpu_max(text: &str) -> Option<(Duration, Duration)> {
    let mut words = text.split_whitespace();
    let quota = words.next()?.parse::<u64>().ok()?;
    let period = words.next()?.parse::<u64>().ok()?;
    Some((Duration::from_micros(quota), Duration::from_micros(period)))
}

/// How many CPUs `/proc/self/status`'s `Cpus_allowed_list` names (`"0-1"`, `"0,2-3"`).
fn allowed_cpus(status: &str) -> Option<u32> {
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    let mut n = 0;
    for range in list.trim().split(',') {
        n += match range.split_once('-') {
            Some((a, b)) => b.parse::<u32>().ok()? - a.parse::<u32>().ok()? + 1,
            None => range.parse::<u32>().map(|_| 1).ok()?,
        };
    }
    Some(n)
}

/// This process's cgroup directory of the cpu controller (the one whose `cpu.stat` exists).
fn cpu_dir() -> Option<PathBuf> {
    crate::plumbing::cgroup::dir("cpu", "cpu.stat")
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
        if cfg!(target_os = "linux") && cpu_dir().is_some() {
            assert_eq!(t.readable.get(), 1);
        } else {
            assert_eq!((t.readable.get(), t.periods.get()), (0, 0));
        }
    }

    #[test]
    fn a_throttled_pod_stalls_for_the_period_less_its_quota_spread_over_its_cpus() {
        let ms = Duration::from_millis;
        let us = Duration::from_micros;
        // 0.125 CPU on two CPUs: 1.25 ms of quota lasts 0.625 ms with both running.
        assert_eq!(stall(us(1250), ms(10), 2), us(9375));
        assert_eq!(stall(ms(12) + us(500), ms(100), 1), us(87_500));
        // A quota of whole CPUs on as many CPUs never stalls a period out.
        assert_eq!(stall(ms(200), ms(100), 2), Duration::ZERO);
        assert_eq!(stall(ms(10), ms(100), 0), ms(90), "no CPU count read: one");
    }

    #[test]
    fn the_quota_reads_from_both_cgroup_versions_and_none_is_none() {
        let q = |quota, period| Some((Duration::from_micros(quota), Duration::from_micros(period)));
        assert_eq!(parse_cpu_max("12500 100000\n"), q(12_500, 100_000));
        assert_eq!(parse_cpu_max("1250 10000"), q(1250, 10_000));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("-1 100000"), None);
    }

    #[test]
    fn the_allowed_cpus_are_counted_from_ranges_and_lists() {
        let status =
            |list: &str| format!("Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t{list}\n");
        assert_eq!(allowed_cpus(&status("0-1")), Some(2));
        assert_eq!(allowed_cpus(&status("0,2-3")), Some(3));
        assert_eq!(allowed_cpus(&status("5")), Some(1));
        assert_eq!(allowed_cpus("Name:\tx\n"), None);
    }
}
