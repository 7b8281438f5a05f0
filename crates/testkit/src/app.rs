//! One API under test, with its own database and mock-deps, on port 0.

use std::time::Duration;

use event_broker::Broker;
use mock_deps::{MockConfig, MockDeps};
use order_core::plumbing::deps_client::DepsClient;
use order_core::plumbing::events::EventsMode;
use order_core::plumbing::settings::CommonSettings;
use sqlx::PgPool;
use testbed::nats::EphemeralNats;
use testbed::proxy::LatencyProxy;

use crate::database::TestDatabase;

/// Which implementation of the contract a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// blocking-api as it runs by default (`DEPS_CLIENT=ureq`).
    Blocking,
    Reactive,
    /// blocking-api with `DEPS_CLIENT=reqwest-blocking`, for the cases the dependencies' client
    /// decides ([`crate::reqwest_blocking_tests!`]).
    BlockingReqwest,
}

impl Api {
    /// blocking-api, whichever its client.
    pub fn is_blocking(self) -> bool {
        matches!(self, Api::Blocking | Api::BlockingReqwest)
    }

    /// The name of the API's binary.
    pub fn binary_name(self) -> &'static str {
        if self.is_blocking() {
            "blocking-api"
        } else {
            "reactive-api"
        }
    }

    /// blocking-api's `DEPS_CLIENT`; `None` for reactive-api, which has one client.
    pub fn deps_client(self) -> Option<DepsClient> {
        match self {
            Api::Blocking => Some(DepsClient::Ureq),
            Api::BlockingReqwest => Some(DepsClient::ReqwestBlocking),
            Api::Reactive => None,
        }
    }
}

pub struct TestApp {
    pub api: Api,
    pub address: String,
    /// A pool of the test's own, to look at the rows the API wrote.
    pub pool: PgPool,
    pub deps: MockDeps,
    pub client: reqwest::Client,
    pub db: TestDatabase,
    /// With [`TestApp::spawn_with_events`]: the test's own NATS server and a client of it.
    pub nats: Option<(EphemeralNats, Broker)>,
    /// With [`TestApp::spawn_with_slow_broker`]: the proxy between the API and its NATS.
    pub broker_proxy: Option<LatencyProxy>,
}

impl TestApp {
    /// The API with default settings and instant mocks.
    pub async fn spawn(api: Api) -> Self {
        Self::spawn_with(api, MockConfig::instant(), |_| {}).await
    }

    /// The API with `EVENTS_MODE=mode` against a NATS server of the test's own (`nats-server`
    /// must be installed), with adjusted settings.
    pub async fn spawn_with_events(
        api: Api,
        mode: EventsMode,
        adjust: impl FnOnce(&mut CommonSettings),
    ) -> Self {
        Self::spawn_with_nats(api, mode, false, adjust).await
    }

    /// As [`TestApp::spawn_with_events`], with a latency proxy between the API and NATS: no
    /// delay until [`TestApp::set_broker_rtt`], then a broker whose every answer (an
    /// acknowledgement, a look-up) comes that much later. The test's own client is not delayed.
    pub async fn spawn_with_slow_broker(
        api: Api,
        mode: EventsMode,
        adjust: impl FnOnce(&mut CommonSettings),
    ) -> Self {
        Self::spawn_with_nats(api, mode, true, adjust).await
    }

    /// The round trip between the API and NATS, from now on (with
    /// [`TestApp::spawn_with_slow_broker`]).
    pub fn set_broker_rtt(&self, rtt: Duration) {
        let proxy = self
            .broker_proxy
            .as_ref()
            .expect("spawned with a slow broker");
        proxy.set_rtt(rtt);
    }

    async fn spawn_with_nats(
        api: Api,
        mode: EventsMode,
        proxied: bool,
        adjust: impl FnOnce(&mut CommonSettings),
    ) -> Self {
        let nats = start_nats().await;
        let broker = Broker::connect(&nats.url(), Duration::from_secs(5), Duration::from_secs(10))
            .await
            .expect("connecting to the test's NATS");
        let proxy = if proxied {
            let upstream = (std::net::Ipv4Addr::LOCALHOST, nats.port()).into();
            let proxy = LatencyProxy::start_adjustable(upstream, Duration::ZERO)
                .await
                .expect("starting the proxy in front of NATS");
            Some(proxy)
        } else {
            None
        };
        let url = match &proxy {
            Some(p) => format!("nats://{}", p.local_addr()),
            None => nats.url(),
        };
        let mut app = Self::spawn_with(api, MockConfig::instant(), |s| {
            s.events.events_mode = mode;
            s.events.nats_url = url;
            adjust(s);
        })
        .await;
        app.nats = Some((nats, broker));
        app.broker_proxy = proxy;
        app
    }

    /// The test's NATS client (with [`TestApp::spawn_with_events`]).
    pub fn broker(&self) -> &Broker {
        &self.nats.as_ref().expect("spawned with events").1
    }

    /// The body of the order's `order.created` in the stream (panics when there is none).
    pub async fn stored_event(&self, order_id: &str) -> String {
        let subject = event_broker::subject_of(order_id);
        let payload = self.broker().last(&subject).await.unwrap();
        String::from_utf8(payload.expect("the order's event").to_vec()).unwrap()
    }

