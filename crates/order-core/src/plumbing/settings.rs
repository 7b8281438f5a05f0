//! Settings both APIs read, with the same names and defaults. Each is an environment variable and
//! a `--kebab-case` flag; docs/settings.md lists the same.

use std::time::Duration;

use crate::plumbing::events_mode::EventsMode;

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

impl TxScope {
    pub fn as_str(self) -> &'static str {
        match self {
            TxScope::Short => "short",
            TxScope::Request => "request",
        }
    }
}

/// Where the API runs: production refuses to start without a real `REQUEST_HASH_KEY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AppEnv {
    Production,
    /// A fixed, public development key is used for request hashes (with a warning).
    Development,
}

/// How the API talks HTTP to its dependencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DepsHttp {
    /// HTTP/1.1 with keep-alive: one connection per concurrent call.
    Http1,
    /// Cleartext HTTP/2 with prior knowledge: many concurrent calls on one connection.
    H2c,
}

impl DepsHttp {
    pub fn as_str(self) -> &'static str {
        match self {
            DepsHttp::Http1 => "http1",
            DepsHttp::H2c => "h2c",
        }
    }
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
    /// Longest wait for a pooled connection before answering 503 database_unavailable; at
    /// start-up, for the migrator's connection before the start fails.
    #[arg(long, env = "DB_POOL_TIMEOUT_MS", default_value_t = 5000)]
    pub db_pool_timeout_ms: u64,
    /// Timeout of every call to a dependency (connect + whole response).
    #[arg(long, env = "DEPS_TIMEOUT_MS", default_value_t = 10_000)]
    pub deps_timeout_ms: u64,
    /// HTTP to the dependencies: http1 (keep-alive, a connection per concurrent call) or h2c
    /// (cleartext HTTP/2, prior knowledge: calls multiplexed on one connection).
    #[arg(long, env = "DEPS_HTTP", value_enum, default_value_t = DepsHttp::Http1)]
    pub deps_http: DepsHttp,
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
    /// Orders admitted at once; beyond it (after QUEUE_TIMEOUT_MS) 503 `overloaded`. 0: no limit.
    /// Default: BLOCKING_THREADS in blocking-api (a thread for every admitted order),
    /// 4096 in reactive-api.
    #[arg(long, env = "MAX_IN_FLIGHT")]
    pub max_in_flight: Option<usize>,
    /// Memory one admitted order may take, KiB. With MAX_IN_FLIGHT unset, the orders admitted at
    /// once are also no more than the pod's memory limit holds: (limit − 24 MiB for the process
    /// itself) ÷ this, read from the API's cgroup every second; beyond it 503 `overloaded` at
    /// once. 0: no such bound. Default: 100 in reactive-api (measured in a 128 MiB pod: 80–100 KiB
    /// of RSS per order in flight, the most at 2.2 s); none in blocking-api, whose
    /// BLOCKING_THREADS bound its orders.
    #[arg(long, env = "ORDER_MEMORY_KIB")]
    pub order_memory_kib: Option<u64>,
    /// Longest wait for admission before 503 `overloaded`.
    #[arg(long, env = "QUEUE_TIMEOUT_MS", default_value_t = 100)]
    pub queue_timeout_ms: u64,
    /// Refuse new orders (503 `overloaded`, before anything else) while the event loop that
    /// received them runs woken tasks this much later (smoothed) than the pod's own CFS stall
    /// explains (`event_loop_stall_seconds`: period − quota ÷ CPUs, zero without a quota): the
    /// CPU is saturated, and every order admitted now would only slow down the ones in flight.
    /// 0: no such refusal.
    #[arg(long, env = "MAX_LOOP_LAG_MS", default_value_t = 5)]
    pub max_loop_lag_ms: u64,
    /// Work that has not reached the charge by then stops with 503 `deadline_exceeded` (work
    /// past the charge always finishes).
    #[arg(long, env = "REQUEST_DEADLINE_MS", default_value_t = 30_000)]
    pub request_deadline_ms: u64,
    /// Longest a client may take to send the head of a request: of a connection's first from the
    /// connection's start (actix's client request timeout; past it 408 and the connection
    /// closed), of each later one after KEEP_ALIVE_S of idleness (the connection is closed).
    #[arg(long, env = "CLIENT_HEADER_TIMEOUT_MS", default_value_t = 5000)]
    pub client_header_timeout_ms: u64,
    /// How long a kept-alive connection may stay idle between two requests before it is closed;
    /// the next request's head must then be complete within CLIENT_HEADER_TIMEOUT_MS more
    /// (`order_core::plumbing::keep_alive`). 0: no keep-alive, one request per connection.
    #[arg(long, env = "KEEP_ALIVE_S", default_value_t = 5)]
    pub keep_alive_s: u64,
    /// Client connections held at once; a request on a connection above it is answered 503
    /// `too_many_connections` and the connection closed (`order_core::plumbing::connection_cap`). Default:
    /// 20000 (about 400 MiB of idle connections in the costlier API), lowered to what the
    /// open-file limit holds (2 per connection); a value the limit cannot hold refuses to start.
    #[arg(long, env = "MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Longest a client may take to send an order's body once its head arrived; past it 408
    /// `request_timeout`. The body is read before admission, so a slow client holds no place.
    #[arg(long, env = "CLIENT_BODY_TIMEOUT_MS", default_value_t = 5000)]
    pub client_body_timeout_ms: u64,
    /// statement_timeout, lock_timeout and idle_in_transaction_session_timeout of every database
    /// connection; 0 leaves PostgreSQL's (unbounded) defaults.
    #[arg(long, env = "DB_STATEMENT_TIMEOUT_MS", default_value_t = 5000)]
    pub db_statement_timeout_ms: u64,
    /// How much longer than `DB_STATEMENT_TIMEOUT_MS` the API itself waits for any database call
    /// before it gives the call up: the connection is closed (never lent again) and the request
    /// answered 503 `database_unavailable`. The server's `statement_timeout` cannot end a call
    /// whose packets no longer reach it (a frozen network path, a stopped proxy).
    #[arg(long, env = "DB_CLIENT_MARGIN_MS", default_value_t = 1000)]
    pub db_client_margin_ms: u64,
    /// Longest the start-up waits for the migration lock (a PostgreSQL advisory lock another
    /// instance holds while it migrates) before it fails, naming the session that holds it.
    #[arg(long, env = "MIGRATION_LOCK_WAIT_MS", default_value_t = 30_000)]
    pub migration_lock_wait_ms: u64,
    /// On SIGTERM: how long the API keeps accepting and serving new connections (`/ready` at 503,
    /// every response with `Connection: close`) before it stops accepting and drains. A platform
    /// sends SIGTERM and removes the process from its load balancers at the same time, and the
    /// removal takes a few seconds to reach every node (kube-proxy's and ingress controllers'
    /// syncs, typically 1–3 s): 5 s covers that, with room, for the cost of 5 s more per stop.
    /// 0: stop accepting at once (a platform whose preStop hook waits instead). SIGINT skips it.
    #[arg(long, env = "SHUTDOWN_DELAY_MS", default_value_t = DEFAULT_SHUTDOWN_DELAY_MS)]
    pub shutdown_delay_ms: u64,
    /// On SIGTERM/SIGINT, once the API stopped accepting: how long orders in flight may take to
    /// finish before the process exits.
    #[arg(long, env = "SHUTDOWN_GRACE_MS", default_value_t = DEFAULT_SHUTDOWN_GRACE_MS)]
    pub shutdown_grace_ms: u64,
    /// Most orders persisted in one transaction by the batch writer (see `order_core::plumbing::batch`);
    /// 1: each order commits its own persist (no writer). Short transaction scope only.
    #[arg(long, env = "PERSIST_BATCH_MAX", default_value_t = 1, value_parser = batch_max)]
    pub persist_batch_max: usize,
    /// How long a persist batch stays open for more orders after its first one.
    #[arg(long, env = "PERSIST_BATCH_WAIT_MS", default_value_t = 5)]
    pub persist_batch_wait_ms: u64,
    /// Days a completed order's idempotency key keeps its stored answer; after them the retention
    /// sweep drops it, and a replay is answered from the order's rows (`order_core::domain::retention`).
    /// 0: kept for ever.
    #[arg(long, env = "KEY_RETENTION_DAYS", default_value_t = 30)]
    pub key_retention_days: u64,
    #[command(flatten)]
    pub events: EventsSettings,
}

