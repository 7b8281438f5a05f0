//! The machine's flush cost, as PostgreSQL's own `pg_test_fsync` measures it (Debian ships it with
//! the server, under `/usr/lib/postgresql/<version>/bin`): what one durable commit costs at least,
//! and so how much group commit can save. Run in the temporary directory, where the lab's cluster
//! keeps its data (same file system).

use std::path::{Path, PathBuf};
use std::process::Command;

pub use lab_results::batching::FsyncFigure;

/// Seconds per test (`pg_test_fsync -s`): about 18 tests are run.
const SECS_PER_TEST: &str = "1";

/// Runs `pg_test_fsync`; the error says why there is no figure.
pub fn measure() -> Result<FsyncFigure, String> {
    let bin = labkit::pg::find_bin_dir()
        .map_err(|e| format!("{e:#}"))?
        .join("pg_test_fsync");
    if !bin.is_file() {
        return Err(format!("{} not found", bin.display()));
    }
    let tmp = std::env::temp_dir();
    let file = tmp.join(format!("lab-pg-test-fsync-{}.out", std::process::id()));
    let out = Command::new(&bin)
        .args(["-s", SECS_PER_TEST, "-f"])
        .arg(&file)
        .output();
    let _ = std::fs::remove_file(&file);
    let out = out.map_err(|e| format!("running {}: {e}", bin.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed ({}): {}",
            bin.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut figure = parse(&text, "fdatasync")
        .ok_or_else(|| format!("no fdatasync figure in pg_test_fsync's output:\n{text}"))?;
    figure.fs_type = fs_type(&tmp).unwrap_or_else(|| "unknown".to_owned());
    figure.dir = tmp.display().to_string();
    Ok(figure)
}

/// The `method` line of the "one 8kB write" section, e.g.
/// `        fdatasync                          6840.145 ops/sec     146 usecs/op`.
pub fn parse(output: &str, method: &str) -> Option<FsyncFigure> {
    let section: Vec<&str> = output
        .lines()
        .skip_while(|l| !l.contains("using one 8kB write"))
        .take_while(|l| !l.trim().is_empty() || l.contains("using one 8kB write"))
        .collect();
    let line = section
        .iter()
        .find(|l| l.split_whitespace().next() == Some(method))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = |unit: &str| {
        let i = words.iter().position(|w| *w == unit)?;
        words.get(i.checked_sub(1)?)?.parse::<f64>().ok()
    };
    Some(FsyncFigure {
        method: method.to_owned(),
        ops_per_s: at("ops/sec")?,
        usecs_per_op: at("usecs/op")?,
        dir: String::new(),
        fs_type: String::new(),
        excerpt: section.join("\n"),
    })
}

/// The type of the file system holding `path` (the longest mount point above it in /proc/mounts).
fn fs_type(path: &Path) -> Option<String> {
    let path = std::fs::canonicalize(path).ok()?;
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, at, kind) = (f.next()?, PathBuf::from(f.next()?), f.next()?);
            path.starts_with(&at)
                .then(|| (at.as_os_str().len(), kind.to_owned()))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, kind)| kind)
}

#[cfg(test)]
mod tests {
    const OUTPUT: &str = "\
5 seconds per test
O_DIRECT supported on this platform for open_datasync and open_sync.

Compare file sync methods using one 8kB write:
(in wal_sync_method preference order, except fdatasync is Linux's default)
        open_datasync                      6286.290 ops/sec     159 usecs/op
        fdatasync                          6840.145 ops/sec     146 usecs/op
        fsync                              6126.743 ops/sec     163 usecs/op
        fsync_writethrough                              n/a
        open_sync                          5963.183 ops/sec     168 usecs/op

Compare file sync methods using two 8kB writes:
        fdatasync                          4712.769 ops/sec     212 usecs/op
";

    #[test]
    fn reads_the_one_write_figure_of_the_method() {
        let f = super::parse(OUTPUT, "fdatasync").unwrap();
        assert_eq!((f.ops_per_s, f.usecs_per_op), (6840.145, 146.0));
        assert!(f.excerpt.contains("open_sync") && !f.excerpt.contains("212"));
        assert!(super::parse(OUTPUT, "fsync_writethrough").is_none());
        assert!(super::parse("nothing", "fdatasync").is_none());
    }
}
