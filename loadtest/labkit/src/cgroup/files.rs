//! Reading and writing cgroup interface files.

use std::fs;
use std::path::Path;

use super::LimitError;

/// The value, or `None` with a note saying why it could not be read.
pub(super) fn checked<T>(
    value: Result<Option<T>, LimitError>,
    notes: &mut Vec<String>,
) -> Option<T> {
    value.unwrap_or_else(|e| {
        notes.push(format!("not read back: {e}"));
        None
    })
}

pub(super) fn io(op: &'static str, path: &Path, source: std::io::Error) -> LimitError {
    LimitError::Io {
        op,
        path: path.to_owned(),
        source,
    }
}

pub(super) fn write(path: &Path, value: &str) -> Result<(), LimitError> {
    fs::write(path, value).map_err(|e| io("write", path, e))
}

pub(super) fn read(path: &Path) -> Result<String, LimitError> {
    fs::read_to_string(path).map_err(|e| io("read", path, e))
}

pub(super) fn number(text: &str) -> Result<u64, LimitError> {
    text.trim()
        .parse()
        .map_err(|_| LimitError::Unavailable(format!("not a number: {text:?}")))
}

/// A `key value` line of a flat-keyed file (`cpu.stat`, `memory.events`, `memory.oom_control`).
pub(super) fn field(text: &str, key: &str) -> Result<u64, LimitError> {
    keyed(text, key).ok_or_else(|| LimitError::Unavailable(format!("no {key} in {text:?}")))
}

pub(super) fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next() == Some(key)).then(|| words.next()?.parse().ok())?
    })
}

/// v2 `cpu.max`: `QUOTA PERIOD` (µs each) or `max PERIOD` (`None`: no quota).
pub(super) fn parse_cpu_max(text: &str) -> Option<(u64, u64)> {
    let mut words = text.split_whitespace();
    let quota: u64 = words.next()?.parse().ok()?;
    let period: u64 = words.next()?.parse().ok()?;
    (quota > 0 && period > 0).then_some((quota, period))
}

/// v2 `memory.max` / `memory.swap.max`: bytes or `max`.
pub(super) fn parse_max(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_v2_limits_and_flat_keyed_files() {
        assert_eq!(parse_cpu_max("20000 100000\n"), Some((20_000, 100_000)));
        assert_eq!(parse_cpu_max("1250 10000\n"), Some((1250, 10_000)));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_max("1073741824\n"), Some(1 << 30));
        assert_eq!(parse_max("max\n"), None);
        let events = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n";
        assert_eq!(field(events, "max").unwrap(), 12);
        assert_eq!(field(events, "oom_kill").unwrap(), 1);
        assert!(field(events, "nope").is_err());
        assert_eq!(
            keyed("usage_usec 1500000\nnr_periods 3\n", "usage_usec"),
            Some(1_500_000)
        );
    }
}
