//! Readings from `/proc`, the bench's only source of memory and CPU figures.

use std::fs;
use std::process::Command;

/// A `/proc/PID/status` field in KiB (`VmRSS`, `VmHWM`).
pub fn status_kib(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| {
        l.strip_prefix(field)
            .is_some_and(|rest| rest.starts_with(':'))
    })?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `utime + stime` from `/proc/PID/stat`, in clock ticks. Fields are counted after the `)` that
/// closes the command name, which may itself contain spaces.
pub fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state); utime is field 14, stime field 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// Soft `Max open files` from `/proc/PID/limits`.
pub fn nofile_soft_limit(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// The kernel's ephemeral port range (`net.ipv4.ip_local_port_range`).
pub fn ephemeral_ports() -> Option<(u16, u16)> {
    let text = read("/proc/sys/net/ipv4/ip_local_port_range")?;
    let mut bounds = text.split_whitespace().map(|w| w.parse().ok());
    Some((bounds.next()??, bounds.next()??))
}

pub fn rss_kib(pid: u32) -> u64 {
    read(&format!("/proc/{pid}/status"))
        .and_then(|s| status_kib(&s, "VmRSS"))
        .unwrap_or(0)
}

pub fn hwm_kib(pid: u32) -> u64 {
    read(&format!("/proc/{pid}/status"))
        .and_then(|s| status_kib(&s, "VmHWM"))
        .unwrap_or(0)
}

/// CPU seconds (user + system) a process has used so far.
pub fn cpu_seconds(pid: &str) -> f64 {
    let ticks = read(&format!("/proc/{pid}/stat"))
        .and_then(|s| stat_cpu_ticks(&s))
        .unwrap_or(0);
    ticks as f64 / clock_ticks_per_second()
}

pub fn own_nofile_limit() -> Option<u64> {
    nofile_soft_limit(&read("/proc/self/limits")?)
}

/// `/proc/loadavg`'s first three fields: how busy the (possibly shared) machine was.
pub fn load_average() -> String {
    read("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".to_owned())
}

pub fn cpu_model() -> String {
    read("/proc/cpuinfo")
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("model name"))?;
            Some(line.split_once(':')?.1.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

fn clock_ticks_per_second() -> f64 {
    // No libc here (the workspace forbids unsafe code); `getconf` knows, and it is 100 on Linux.
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

fn read(path: &str) -> Option<String> {
    fs::read_to_string(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_fields() {
        let status = "Name:\tmock-deps\nVmHWM:\t   12000 kB\nVmRSS:\t    8192 kB\nVmRSSx: 1 kB\n";
        assert_eq!(status_kib(status, "VmRSS"), Some(8192));
        assert_eq!(status_kib(status, "VmHWM"), Some(12000));
        assert_eq!(status_kib(status, "VmSwap"), None);
    }

    #[test]
    fn parses_cpu_ticks_even_with_spaces_in_the_name() {
        let stat = "4242 (mock deps) S 1 4242 4242 0 -1 4194560 500 0 0 0 170 30 0 0 20 0 3 0";
        assert_eq!(stat_cpu_ticks(stat), Some(200));
    }

    #[test]
    fn parses_nofile_limit() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            20000                20000                files\n";
        assert_eq!(nofile_soft_limit(limits), Some(20000));
    }
}
