//! What one run needs ([`DriverConfig`]) and the state its tasks share while it runs: the
//! recorder, the body generator, the in-flight count, the clock. The driver builds it; the
//! open-model scheduler and the closed-model clients read and update it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::body::{BodyGen, OrderRequest};
use crate::clock::Clock;
use crate::http::{Outcome, fire};
use crate::profile::Profile;
use crate::progress::Progress;
use crate::recorder::Recorder;
use crate::retry::{AttemptLog, RetryPolicy};
use crate::shard::{Shard, Tally};
use crate::start::{ArmedGate, StartGate, StartRecord};

/// What one run needs.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    /// Base URL of the API (`http://127.0.0.1:8081`).
    pub target: String,
    pub profile: Profile,
    pub request_timeout: Duration,
    pub max_in_flight: u64,
    /// Prefix of every `reference_id`.
    pub run_id: String,
    pub sellers: u32,
    pub duplicate_ratio: f64,
    /// Goose report files to write (`.html`, `.json`, `.md`).
    pub goose_reports: Vec<String>,
    /// Progress bar label; `None` hides the bars.
    pub progress: Option<String>,
    /// Clients retry (same key, same body) under this policy; `None` = one attempt each.
    pub retry: Option<RetryPolicy>,
    /// Which arrivals this generator sends, from which seed, from when.
    pub sharding: Sharding,
    /// Closed model: after a request that failed in transport (refused or reset: the API is
    /// down), its client waits this long before the next, instead of spending its share of the
    /// requests on a closed port; `None`: at once.
    pub transport_pause: Option<Duration>,
}

impl DriverConfig {
    /// `profile` against `target`, keys prefixed `run_id`, each request given `request_timeout`;
    /// the rest as a plain run has it: no in-flight cap, 16 sellers (the lab's default), fresh
    /// orders only, one attempt each, no goose report, no progress bar, the whole schedule from
    /// now with the seed of the run id, no pause after a transport failure. Set any field after.
    pub fn new(target: &str, profile: Profile, run_id: String, request_timeout: Duration) -> Self {
        DriverConfig {
            target: target.to_owned(),
            profile,
            request_timeout,
            max_in_flight: u64::MAX,
            run_id,
            sellers: 16,
            duplicate_ratio: 0.0,
            goose_reports: Vec::new(),
            progress: None,
            retry: None,
            sharding: Sharding::default(),
            transport_pause: None,
        }
    }
}

/// This generator's share of the schedule (open model; see [`crate::shard`] and [`crate::start`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sharding {
    pub shard: Shard,
    /// The seed of every arrival's draws; `None`: derived from the run id.
    pub seed: Option<u64>,
    pub start: StartGate,
}

pub(crate) struct Shared {
    pub(crate) cfg: DriverConfig,
    pub(crate) url: String,
    pub(crate) client: reqwest::Client,
    pub(crate) recorder: Mutex<Recorder>,
    pub(crate) bodies: BodyGen,
    /// The open model's start, taken by the scheduler when it begins.
    pub(crate) gate: Mutex<Option<ArmedGate>>,
    pub(crate) start_record: OnceLock<StartRecord>,
    /// The arrivals this generator offered (open model).
    pub(crate) tally: Mutex<Tally>,
    pub(crate) in_flight: AtomicU64,
    pub(crate) tickets: AtomicU64,
    /// When the latest answer came, µs after the run's clock started.
    pub(crate) last_answer_us: AtomicU64,
    pub(crate) clock: Clock,
    pub(crate) phases_run: AtomicU64,
    pub(crate) started_at: OnceLock<chrono::DateTime<chrono::Utc>>,
    pub(crate) progress: Mutex<Progress>,
    pub(crate) attempts: Option<Mutex<AttemptLog>>,
    pub(crate) control: std::sync::Arc<crate::control::LoopControl>,
}

impl Shared {
    pub(crate) fn start(&self) -> Instant {
        *self.clock.get_or_init(|| {
            let _ = self.started_at.set(chrono::Utc::now());
            Instant::now()
        })
    }

    /// The open model's start: waits at the gate, then sets the run's clock to the schedule's
    /// origin (the intended start, so a late wake-up is lateness like any other).
    pub(crate) async fn start_open(&self) -> Instant {
        let gate = self.gate.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(gate) = gate else {
            return self.start();
        };
        let (origin, record) = gate.wait().await;
        let _ = self.start_record.set(record);
        let intended = chrono::DateTime::from_timestamp_millis(record.intended_unix_ms as i64);
        let _ = self
            .started_at
            .set(intended.unwrap_or_else(chrono::Utc::now));
        *self.clock.get_or_init(|| origin)
    }

    /// Notes an answer (or a failure) that came at `end`, for [`crate::driver::DriverOutput`]'s
    /// `last_answer_s`.
    pub(crate) fn answered(&self, t0: Instant, end: Instant) {
        let us = u64::try_from(end.saturating_duration_since(t0).as_micros()).unwrap_or(u64::MAX);
        self.last_answer_us.fetch_max(us, Ordering::SeqCst);
    }

    pub(crate) fn rec(&self) -> std::sync::MutexGuard<'_, Recorder> {
        self.recorder.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One request — or, with a retry policy, one retrying client — to its final outcome.
    pub(crate) async fn send(&self, t0: Instant, request: &OrderRequest) -> Outcome {
        match (&self.cfg.retry, &self.attempts) {
            (Some(policy), Some(log)) => {
                let timeout = self.cfg.request_timeout;
                crate::retry::send(&self.client, &self.url, request, policy, timeout, t0, log).await
            }
            _ => fire(&self.client, &self.url, request).await,
        }
    }
}
