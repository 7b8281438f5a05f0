//! What a test does when the machine lacks something it needs (a program such as kubectl or
//! nats-server, writable cgroups): under CI (`CI=true`, as `.ci/run` is run) the test fails, so a
//! CI run cannot report a test as passed that never ran; elsewhere it prints `SKIPPED: …` and the
//! test returns, so a developer without, say, kubectl can still run everything else.
//! `scripts/install-deps.sh` installs each such program, or names it where it cannot.

use std::fmt::Display;

/// Skips the calling test (prints `SKIPPED: {reason}`; the caller returns right after) or, under
/// CI, fails it with `reason`.
#[track_caller]
pub fn unless_ci(reason: impl Display) {
    let ci = std::env::var("CI").ok();
    if under_ci(ci.as_deref()) {
        panic!(
            "{reason} (CI={}: a test may not pass by skipping; scripts/install-deps.sh installs \
             what the tests need)",
            ci.unwrap_or_default()
        );
    }
    eprintln!("SKIPPED: {reason}");
}

/// Whether `CI`'s value means a CI run: set and neither empty, `false` nor `0` (CI services set
/// `true`; some set `1`).
fn under_ci(value: Option<&str>) -> bool {
    value.is_some_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "false" | "0"))
}

#[cfg(test)]
mod tests {
    use super::under_ci;

    #[test]
    fn ci_is_any_value_but_empty_false_or_zero() {
        for v in ["true", "TRUE", "1", "yes"] {
            assert!(under_ci(Some(v)), "{v}");
        }
        for v in [None, Some(""), Some("false"), Some("False"), Some("0")] {
            assert!(!under_ci(v), "{v:?}");
        }
    }
}
