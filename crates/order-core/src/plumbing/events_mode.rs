//! `EVENTS_MODE`, a word of the settings: its own module, so that reading the settings does not
//! import the events (which import the order, its contract and, through the request hash, the
//! settings again).

use serde::{Deserialize, Serialize};

/// `EVENTS_MODE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventsMode {
    Off,
    TwoPhase,
    AfterCommit,
    Outbox,
}

impl EventsMode {
    pub fn as_str(self) -> &'static str {
        match self {
            EventsMode::Off => "off",
            EventsMode::TwoPhase => "two-phase",
            EventsMode::AfterCommit => "after-commit",
            EventsMode::Outbox => "outbox",
        }
    }
}