/// The `order.created` event (see `order_core::plumbing::events`).
#[derive(Debug, Clone, clap::Args)]
pub struct EventsSettings {
    /// off, two-phase, after-commit or outbox: how the order's transaction and its event's
    /// publication to NATS JetStream are tied. Anything but off needs DB_TX_SCOPE=short.
    #[arg(long, env = "EVENTS_MODE", value_enum, default_value_t = EventsMode::Off)]
    pub events_mode: EventsMode,
    /// NATS server with JetStream (the stream ORDERS is created if missing).
    #[arg(long, env = "NATS_URL", default_value = "nats://127.0.0.1:4222")]
    pub nats_url: String,
    /// Longest wait for JetStream's acknowledgement of an event (and any JetStream call).
    #[arg(long, env = "NATS_TIMEOUT_MS", default_value_t = 10_000)]
    pub nats_timeout_ms: u64,
    /// Pause of the outbox relay when it found nothing to send.
    #[arg(long, env = "OUTBOX_POLL_MS", default_value_t = 50)]
    pub outbox_poll_ms: u64,
    /// Hours a sent outbox event is kept before the retention sweep deletes it. 0: kept for ever.
    #[arg(long, env = "OUTBOX_RETENTION_HOURS", default_value_t = 24)]
    pub outbox_retention_hours: u64,
}

