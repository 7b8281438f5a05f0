//! Sharded runs: one generator's share of a schedule, and the histograms that let shards be added
//! up exactly (`loadtest run --shard I/N`, `loadtest merge`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How [`HistogramSet`]'s histograms are written.
pub const HISTOGRAM_ENCODING: &str = "hdrhistogram-v2-deflate-base64";

/// One generator's part of a run: which arrivals it kept, what it offered, when it started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// `I` of `--shard I/N`: this generator kept arrival `j` when `j mod N = I`.
    pub index: u32,
    /// `N` of `--shard I/N` (1: the whole schedule).
    pub count: u32,
    /// The seed every arrival's body, key and jitter was drawn from (with the arrival's index).
    pub seed: u64,
    /// Arrivals this generator offered (every one it kept, sent or `not_sent`).
    pub offered_arrivals: u64,
    /// Wrapping sum of SplitMix64(`j`) over the arrivals offered: the shards' fingerprints add up
    /// to the whole schedule's only if together they offered each arrival exactly once.
    pub arrival_fingerprint: u64,
    /// The schedule's origin as agreed (`--start-at`, the starter's `POST /start`, or when the
    /// generator was ready), Unix ms.
    pub intended_start_unix_ms: f64,
    /// When this generator actually woke to start it, Unix ms.
    pub actual_start_unix_ms: f64,
    /// Lateness of its sends against the schedule over the run, ms (`summary.lateness_ms` of its
    /// own file).
    pub lateness_ms: crate::Lateness,
    /// This generator's own harness-bound verdict (in a merged file: why that shard fell behind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_bound: Option<String>,
    /// In a merged file: the shard's results file, as given to `loadtest merge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

impl ShardRecord {
    /// `actual − intended` start, ms.
    pub fn start_lateness_ms(&self) -> f64 {
        self.actual_start_unix_ms - self.intended_start_unix_ms
    }
}

/// Every histogram of a run, serialised, so that runs of the same schedule can be added.
/// Values are µs; latency is from the intended send time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramSet {
    /// [`HISTOGRAM_ENCODING`]: HdrHistogram's V2 format, deflated, base64 (readable by any
    /// HdrHistogram library's `decodeFromCompressedByteBuffer`).
    pub encoding: String,
    /// The whole run.
    pub total: CountsAndHistograms,
    /// Per phase of the arrival (the plateau is the phase named `constant`).
    pub phases: Vec<CountsAndHistograms>,
    /// Per second since the schedule's origin, `seconds[t]` for second `t` (as `seconds[]`).
    pub seconds: Vec<CountsAndHistograms>,
}

/// The counts and histograms of a set of requests (the whole run, a phase or a second).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CountsAndHistograms {
    pub offered: u64,
    pub sent: u64,
    pub not_sent: u64,
    pub completed: u64,
    /// Completed requests slower than 10 s (the stress rule's limit).
    pub slow: u64,
    /// Completed requests by outcome kind.
    pub outcomes: BTreeMap<String, u64>,
    /// Latency by outcome kind, µs, encoded.
    pub latency_us: BTreeMap<String, String>,
    /// Lateness of the sends (actual − intended start), µs, encoded.
    pub lateness_us: String,
    /// Of a second: its arrivals by when their answer came (`SecondSample::answered_after`);
    /// shards' counts add. Empty for a phase or the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answered_after: Vec<u64>,
}
