//! Where the cgroup hierarchies are and where a lab group may be created (Linux, v1 or v2).

use std::fs;
use std::path::{Path, PathBuf};

use procfs_core::process::MountInfos;
use procfs_core::{FromRead, ProcessCGroup, ProcessCGroups};

use super::CgroupVersion;

/// The controllers labkit uses; `cpuacct` only exists (and is only needed for usage) on v1.
pub(super) const CONTROLLERS: [&str; 3] = ["cpu", "cpuacct", "memory"];

/// One hierarchy the lab group lives in: v2 has one holding everything, v1 one per mount.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Hierarchy {
    /// The labkit controllers attached to it.
    pub controllers: Vec<&'static str>,
    /// Where the hierarchy is mounted.
    pub mount: PathBuf,
    /// Where the lab group's directory is created.
    pub base: PathBuf,
    /// This process's own cgroup, where leftover processes are moved back to.
    pub origin: PathBuf,
}

/// The chosen cgroup layout, or why there is none.
pub(super) fn discover() -> Result<(CgroupVersion, Vec<Hierarchy>), String> {
    let mountinfo = MountInfos::from_file("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo ({e}): not Linux?"))?;
    let own = ProcessCGroups::from_file("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?
        .0;
    let mounts = cgroup_mounts(mountinfo);
    let v2_reason = match v2(&mounts, &own) {
        Ok(hierarchy) => return Ok((CgroupVersion::V2, vec![hierarchy])),
        Err(reason) => reason,
    };
    match v1(&mounts, &own) {
        Ok(hierarchies) => Ok((CgroupVersion::V1, hierarchies)),
        Err(v1_reason) => Err(format!("cgroup v2: {v2_reason}; cgroup v1: {v1_reason}")),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Mount {
    root: String,
    point: PathBuf,
    fstype: String,
    super_options: Vec<String>,
}

/// The cgroup mounts of `/proc/self/mountinfo`.
pub(super) fn cgroup_mounts(mountinfo: MountInfos) -> Vec<Mount> {
    mountinfo
        .into_iter()
        .filter(|m| m.fs_type == "cgroup" || m.fs_type == "cgroup2")
        .map(|m| Mount {
            root: m.root,
            // procfs leaves the kernel's escapes in the mount point.
            point: PathBuf::from(unescape(&m.mount_point.to_string_lossy())),
            fstype: m.fs_type,
            super_options: m.super_options.into_keys().collect(),
        })
        .collect()
}

/// Mount points escape spaces and the like as `\040`.
fn unescape(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\134", "\\")
}

/// The directory of cgroup `path` (as in /proc/self/cgroup) under `mount`.
fn dir_of(mount: &Mount, path: &str) -> PathBuf {
    let relative = path
        .strip_prefix(mount.root.as_str())
        .unwrap_or(path)
        .trim_start_matches('/');
    mount.point.join(relative)
}

fn v2(mounts: &[Mount], own: &[ProcessCGroup]) -> Result<Hierarchy, String> {
    let mount = mounts
        .iter()
        .find(|m| m.fstype == "cgroup2")
        .ok_or("no cgroup2 mount")?;
    let available = read_words(&mount.point.join("cgroup.controllers"));
    if !["cpu", "memory"]
        .iter()
        .all(|c| available.iter().any(|a| a == c))
    {
        return Err(format!(
            "{} offers controllers {available:?}, not cpu and memory (hybrid mode: they are bound to v1)",
            mount.point.display()
        ));
    }
    let path = own
        .iter()
        .find(|g| g.controllers.is_empty())
        .map_or("/", |g| g.pathname.as_str());
    let origin = dir_of(mount, path);
    // A cgroup with processes cannot hand controllers to children ("no internal processes"), so
    // our own cgroup only works if someone already delegated them; else use the hierarchy's root.
    let base = if has_cpu_and_memory(&origin.join("cgroup.subtree_control")) {
        origin.clone()
    } else {
        let control = mount.point.join("cgroup.subtree_control");
        if !has_cpu_and_memory(&control) {
            fs::write(&control, "+cpu +memory").map_err(|e| {
                format!(
                    "cannot enable cpu and memory in {} ({e}); run the lab in a cgroup with \
                     delegated controllers (e.g. `systemd-run --scope -p Delegate=yes …`)",
                    control.display()
                )
            })?;
        }
        mount.point.clone()
    };
    Ok(Hierarchy {
        controllers: vec!["cpu", "memory"],
        mount: mount.point.clone(),
        base,
        origin,
    })
}

fn v1(mounts: &[Mount], own: &[ProcessCGroup]) -> Result<Vec<Hierarchy>, String> {
    let mut hierarchies: Vec<Hierarchy> = Vec::new();
    for controller in CONTROLLERS {
        let Some(mount) = mounts
            .iter()
            .find(|m| m.fstype == "cgroup" && m.super_options.iter().any(|o| o == controller))
        else {
            if controller == "cpuacct" {
                continue; // only needed to read usage
            }
            return Err(format!(
                "no cgroup v1 hierarchy with the {controller} controller"
            ));
        };
        if let Some(h) = hierarchies.iter_mut().find(|h| h.mount == mount.point) {
            h.controllers.push(controller);
            continue;
        }
        let path = own
            .iter()
            .find(|g| g.controllers.iter().any(|c| c == controller))
            .map_or("/", |g| g.pathname.as_str());
        // Nested under our own cgroup, so limits set on us still apply to the group.
        let origin = dir_of(mount, path);
        hierarchies.push(Hierarchy {
            controllers: vec![controller],
            mount: mount.point.clone(),
            base: origin.clone(),
            origin,
        });
    }
    Ok(hierarchies)
}

fn read_words(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

fn has_cpu_and_memory(path: &Path) -> bool {
    let words = read_words(path);
    ["cpu", "memory"]
        .iter()
        .all(|c| words.iter().any(|w| w == c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_mountinfo(text: &str) -> Vec<Mount> {
        cgroup_mounts(MountInfos::from_read(text.as_bytes()).unwrap())
    }

    fn parse_proc_cgroup(text: &str) -> Vec<ProcessCGroup> {
        ProcessCGroups::from_read(text.as_bytes()).unwrap().0
    }

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn v1_groups_nest_under_our_own_cgroup_per_hierarchy() {
        let mounts = parse_mountinfo(HYBRID);
        assert_eq!(mounts.len(), 4, "tmpfs is not a cgroup mount");
        let own = parse_proc_cgroup("4:memory:/lab/x\n2:cpuacct:/\n1:cpu:/\n0::/\n");
        let h = v1(&mounts, &own).unwrap();
        assert_eq!(h.len(), 3);
        assert_eq!(h[0].base, Path::new("/sys/fs/cgroup/cpu"));
        assert_eq!(h[2].controllers, vec!["memory"]);
        assert_eq!(h[2].base, Path::new("/sys/fs/cgroup/memory/lab/x"));
    }

    #[test]
    fn comounted_v1_controllers_share_a_directory() {
        let text = "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n\
                    35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        let own = parse_proc_cgroup("3:cpu,cpuacct:/a\n4:memory:/docker/abc\n");
        let h = v1(&parse_mountinfo(text), &own).unwrap();
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].controllers, vec!["cpu", "cpuacct"]);
        assert_eq!(h[0].base, Path::new("/sys/fs/cgroup/cpu,cpuacct/a"));
        // The mount's root is the namespace's view of our cgroup.
        assert_eq!(h[1].base, Path::new("/sys/fs/cgroup/memory"));
    }

    #[test]
    fn v1_without_a_memory_hierarchy_is_refused() {
        let text = "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
        let err = v1(&parse_mountinfo(text), &[]).unwrap_err();
        assert!(err.contains("memory"), "{err}");
    }

    #[test]
    fn escaped_mount_points_are_read_as_paths() {
        let text = "32 31 0:29 / /sys/fs/cgroup/my\\040cpu rw - cgroup cgroup rw,cpu\n";
        let mounts = parse_mountinfo(text);
        assert_eq!(mounts[0].point, Path::new("/sys/fs/cgroup/my cpu"));
    }
}