    /// The API with adjusted settings (pool size, timeouts…) and mock behaviour.
    pub async fn spawn_with(
        api: Api,
        mocks: MockConfig,
        adjust: impl FnOnce(&mut CommonSettings),
    ) -> Self {
        let db = TestDatabase::new().await;
        let deps = MockDeps::spawn(mocks).await.expect("starting mock-deps");
        let mut common = CommonSettings::new(&db.url, deps.base_url());
        // Tests run side by side on a shared machine (and unoptimised), where a descheduled
        // process looks like a saturated CPU: no refusal on loop lag unless a test asks for it
        // (the mechanism has its own test in order-core's admission module).
        common.max_loop_lag_ms = 0;
        adjust(&mut common);
        let port = build(api, common)
            .await
            .unwrap_or_else(|e| panic!("building {api:?}: {e:#}"));
        let pool = PgPool::connect(&db.url)
            .await
            .expect("connecting the test's pool");
        TestApp {
            api,
            address: format!("http://127.0.0.1:{port}"),
            pool,
            deps,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            db,
            nats: None,
            broker_proxy: None,
        }
    }

    /// `POST /orders` with a JSON body and a seller token.
    pub async fn post_order(&self, token: &str, body: &serde_json::Value) -> reqwest::Response {
        self.post_raw(
            Some(token),
            Some("application/json"),
            serde_json::to_vec(body).unwrap(),
        )
        .await
    }

    /// `POST /orders` with any header values and bytes.
    pub async fn post_raw(
        &self,
        token: Option<&str>,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> reqwest::Response {
        let mut request = self
            .client
            .post(format!("{}/orders", self.address))
            .body(body);
        if let Some(token) = token {
            request = request.header("Authorization", token);
        }
        if let Some(content_type) = content_type {
            request = request.header("Content-Type", content_type);
        }
        request.send().await.expect("POST /orders")
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> reqwest::Response {
        let mut request = self.client.get(format!("{}{path}", self.address));
        if let Some(token) = token {
            request = request.header("Authorization", token);
        }
        request.send().await.expect("GET")
    }

    /// A series' value in the API's `/metrics` (Prometheus text), if it is there: `name` as
    /// written, with its labels if it has any (`name{label="v"}`).
    pub async fn metric(&self, name: &str) -> Option<f64> {
        let text = self
            .get("/metrics", None)
            .await
            .text()
            .await
            .expect("GET /metrics");
        testbed::prometheus::value_of(&text, name)
    }

    /// Waits until the recovery pass every API runs at start-up has let go of the pool: it
    /// claims the keys left in `CHARGING`, then counts the deferred ones — two connections held
    /// (`db_transaction_duration_seconds_count{kind="recovery"}`). With
    /// [`crate::quiet_background`], nothing else takes a connection but the test's requests.
    pub async fn after_the_start_up_pass(&self) {
        crate::eventually(20, "the start-up recovery pass to end", || async {
            self.metric(r#"db_transaction_duration_seconds_count{kind="recovery"}"#)
                .await
                .is_some_and(|n| n >= 2.0)
        })
        .await;
    }

    /// Rows in a table of the API's database.
    pub async fn count(&self, table: &str) -> i64 {
        sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
            .fetch_one(&self.pool)
            .await
            .expect("counting rows")
    }

    /// Every row of every table of the order schema, as text.
    pub async fn dump_rows(&self) -> Vec<String> {
        let mut rows = Vec::new();
        for table in [
            "idempotency_keys",
            "customers",
            "orders",
            "order_items",
            "order_outbox",
        ] {
            let sql = format!("SELECT t::text FROM {table} t");
            rows.extend(
                sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(sql))
                    .fetch_all(&self.pool)
                    .await
                    .expect("dumping rows"),
            );
        }
        rows
    }
}

/// A NATS server of the test's own (`nats-server` must be installed).
pub async fn start_nats() -> EphemeralNats {
    tokio::task::spawn_blocking(EphemeralNats::start)
        .await
        .unwrap()
        .expect("starting nats-server (apt-get install nats-server)")
}

/// Builds `api` with `common` on port 0 and serves it on the test's runtime; returns its port,
/// or why it refused to start.
pub async fn build(api: Api, common: CommonSettings) -> anyhow::Result<u16> {
    let bind_addr = "127.0.0.1:0".to_owned();
    let port = match api.deps_client() {
        Some(deps_client) => {
            let settings = blocking_api::Settings {
                bind_addr,
                // Enough threads for the concurrency tests, few enough to start fast.
                blocking_threads: 64,
                read_threads: 4,
                read_queue: 64,
                deps_client,
                common,
            };
            let app = blocking_api::Application::build(settings).await?;
            let port = app.port();
            tokio::spawn(app.run_until_stopped());
            port
        }
        None => {
            let settings = reactive_api::Settings {
                bind_addr,
                read_in_flight: 4,
                read_queue: 64,
                common,
            };
            let app = reactive_api::Application::build(settings).await?;
            let port = app.port();
            tokio::spawn(app.run_until_stopped());
            port
        }
    };
    Ok(port)
}
