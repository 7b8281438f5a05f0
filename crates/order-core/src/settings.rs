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

/// Where the API runs: production refuses to start without a real `REQUEST_HASH_KEY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AppEnv {
    Production,
    /// A fixed, public development key is used for request hashes (with a warning).
    Development,
}

#[derive(Clone, clap::Args)]
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
    /// How long an attempt owns its idempotency key before another attempt or the recovery loop
    /// may take it over. Must outlast a healthy attempt: at least 2 × DEPS_TIMEOUT_MS +
    /// DB_POOL_TIMEOUT_MS (checked at start-up).
    #[arg(long, env = "LEASE_MS", default_value_t = 30_000)]
    pub lease_ms: u64,
    /// Period of the recovery loop that settles keys left in CHARGING (it also runs at start-up).
    #[arg(long, env = "RECONCILE_INTERVAL_MS", default_value_t = 5000)]
    pub reconcile_interval_ms: u64,
    /// Secret key of the HMAC-SHA256 that identifies a request for idempotency (stable across
    /// restarts and shared by every instance). Required unless APP_ENV=development.
    #[arg(long, env = "REQUEST_HASH_KEY", hide_env_values = true)]
    pub request_hash_key: Option<String>,
    /// production or development.
    #[arg(long, env = "APP_ENV", value_enum, default_value_t = AppEnv::Production)]
    pub app_env: AppEnv,
}

/// Never prints the request hash key.
impl std::fmt::Debug for CommonSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommonSettings")
            .field("database_url", &self.database_url)
            .field("deps_url", &self.deps_url)
            .field("db_pool_size", &self.db_pool_size)
            .field("db_pool_timeout_ms", &self.db_pool_timeout_ms)
            .field("deps_timeout_ms", &self.deps_timeout_ms)
            .field("http_workers", &self.http_workers)
            .field("db_tx_scope", &self.db_tx_scope)
            .field("lease_ms", &self.lease_ms)
            .field("reconcile_interval_ms", &self.reconcile_interval_ms)
            .field(
                "request_hash_key",
                &self.request_hash_key.as_ref().map(|_| "<set>"),
            )
            .field("app_env", &self.app_env)
            .finish()
    }
}

impl CommonSettings {
    /// Settings for a test or an embedded run: the defaults above with the given URLs, in the
    /// development environment (its fixed request hash key).
    pub fn new(database_url: impl Into<String>, deps_url: impl Into<String>) -> Self {
        CommonSettings {
            database_url: database_url.into(),
            deps_url: deps_url.into(),
            db_pool_size: 10,
            db_pool_timeout_ms: 5000,
            deps_timeout_ms: 10_000,
            http_workers: 1,
            db_tx_scope: TxScope::Short,
            lease_ms: 30_000,
            reconcile_interval_ms: 5000,
            request_hash_key: None,
            app_env: AppEnv::Development,
        }
    }

    /// Refuses settings that would break the money guarantees: a lease a healthy attempt could
    /// outlive (another attempt would take over a key whose charge is still in flight).
    pub fn check(&self) -> anyhow::Result<()> {
        let floor = 2 * self.deps_timeout_ms + self.db_pool_timeout_ms;
        if self.lease_ms < floor {
            anyhow::bail!(
                "LEASE_MS={} is shorter than 2 x DEPS_TIMEOUT_MS + DB_POOL_TIMEOUT_MS = {floor} ms: \
                 a healthy attempt could lose its key while its charge is in flight; raise LEASE_MS \
                 or lower the timeouts",
                self.lease_ms
            );
        }
        if self.reconcile_interval_ms == 0 {
            anyhow::bail!("RECONCILE_INTERVAL_MS must be above 0");
        }
        crate::request_hash::RequestHashKey::from_settings(self).map(|_| ())
    }

    pub fn lease(&self) -> Duration {
        Duration::from_millis(self.lease_ms)
    }

    pub fn reconcile_interval(&self) -> Duration {
        Duration::from_millis(self.reconcile_interval_ms)
    }

    pub fn db_pool_timeout(&self) -> Duration {
        Duration::from_millis(self.db_pool_timeout_ms)
    }

    pub fn deps_timeout(&self) -> Duration {
        Duration::from_millis(self.deps_timeout_ms)
    }

    pub fn lease_seconds(&self) -> f64 {
        self.lease_ms as f64 / 1000.0
    }
}
