//! The admin surface's wire contract, for the lab and the tests that steer the mocks: its paths
//! and the types of its requests and answers. The handlers (`routes`) serve exactly these types,
//! so a client that uses them cannot drift from the server.
//!
//! | request | body | answer |
//! |---|---|---|
//! | `GET` [`CONFIG`] | | [`MockConfig`] |
//! | `PUT` [`CONFIG`] | [`ConfigPatch`] (any subset) | the new [`MockConfig`], or 400 [`ConfigError`] |
//! | `GET` [`LEDGER`] ([`ledger`]`(true)`: `?detail=true`) | | [`Ledger`] |
//! | `GET` [`STATS`] | | [`Stats`] |
//! | `POST` [`RESET`] | | 204: ledger and counters cleared, config kept |
//! | `GET` [`HEALTH`] | | `{"status":"ok"}` |

use serde::{Deserialize, Serialize};

pub use crate::config::{ConfigPatch, EndpointConfig, EndpointPatch, MockConfig};
pub use crate::ledger::{KeyCharges, Ledger};
pub use crate::stats::{PaymentStats, RiskStats, SellerStats, Stats};

pub const CONFIG: &str = "/admin/config";
pub const LEDGER: &str = "/admin/ledger";

/// [`LEDGER`]; with `detail`, [`Ledger::charges_by_key`] filled in.
pub fn ledger(detail: bool) -> &'static str {
    if detail {
        "/admin/ledger?detail=true"
    } else {
        LEDGER
    }
}

pub const STATS: &str = "/admin/stats";
pub const RESET: &str = "/admin/reset";
/// Not under `/admin`: the readiness check every service of the lab answers.
pub const HEALTH: &str = "/health";

/// The 400 answer to a `PUT` [`CONFIG`] that would leave an invalid configuration (or does not
/// parse); nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigError {
    /// Always `invalid_config`.
    pub error: String,
    pub detail: String,
}
