//! Readings from `/proc`, the bench's only source of memory and CPU figures, through the `procfs`
//! crate (as labkit reads them). A reading that fails is 0 or "unknown": the bench prints what it
//! could read and says nothing it did not measure.

use procfs::process::{LimitValue, Process};
use procfs::{CpuInfo, Current, LoadAverage};

/// The kernel's ephemeral port range (`net.ipv4.ip_local_port_range`): a sysctl, which the
/// `procfs` crate does not cover; two numbers on one line.
pub fn ephemeral_ports() -> Option<(u16, u16)> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut bounds = text.split_whitespace().map(|w| w.parse().ok());
    Some((bounds.next()??, bounds.next()??))
}

fn process(pid: u32) -> Option<Process> {
    Process::new(i32::try_from(pid).ok()?).ok()
}

/// `VmRSS` of `pid`, KiB.
pub fn rss_kib(pid: u32) -> u64 {
    process(pid)
        .and_then(|p| p.status().ok()?.vmrss)
        .unwrap_or(0)
}

/// `VmHWM` (the peak RSS since it started) of `pid`, KiB.
pub fn hwm_kib(pid: u32) -> u64 {
    process(pid)
        .and_then(|p| p.status().ok()?.vmhwm)
        .unwrap_or(0)
}

/// CPU seconds (user + system) a process has used so far; `None` for this process.
pub fn cpu_seconds(pid: Option<u32>) -> f64 {
    let process = match pid {
        Some(pid) => process(pid),
        None => Process::myself().ok(),
    };
    let ticks = process
        .and_then(|p| p.stat().ok())
        .map_or(0, |s| s.utime + s.stime);
    ticks as f64 / procfs::ticks_per_second() as f64
}

/// The soft `Max open files` of this process (`None` when unlimited or unreadable).
pub fn own_nofile_limit() -> Option<u64> {
    match Process::myself()
        .ok()?
        .limits()
        .ok()?
        .max_open_files
        .soft_limit
    {
        LimitValue::Value(n) => Some(n),
        LimitValue::Unlimited => None,
    }
}

/// `/proc/loadavg`'s three averages: how busy the (possibly shared) machine was.
pub fn load_average() -> String {
    LoadAverage::current().map_or_else(
        |_| "unknown".to_owned(),
        |l| format!("{:.2} {:.2} {:.2}", l.one, l.five, l.fifteen),
    )
}

/// The first CPU's model name.
pub fn cpu_model() -> String {
    CpuInfo::current()
        .ok()
        .and_then(|c| c.model_name(0).map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        let rss = rss_kib(me);
        assert!(rss > 0);
        assert!(
            hwm_kib(me) >= rss,
            "the peak is at least what was resident before it"
        );
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        assert!(x != 1 && cpu_seconds(None) > 0.0);
        assert!(own_nofile_limit().is_some_and(|n| n > 0));
        assert_ne!(load_average(), "unknown");
    }
}
