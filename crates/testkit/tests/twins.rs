//! The two APIs run the same order flow: blocking-api's `service.rs` is reactive-api's with the
//! `async`/`.await` taken out. This test holds them to it — a step added, removed or reordered in
//! one and not the other fails here, not in a lab run weeks later.
//!
//! Normalisation: module docs (`//!`) dropped, `async ` and `.await` removed, the one sanctioned
//! difference (the retry back-off sleeps with `std::thread::sleep` on a blocking thread and with
//! `tokio::time::sleep` on the event loop) mapped to one name, then all whitespace removed (rustfmt
//! lays out a chain of `.await`s differently).

use std::path::Path;

fn normalised(api: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../{api}/src/service.rs"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("async ", "")
        .replace(".await", "")
        .replace("tokio::time::sleep", "std::thread::sleep")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect()
}

#[test]
fn the_two_service_rs_are_twins() {
    let (blocking, reactive) = (normalised("blocking-api"), normalised("reactive-api"));
    if blocking != reactive {
        let at = blocking
            .chars()
            .zip(reactive.chars())
            .take_while(|(a, b)| a == b)
            .count();
        let around = |s: &str| {
            s.chars()
                .skip(at.saturating_sub(80))
                .take(160)
                .collect::<String>()
        };
        panic!(
            "blocking-api/src/service.rs and reactive-api/src/service.rs differ beyond async/.await \
             (normalised, from character {at}):\nblocking: …{}…\nreactive: …{}…",
            around(&blocking),
            around(&reactive)
        );
    }
}

#[test]
fn the_normalisation_still_sees_a_changed_step() {
    let blocking = normalised("blocking-api");
    assert!(
        blocking.len() > 2000,
        "the file was read: {} chars",
        blocking.len()
    );
    let tampered = blocking.replacen("check_deadline", "check_nothing", 1);
    assert_ne!(tampered, normalised("reactive-api"));
}