impl Default for EventsSettings {
    fn default() -> Self {
        EventsSettings {
            events_mode: EventsMode::Off,
            nats_url: "nats://127.0.0.1:4222".to_owned(),
            nats_timeout_ms: 10_000,
            outbox_poll_ms: 50,
            outbox_retention_hours: 24,
        }
    }
}

impl EventsSettings {
    pub fn nats_timeout(&self) -> Duration {
        Duration::from_millis(self.nats_timeout_ms)
    }

    pub fn outbox_poll(&self) -> Duration {
        Duration::from_millis(self.outbox_poll_ms)
    }

    /// How long a sent outbox event is kept (`None`: for ever).
    pub fn outbox_retention(&self) -> Option<Duration> {
        (self.outbox_retention_hours > 0)
            .then(|| Duration::from_secs(self.outbox_retention_hours.saturating_mul(3600)))
    }
}

/// `PERSIST_BATCH_MAX`: 1 to 10,000 orders.
fn batch_max(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n @ 1..=10_000) => Ok(n),
        _ => Err(format!(
            "{text:?} is not a number of orders from 1 to 10000"
        )),
    }
}

/// `SHUTDOWN_DELAY_MS` when unset (why 5 s: its doc above); the lab reads it to bound a rolling
/// restart.
pub const DEFAULT_SHUTDOWN_DELAY_MS: u64 = 5000;
/// `SHUTDOWN_GRACE_MS` when unset.
pub const DEFAULT_SHUTDOWN_GRACE_MS: u64 = 20_000;

/// reactive-api's `MAX_IN_FLIGHT` when unset: a bound on memory. On one CPU it is far above what
/// the CPU serves at the seed's 2.2 s per order, so it binds only after the CPU has saturated.
pub const REACTIVE_MAX_IN_FLIGHT: usize = 4096;

/// reactive-api's `ORDER_MEMORY_KIB` when unset: the most RSS one order in flight took in the
/// lab's 128 MiB pod (80 KiB at a 22 s critical path, 100 at 2.2 s, where more of each order's
/// buffers are live at once), so that a pod's memory limit bounds its admission wherever the
/// critical path is long enough to fill it before the CPU does (docs/results/capacity.md).
pub const REACTIVE_ORDER_MEMORY_KIB: u64 = 100;

/// The public request-hash key of `APP_ENV=development`: fine on a laptop, never in production.
pub const DEVELOPMENT_HASH_KEY: &str = "order-lab-development-key-not-secret";
/// Shortest `REQUEST_HASH_KEY` accepted (bytes), in every `APP_ENV`.
const MIN_HASH_KEY_BYTES: usize = 16;

