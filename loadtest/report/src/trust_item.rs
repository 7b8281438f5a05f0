//! One item of the trust strip (`trust.rs`): its state and what it says. Its own module because
//! the strip's items are made in more than one place (the objective's in `slo_verdict.rs`), and
//! each maker imports it from here rather than from the strip that gathers them.

/// How an item of the strip stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Ok,
    Bad,
    Unknown,
}

impl State {
    pub(super) fn mark(self) -> &'static str {
        match self {
            State::Ok => "✓",
            State::Bad => "✗",
            State::Unknown => "?",
        }
    }
    pub(super) fn class(self) -> &'static str {
        match self {
            State::Ok => "ok",
            State::Bad => "bad",
            State::Unknown => "unk",
        }
    }
}

/// One item of the strip.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The element's id (`limits-not-enforced`, `harness-bound` when they fail).
    pub id: &'static str,
    /// The section with the detail.
    pub href: &'static str,
    pub state: State,
    pub label: String,
    pub detail: String,
}
