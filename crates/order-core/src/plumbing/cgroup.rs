//! This process's own cgroup: where its controllers' files are, and the memory limit its pod
//! sets. Read each time they are asked for: the lab moves an API into its cgroup after it
//! started, and a file that cannot be read says "no limit", never an error.

use std::path::PathBuf;

/// This process's cgroup directory of `controller` (`cpu`, `memory`): v1's hierarchy if there is
/// one, else v2's — the first in which `marker` (a file that controller writes) exists.
pub fn dir(controller: &str, marker: &str) -> Option<PathBuf> {
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
        .filter(|(controllers, _)| controllers.split(',').any(|c| c == controller))
        .flat_map(|(controllers, path)| {
            let path = path.trim_start_matches('/');
            [
                root.join(controllers).join(path),
                root.join(controller).join(path),
            ]
        });
    let v2 = entries
        .iter()
        .filter(|(controllers, _)| controllers.is_empty())
        .map(|(_, path)| root.join(path.trim_start_matches('/')));
    v1.chain(v2).find(|dir| dir.join(marker).is_file())
}

/// The memory limit of this process's cgroup, bytes: v2's `memory.max`, else v1's
/// `memory.limit_in_bytes`; `None` without one (or where neither can be read).
pub fn memory_limit() -> Option<u64> {
    let text = ["memory.max", "memory.limit_in_bytes"]
        .iter()
        .find_map(|file| {
            dir("memory", file).and_then(|d| std::fs::read_to_string(d.join(file)).ok())
        })?;
    parse_memory_limit(&text)
}

/// v2's `max` and v1's "unlimited" (the largest page-aligned `i64`, 2^63 − 4096 on x86_64) are
/// no limit: any value at 2^62 or above is taken as none.
fn parse_memory_limit(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().filter(|&n| n < 1 << 62)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_limit_reads_from_both_cgroup_versions_and_unlimited_is_none() {
        assert_eq!(parse_memory_limit("134217728\n"), Some(128 << 20));
        assert_eq!(parse_memory_limit("max\n"), None);
        assert_eq!(parse_memory_limit("9223372036854771712\n"), None);
        assert_eq!(parse_memory_limit(""), None);
    }
}
