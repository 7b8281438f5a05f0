//! The lab's own part of starting the services: raising the open-file limit for thousands of
//! connections, and finding the release build of a binary. The rest ([`ServiceProcess`],
//! readiness polling, [`find_binary`]) is testbed's, shared with the product's tests, and
//! re-exported here so the lab names one module.

use std::path::{Path, PathBuf};

use anyhow::Context;
use nix::sys::resource::{Resource, getrlimit, setrlimit};

pub use testbed::process::*;

/// Raises this process's `RLIMIT_NOFILE` (children inherit it: a server or a load generator
/// holding thousands of connections needs it) towards [`NOFILE_WANTED`]: the soft limit up to the
/// hard one, and the hard one too where the process may (root: `CAP_SYS_RESOURCE`, up to
/// `fs.nr_open`). Returns the new soft limit.
pub fn raise_nofile_limit() -> anyhow::Result<u64> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).context("getrlimit(RLIMIT_NOFILE)")?;
    // An "unlimited" hard limit is refused by some kernels (Linux caps at fs.nr_open, macOS at
    // kern.maxfilesperproc): try large finite values, largest first.
    for target in [NOFILE_WANTED, 1 << 17, 1 << 16] {
        if target <= soft {
            return Ok(soft);
        }
        let new_hard = hard.max(target);
        if setrlimit(Resource::RLIMIT_NOFILE, target, new_hard).is_ok() {
            return Ok(target);
        }
    }
    if hard > soft && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return Ok(hard);
    }
    Ok(soft)
}

/// The open-file limit the lab asks for: far above the generator's in-flight cap, so neither the
/// generator nor an API runs out of descriptors before the load does what it is meant to.
pub const NOFILE_WANTED: u64 = 1 << 18;

/// [`find_binary`] of the release build only (next to this executable when it is a release
/// build, else in the workspace's `target/release`): for figures that mean nothing in a debug
/// build, whichever build of the lab itself runs.
pub fn find_release_binary(name: &str) -> anyhow::Result<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_owned))
        .filter(|d| d.ends_with("release"))
    {
        dirs.push(dir);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for target in std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .into_iter()
        .chain([workspace.join("target")])
    {
        dirs.push(target.join("release"));
    }
    find_binary_in(name, &dirs)
}
