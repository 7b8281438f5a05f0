//! The environment the lab gives an API it starts, typed and written once.
//!
//! `loadtest lab`, a bench cell and an events run each fill one [`ApiSettings`] from their own
//! rules (flags, the bench's admission control off, the events original's pool), and
//! [`ApiSettings::to_env`] writes it under the names the APIs read: `order_core::plumbing::settings`'
//! `CommonSettings` and blocking-api's `BLOCKING_THREADS` and `DEPS_CLIENT` (the tests hold every name against the
//! product's own parser). A setting left `None` is not stated: the API runs its own default.
//! What the runs record as their settings is this same map, so a setting recorded is a setting
//! given.

use std::collections::BTreeMap;

use order_core::plumbing::deps_client::DepsClient;
use order_core::plumbing::events_mode::EventsMode;
use order_core::plumbing::settings::{DepsHttp, TxScope};

/// The `REQUEST_HASH_KEY` of the APIs the lab starts (not a secret: lab data is thrown away, and
/// one fixed key, the same across restarts, serves every run).
pub const LAB_REQUEST_HASH_KEY: &str = "order-lab-load-test-request-hash-key";

/// The settings the lab states to an API.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiSettings {
    /// mock-deps; `None` where the settings are recorded apart from any one harness (bench.json
    /// states them once for all its cells).
    pub deps_url: Option<String>,
    pub db_pool_size: u32,
    pub db_pool_timeout_ms: u64,
    pub deps_timeout_ms: u64,
    pub deps_http: Option<DepsHttp>,
    pub http_workers: u32,
    pub db_tx_scope: Option<TxScope>,
    pub lease_ms: u64,
    pub reconcile_interval_ms: u64,
    pub persist_batch: Option<PersistBatch>,
    pub queue_timeout_ms: Option<u64>,
    pub request_deadline_ms: Option<u64>,
    pub db_statement_timeout_ms: Option<u64>,
    /// 0: no refusal on the event loop's lag.
    pub max_loop_lag_ms: u64,
    /// 0: no admission limit; `None`: the execution model's own (blocking-api: its threads).
    pub max_in_flight: Option<usize>,
    pub events: Option<EventsEnv>,
    /// blocking-api's pool; the other API ignores it.
    pub blocking_threads: Option<u64>,
    /// blocking-api's HTTP client to the dependencies (`DEPS_CLIENT`); stated for blocking-api
    /// only, so that the comparison lists it with the execution model's own settings.
    pub deps_client: Option<DepsClient>,
}

/// `PERSIST_BATCH_MAX` and `PERSIST_BATCH_WAIT_MS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PersistBatch {
    pub max: usize,
    pub wait_ms: u64,
}

/// How the API publishes its order events: `EVENTS_MODE`, `NATS_URL`, `NATS_TIMEOUT_MS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventsEnv {
    pub mode: EventsMode,
    pub nats_url: String,
    pub nats_timeout_ms: u64,
}

impl ApiSettings {
    /// The settings as the APIs' environment variables (what the runs record, too).
    pub fn to_env(&self) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        let mut set = |name: &str, value: String| {
            env.insert(name.to_owned(), value);
        };
        if let Some(url) = &self.deps_url {
            set("DEPS_URL", url.clone());
        }
        set("DB_POOL_SIZE", self.db_pool_size.to_string());
        set("DB_POOL_TIMEOUT_MS", self.db_pool_timeout_ms.to_string());
        set("DEPS_TIMEOUT_MS", self.deps_timeout_ms.to_string());
        if let Some(http) = self.deps_http {
            set("DEPS_HTTP", http.as_str().to_owned());
        }
        set("HTTP_WORKERS", self.http_workers.to_string());
        if let Some(scope) = self.db_tx_scope {
            set("DB_TX_SCOPE", scope.as_str().to_owned());
        }
        set("LEASE_MS", self.lease_ms.to_string());
        set(
            "RECONCILE_INTERVAL_MS",
            self.reconcile_interval_ms.to_string(),
        );
        if let Some(batch) = self.persist_batch {
            set("PERSIST_BATCH_MAX", batch.max.to_string());
            set("PERSIST_BATCH_WAIT_MS", batch.wait_ms.to_string());
        }
        let optional = [
            ("QUEUE_TIMEOUT_MS", self.queue_timeout_ms),
            ("REQUEST_DEADLINE_MS", self.request_deadline_ms),
            ("DB_STATEMENT_TIMEOUT_MS", self.db_statement_timeout_ms),
            ("BLOCKING_THREADS", self.blocking_threads),
        ];
        for (name, value) in optional {
            if let Some(v) = value {
                set(name, v.to_string());
            }
        }
        if let Some(client) = self.deps_client {
            set("DEPS_CLIENT", client.as_str().to_owned());
        }
        set("MAX_LOOP_LAG_MS", self.max_loop_lag_ms.to_string());
        if let Some(n) = self.max_in_flight {
            set("MAX_IN_FLIGHT", n.to_string());
        }
        if let Some(e) = &self.events {
            set("EVENTS_MODE", e.mode.as_str().to_owned());
            set("NATS_URL", e.nats_url.clone());
            set("NATS_TIMEOUT_MS", e.nats_timeout_ms.to_string());
        }
        env
    }

    /// [`ApiSettings::to_env`] with the database at `database_url` and the lab's request-hash
    /// key: the whole environment of an API the lab starts.
    pub fn env_at(&self, database_url: &str) -> BTreeMap<String, String> {
        let mut env = self.to_env();
        add_database(&mut env, database_url);
        env
    }
}

/// Adds to an API's environment what is not one of its recorded settings: where the database is,
/// and the key its request hashes use.
pub fn add_database(env: &mut BTreeMap<String, String>, database_url: &str) {
    env.insert("DATABASE_URL".to_owned(), database_url.to_owned());
    env.insert(
        "REQUEST_HASH_KEY".to_owned(),
        LAB_REQUEST_HASH_KEY.to_owned(),
    );
}

/// An environment written out as (name, value) pairs, for the tests that spell one out.
#[cfg(test)]
pub(crate) fn map_of(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[cfg(test)]
#[path = "api_env_tests.rs"]
mod tests;