/// Never prints the request hash key.
impl std::fmt::Debug for CommonSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommonSettings")
            .field("database_url", &self.database_url)
            .field("deps_url", &self.deps_url)
            .field("db_pool_size", &self.db_pool_size)
            .field("db_pool_timeout_ms", &self.db_pool_timeout_ms)
            .field("deps_timeout_ms", &self.deps_timeout_ms)
            .field("deps_http", &self.deps_http)
            .field("http_workers", &self.http_workers)
            .field("db_tx_scope", &self.db_tx_scope)
            .field("lease_ms", &self.lease_ms)
            .field("reconcile_interval_ms", &self.reconcile_interval_ms)
            .field(
                "request_hash_key",
                &self.request_hash_key.as_ref().map(|_| "<set>"),
            )
            .field("app_env", &self.app_env)
            .field("max_in_flight", &self.max_in_flight)
            .field("order_memory_kib", &self.order_memory_kib)
            .field("queue_timeout_ms", &self.queue_timeout_ms)
            .field("max_loop_lag_ms", &self.max_loop_lag_ms)
            .field("request_deadline_ms", &self.request_deadline_ms)
            .field("client_header_timeout_ms", &self.client_header_timeout_ms)
            .field("keep_alive_s", &self.keep_alive_s)
            .field("max_connections", &self.max_connections)
            .field("client_body_timeout_ms", &self.client_body_timeout_ms)
            .field("db_statement_timeout_ms", &self.db_statement_timeout_ms)
            .field("db_client_margin_ms", &self.db_client_margin_ms)
            .field("migration_lock_wait_ms", &self.migration_lock_wait_ms)
            .field("shutdown_delay_ms", &self.shutdown_delay_ms)
            .field("shutdown_grace_ms", &self.shutdown_grace_ms)
            .field("persist_batch_max", &self.persist_batch_max)
            .field("persist_batch_wait_ms", &self.persist_batch_wait_ms)
            .field("key_retention_days", &self.key_retention_days)
            .field("events", &self.events)
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
            deps_http: DepsHttp::Http1,
            http_workers: 1,
            db_tx_scope: TxScope::Short,
            lease_ms: 30_000,
            reconcile_interval_ms: 5000,
            request_hash_key: None,
            app_env: AppEnv::Development,
            max_in_flight: None,
            order_memory_kib: None,
            queue_timeout_ms: 100,
            max_loop_lag_ms: 5,
            request_deadline_ms: 30_000,
            client_header_timeout_ms: 5000,
            keep_alive_s: 5,
            max_connections: None,
            client_body_timeout_ms: 5000,
            db_statement_timeout_ms: 5000,
            db_client_margin_ms: 1000,
            migration_lock_wait_ms: 30_000,
            shutdown_delay_ms: DEFAULT_SHUTDOWN_DELAY_MS,
            shutdown_grace_ms: DEFAULT_SHUTDOWN_GRACE_MS,
            persist_batch_max: 1,
            persist_batch_wait_ms: 5,
            key_retention_days: 30,
            events: EventsSettings::default(),
        }
    }

    /// PostgreSQL settings every connection starts with (sent as startup options, so they cost
    /// no round trip): a lock wait, a stuck query or a transaction left idle ends within
    /// `DB_STATEMENT_TIMEOUT_MS`, and the server's TCP keepalives find a vanished client.
    pub fn session_options(&self) -> Vec<(&'static str, String)> {
        let mut options = vec![
            ("tcp_keepalives_idle", "30".to_owned()),
            ("tcp_keepalives_interval", "10".to_owned()),
            ("tcp_keepalives_count", "3".to_owned()),
        ];
        if self.db_statement_timeout_ms > 0 {
            let ms = self.db_statement_timeout_ms.to_string();
            for name in [
                "statement_timeout",
                "lock_timeout",
                "idle_in_transaction_session_timeout",
            ] {
                options.push((name, ms.clone()));
            }
        }
        options
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
        if self.events.events_mode != EventsMode::Off && self.db_tx_scope != TxScope::Short {
            anyhow::bail!(
                "EVENTS_MODE={} needs DB_TX_SCOPE=short: the event's transaction is the persist \
                 step's own",
                self.events.events_mode.as_str()
            );
        }
        if self.persist_batch_max > 1 && self.db_tx_scope != TxScope::Short {
            anyhow::bail!(
                "PERSIST_BATCH_MAX={} needs DB_TX_SCOPE=short: a request-scope transaction holds \
                 the order's own persist",
                self.persist_batch_max
            );
        }
        if self.persist_batch_max > 1 && self.events.events_mode != EventsMode::Off {
            anyhow::bail!(
                "PERSIST_BATCH_MAX={} needs EVENTS_MODE=off: the batch writer does not write or \
                 publish order events",
                self.persist_batch_max
            );
        }
        if self.reconcile_interval_ms == 0 {
            anyhow::bail!("RECONCILE_INTERVAL_MS must be above 0");
        }
        self.chosen_hash_key().map(|_| ())
    }

    /// The key request hashes are keyed with (`request_hash`). A key given is used if it is long
    /// enough and refused, in every `APP_ENV`, if it is not (a short key given by mistake must not
    /// fall back to the public one, nor key production hashes weakly); the public development key
    /// is used only with `APP_ENV=development` and no key given. Chosen here, beside the settings
    /// it reads, so that `validate` checks it without importing the hash.
    pub fn chosen_hash_key(&self) -> anyhow::Result<&str> {
        Ok(match (&self.request_hash_key, self.app_env) {
            (Some(key), _) if key.len() >= MIN_HASH_KEY_BYTES => key.as_str(),
            (Some(key), _) => anyhow::bail!(
                "REQUEST_HASH_KEY must be at least {MIN_HASH_KEY_BYTES} bytes (it has {})",
                key.len()
            ),
            (None, AppEnv::Production) => anyhow::bail!(
                "REQUEST_HASH_KEY is not set: set it to a secret shared by every instance (e.g. \
                 `openssl rand -hex 32`), or APP_ENV=development to use a public development key"
            ),
            (None, AppEnv::Development) => DEVELOPMENT_HASH_KEY,
        })
    }

    pub fn queue_timeout(&self) -> Duration {
        Duration::from_millis(self.queue_timeout_ms)
    }

    pub fn request_deadline(&self) -> Duration {
        Duration::from_millis(self.request_deadline_ms)
    }

    pub fn client_header_timeout(&self) -> Duration {
        Duration::from_millis(self.client_header_timeout_ms)
    }

    pub fn keep_alive(&self) -> Duration {
        Duration::from_secs(self.keep_alive_s)
    }

    pub fn client_body_timeout(&self) -> Duration {
        Duration::from_millis(self.client_body_timeout_ms)
    }

    pub fn shutdown_delay(&self) -> Duration {
        Duration::from_millis(self.shutdown_delay_ms)
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_millis(self.shutdown_grace_ms)
    }

    pub fn lease(&self) -> Duration {
        Duration::from_millis(self.lease_ms)
    }

    pub fn reconcile_interval(&self) -> Duration {
        Duration::from_millis(self.reconcile_interval_ms)
    }

    /// How long a completed order's key keeps its stored answer (`None`: for ever).
    pub fn key_retention(&self) -> Option<Duration> {
        (self.key_retention_days > 0)
            .then(|| Duration::from_secs(self.key_retention_days.saturating_mul(86_400)))
    }

    pub fn db_pool_timeout(&self) -> Duration {
        Duration::from_millis(self.db_pool_timeout_ms)
    }

    /// The longest the API waits for one database call (a statement, `BEGIN`/`COMMIT`, a
    /// connection's test): `DB_STATEMENT_TIMEOUT_MS` + `DB_CLIENT_MARGIN_MS`. `None` when
    /// `DB_STATEMENT_TIMEOUT_MS` is 0, which asks for unbounded database waits.
    pub fn db_client_deadline(&self) -> Option<Duration> {
        (self.db_statement_timeout_ms > 0)
            .then(|| Duration::from_millis(self.db_statement_timeout_ms + self.db_client_margin_ms))
    }

    pub fn deps_timeout(&self) -> Duration {
        Duration::from_millis(self.deps_timeout_ms)
    }

    pub fn lease_seconds(&self) -> f64 {
        self.lease_ms as f64 / 1000.0
    }

    /// How long an outbox relay's claim on its rows lasts: longer than its pass can take from the
    /// claim to the settlement — the publication (sends and acknowledgements together bounded by
    /// `NATS_TIMEOUT_MS`, `event_broker::Broker::publish_all`), a pooled connection
    /// (`DB_POOL_TIMEOUT_MS`) and the settling statement (`DB_STATEMENT_TIMEOUT_MS`) — plus a
    /// second. So no other relay takes rows whose claimant may still settle them; a claim that
    /// runs out anyway (its relay died) only means the rows are published again, and JetStream
    /// drops the copies by `Nats-Msg-Id`.
    pub fn outbox_claim_lease(&self) -> Duration {
        self.events.nats_timeout()
            + self.db_pool_timeout()
            + Duration::from_millis(self.db_statement_timeout_ms)
            + Duration::from_secs(1)
    }
}
