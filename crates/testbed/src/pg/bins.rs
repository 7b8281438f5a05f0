//! Locating the PostgreSQL server binaries.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;

const NOT_FOUND: &str = "PostgreSQL server binaries (initdb, pg_ctl, postgres) were not found on \
PATH nor in /usr/lib/postgresql/*/bin, /opt/homebrew/opt/postgresql*/bin, \
/usr/local/opt/postgresql*/bin or /usr/local/pgsql/bin. Install them (Debian/Ubuntu: \
`apt-get install postgresql`; macOS: `brew install postgresql@15`) or pass `--database-url` to use a \
running server";

/// The directory holding `initdb`, `pg_ctl` and `postgres`: PATH, then the usual install locations,
/// highest version first.
pub fn find_bin_dir() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.extend(versioned_dirs(Path::new("/usr/lib/postgresql"), ""));
    dirs.extend(versioned_dirs(Path::new("/opt/homebrew/opt"), "postgresql"));
    dirs.extend(versioned_dirs(Path::new("/usr/local/opt"), "postgresql"));
    dirs.push(PathBuf::from("/usr/local/pgsql/bin"));
    find_bin_dir_in(&dirs)
}

/// The first of `dirs` holding all three server binaries. Symbolic links (e.g. in
/// `/usr/local/bin`) are followed to the installation's own directory, where `psql` also is.
pub fn find_bin_dir_in(dirs: &[PathBuf]) -> anyhow::Result<PathBuf> {
    let complete = |d: &Path| {
        ["initdb", "pg_ctl", "postgres"]
            .iter()
            .all(|b| d.join(b).is_file())
    };
    let found = dirs.iter().find(|d| complete(d)).context(NOT_FOUND)?;
    let real = fs::canonicalize(found.join("initdb"))
        .ok()
        .and_then(|p| p.parent().map(Path::to_owned))
        .filter(|d| complete(d));
    Ok(real.unwrap_or_else(|| found.clone()))
}

/// `PARENT/PREFIX*/bin`, highest version first (`15` < `16`, `postgresql@15` < `postgresql@16`).
fn versioned_dirs(parent: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut found: Vec<(Vec<u64>, PathBuf)> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let rest = name.strip_prefix(prefix)?.trim_start_matches('@');
            let version = rest.split('.').map(|p| p.parse().unwrap_or(0)).collect();
            Some((version, parent.join(&name).join("bin")))
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0));
    found.into_iter().map(|(_, dir)| dir).collect()
}
