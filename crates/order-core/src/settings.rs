//! Settings both APIs read, with the same names and defaults. Each is an environment variable and
//! a `--kebab-case` flag; the README's settings table lists the same.

use std::time::Duration;

/// How long a request holds its database connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TxScope {
    /// Short transactions: no connection is held while a dependency is called.
    Short,
    /// One transaction for the whole request, held across the remote calls (the anti-pattern of
    /// the "connection held across a remote call" experiment).
    Request,
}

#[derive(Debug, Clone, clap::Args)]
pub struct CommonSettings {
    /// PostgreSQL URL, e.g. postgres://user@127.0.0.1:5432/orders.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: String,
    /// Base URL of the seller, risk and payment services (mock-deps).
    #[arg(long, env = "DEPS_URL", default_value = "http://127.0.0.1:9090")]
    pub deps_url: String,
    /// Maximum database connections in the pool.
    #[arg(long, env = "DB_POOL_SIZE", default_value_t = 10)]
    pub db_pool_size: u32,
    /// Longest wait for a pooled connection before answering 503 database_unavailable.
    #[arg(long, env = "DB_POOL_TIMEOUT_MS", default_value_t = 5000)]
    pub db_pool_timeout_ms: u64,
    /// Timeout of every call to a dependency (connect + whole response).
    #[arg(long, env = "DEPS_TIMEOUT_MS", default_value_t = 10_000)]
    pub deps_timeout_ms: u64,
    /// actix-web worker threads (event loops).
    #[arg(long, env = "HTTP_WORKERS", default_value_t = 1)]
    pub http_workers: usize,
    /// short: no connection held during remote calls; request: one transaction per request.
    #[arg(long, env = "DB_TX_SCOPE", value_enum, default_value_t = TxScope::Short)]
    pub db_tx_scope: TxScope,
}

impl CommonSettings {
    /// Settings for a test or an embedded run: the defaults above with the given URLs.
    pub fn new(database_url: impl Into<String>, deps_url: impl Into<String>) -> Self {
        CommonSettings {
            database_url: database_url.into(),
            deps_url: deps_url.into(),
            db_pool_size: 10,
            db_pool_timeout_ms: 5000,
            deps_timeout_ms: 10_000,
            http_workers: 1,
            db_tx_scope: TxScope::Short,
        }
    }

    pub fn db_pool_timeout(&self) -> Duration {
        Duration::from_millis(self.db_pool_timeout_ms)
    }

    pub fn deps_timeout(&self) -> Duration {
        Duration::from_millis(self.deps_timeout_ms)
    }

    pub fn lease_seconds(&self) -> f64 {
        crate::idempotency::lease_seconds(self.deps_timeout_ms, self.db_pool_timeout_ms)
    }
}
