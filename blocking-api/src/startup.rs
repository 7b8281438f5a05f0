//! Builds the server from [`Settings`]: migrations, pool, HTTP client, listener.

use order_core::domain::request_hash::RequestHashKey;
use order_core::plumbing::admission::Admission;
use order_core::plumbing::deps_client::DepsClient;
use order_core::plumbing::server::{Api, Running, start};
use order_core::plumbing::settings::CommonSettings;

use crate::clients::{self, Deps};
use crate::pool::ReadPool;
use crate::state::AppState;
use crate::state::Events;
use crate::{batch, db::Db, outbox, recovery, routes};

/// blocking-api's settings: the shared ones, its listen address and its thread pool.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "blocking-api",
    version,
    about = "The order API, thread-per-request (diesel + r2d2)"
)]
pub struct Settings {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, env = "BIND_ADDR", default_value = "127.0.0.1:8081")]
    pub bind_addr: String,
    /// Threads of the blocking pool that runs every order request (a servlet container's 200).
    #[arg(long, env = "BLOCKING_THREADS", default_value_t = 200)]
    pub blocking_threads: usize,
    /// Threads of the pool that `GET /orders/{id}` runs on, apart from the orders'.
    #[arg(long, env = "READ_THREADS", default_value_t = 4)]
    pub read_threads: usize,
    /// Reads that may wait for a read thread (each at most QUEUE_TIMEOUT_MS); one more is
    /// refused at once (503 `overloaded`).
    #[arg(long, env = "READ_QUEUE", default_value_t = 64)]
    pub read_queue: usize,
    /// The HTTP client of the dependency calls: `ureq` (each call's I/O on the request's own
    /// thread) or `reqwest-blocking` (every call's I/O on one runtime thread of reqwest's; the
    /// only one of the two that speaks `DEPS_HTTP=h2c`).
    #[arg(long, env = "DEPS_CLIENT", value_enum, default_value_t = DepsClient::Ureq)]
    pub deps_client: DepsClient,
    #[command(flatten)]
    pub common: CommonSettings,
}

pub struct Application(Running);

impl Application {
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let common = settings.common;
        // Before anything starts: a client that cannot speak DEPS_HTTP refuses at once.
        clients::check(&common, settings.deps_client)?;
        let events = Events::connect(&common.events).await?;
        let api = Api {
            name: "blocking-api",
            routes: routes::configure,
            blocking_threads: Some(settings.blocking_threads),
        };
        let (running, state) = start(api, &settings.bind_addr, &common, |metrics| {
            metrics.register(order_core::plumbing::metrics::allocator_info(
                crate::ALLOCATOR,
            ));
            let db = Db::connect(&common, metrics.clone())?;
            Ok(AppState {
                batch: batch::Writer::start(&common, db.clone(), &metrics)?,
                db,
                deps: Deps::new(
                    &common,
                    settings.deps_client,
                    // The order threads and the recovery thread: who calls the dependencies.
                    settings.blocking_threads + 1,
                    metrics.clone(),
                )?,
                admission: Admission::new(&common, settings.blocking_threads, metrics.clone()),
                reads: ReadPool::start(
                    settings.read_threads,
                    settings.read_queue,
                    common.queue_timeout(),
                    metrics.clone(),
                )?,
                events,
                metrics,
                hash_key: RequestHashKey::from_settings(&common)?,
                settings: common.clone(),
            })
        })
        .await?;
        let app = state.into_inner();
        outbox::spawn_relay(app.clone())?;
        recovery::spawn(app)?;
        Ok(Application(running))
    }

    pub fn port(&self) -> u16 {
        self.0.port
    }

    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        self.0.run_until_stopped().await
    }
}
