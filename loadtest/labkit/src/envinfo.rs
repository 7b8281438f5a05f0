//! Where a run happened: printed at the top of every report, since latency numbers mean little
//! without the machine, OS, compiler and commit that produced them.

use std::path::Path;
use std::process::Command;

use serde::{Deserialize, Serialize};

/// The machine and build a run happened on. Fields that cannot be read are `"unknown"` (or 0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// Logical CPUs online on the machine (not the lab's cgroup quota).
    pub cores: usize,
    pub cpu_model: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// `PRETTY_NAME` from `/etc/os-release`, else the target OS.
    pub os: String,
    /// `rustc -V` on this machine, else the compiler that built labkit.
    pub rustc: String,
    /// `git rev-parse HEAD` (with `-dirty` when tracked files differ), else `"unknown"`.
    pub git_sha: String,
    pub hostname: String,
    pub total_memory_bytes: u64,
}

impl Environment {
    /// Reads everything now (runs `rustc -V` and `git`, so not for hot paths).
    pub fn capture() -> Environment {
        Environment {
            cores: imp::cores(),
            cpu_model: imp::cpu_model().unwrap_or_else(unknown),
            kernel: imp::kernel().unwrap_or_else(unknown),
            os: os_release().unwrap_or_else(|| std::env::consts::OS.to_owned()),
            rustc: command_output("rustc", &["-V"], None)
                .unwrap_or_else(|| env!("LABKIT_BUILD_RUSTC").to_owned()),
            git_sha: git_sha().unwrap_or_else(unknown),
            hostname: nix::unistd::gethostname()
                .ok()
                .map(|h| h.to_string_lossy().into_owned())
                .unwrap_or_else(unknown),
            total_memory_bytes: imp::total_memory().unwrap_or(0),
        }
    }
}

fn unknown() -> String {
    "unknown".to_owned()
}

fn os_release() -> Option<String> {
    let text = std::fs::read_to_string("/etc/os-release").ok()?;
    let value = text.lines().find_map(|l| l.strip_prefix("PRETTY_NAME="))?;
    Some(value.trim_matches('"').to_owned())
}

fn git_sha() -> Option<String> {
    // The current directory first (the lab is run from the checkout), then labkit's own workspace.
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    [None, Some(workspace.as_path())]
        .into_iter()
        .find_map(|dir| {
            let sha = command_output("git", &["rev-parse", "HEAD"], dir)?;
            let status = command_output(
                "git",
                &["status", "--porcelain", "--untracked-files=no"],
                dir,
            );
            let dirty = status.is_some_and(|s| !s.is_empty());
            Some(if dirty { format!("{sha}-dirty") } else { sha })
        })
}

/// Trimmed stdout of a successful command.
fn command_output(program: &str, args: &[&str], dir: Option<&Path>) -> Option<String> {
    let mut command = Command::new(program);
    command.args(args);
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let output = command.output().ok().filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

#[cfg(target_os = "linux")]
mod imp {
    use procfs::{CpuInfo, Current, Meminfo};

    pub(super) fn cores() -> usize {
        CpuInfo::current().map(|c| c.num_cores()).unwrap_or(0)
    }
    pub(super) fn cpu_model() -> Option<String> {
        Some(CpuInfo::current().ok()?.model_name(0)?.to_owned())
    }
    pub(super) fn kernel() -> Option<String> {
        // Read as text: procfs's KernelVersion keeps major.minor.patch only, not `uname -r`.
        Some(
            std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()?
                .trim()
                .to_owned(),
        )
    }
    pub(super) fn total_memory() -> Option<u64> {
        Some(Meminfo::current().ok()?.mem_total)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub(super) fn cores() -> usize {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0)
    }
    pub(super) fn cpu_model() -> Option<String> {
        super::command_output("sysctl", &["-n", "machdep.cpu.brand_string"], None)
    }
    pub(super) fn kernel() -> Option<String> {
        super::command_output("uname", &["-r"], None)
    }
    pub(super) fn total_memory() -> Option<u64> {
        super::command_output("sysctl", &["-n", "hw.memsize"], None)?
            .parse()
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_this_machine() {
        let env = Environment::capture();
        assert!(env.cores >= 1, "{env:?}");
        assert!(env.total_memory_bytes > 64 << 20, "{env:?}");
        assert!(env.rustc.starts_with("rustc "), "{env:?}");
        assert_ne!(env.kernel, "unknown");
        assert_ne!(env.hostname, "unknown");
        assert!(!env.cpu_model.is_empty());
        let json = serde_json::to_string(&env).unwrap();
        assert_eq!(serde_json::from_str::<Environment>(&json).unwrap(), env);
    }
}
