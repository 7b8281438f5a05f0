//! The overload parts of [`RunResults`](super::RunResults): whether the APIs shed load,
//! and what happened to the requests whose client gave up.

use serde::{Deserialize, Serialize};

/// Outcome kind of a request the API refused at admission (503 `{"error":"overloaded"}`): it
/// was neither authenticated, reserved nor charged.
pub const OUTCOME_OVERLOADED: &str = "overloaded";

/// `--shedding`: whether the lab leaves the APIs' admission control on. A command-line value of
/// the `loadtest` binary (feature `clap`), so the report can read it without clap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Shedding {
    /// The APIs' own `MAX_IN_FLIGHT` default: beyond it, 503 `overloaded` within `QUEUE_TIMEOUT_MS`.
    On,
    /// `MAX_IN_FLIGHT=0`: every request is admitted and queues (the original experiment's APIs).
    Off,
}

impl Shedding {
    pub fn as_str(self) -> &'static str {
        match self {
            Shedding::On => "on",
            Shedding::Off => "off",
        }
    }
}

/// Requests whose client gave up (timeout, broken or refused connection) and never got an answer
/// for their key, and how many of those keys nevertheless have an order in the database: work the
/// API finished for nobody.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AfterGiveUp {
    /// Distinct (seller, reference_id) keys whose client gave up and that no other request of the
    /// run got a 201 for.
    pub gave_up: u64,
    /// Of those, the keys with a row in `orders`, counted once the API was idle and before the
    /// lab emptied the tables; `None` when the database could not be asked.
    pub orders: Option<u64>,
    /// When and how it was counted, or why it could not be.
    pub detail: String,
}
