//! Builds the server from [`Settings`]: migrations, pool, HTTP client, listener.

use order_core::domain::request_hash::RequestHashKey;
use order_core::plumbing::admission::Admission;
use order_core::plumbing::read_admission::ReadAdmission;
use order_core::plumbing::server::{Api, Running, start};
use order_core::plumbing::settings::{
    CommonSettings, REACTIVE_MAX_IN_FLIGHT, REACTIVE_ORDER_MEMORY_KIB,
};

use crate::state::AppState;
use crate::state::Events;
use crate::{batch, clients::Deps, db::Db, outbox, recovery, routes};

/// reactive-api's settings: the shared ones plus its listen address.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "reactive-api",
    version,
    about = "The order API, async (actix-web + sqlx)"
)]
pub struct Settings {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, env = "BIND_ADDR", default_value = "127.0.0.1:8082")]
    pub bind_addr: String,
    /// Reads (`GET /orders/{id}`) in progress at once, apart from the orders' places.
    #[arg(long, env = "READ_IN_FLIGHT", default_value_t = 32)]
    pub read_in_flight: usize,
    /// Reads that may wait for a place (each at most QUEUE_TIMEOUT_MS); one more is refused at
    /// once (503 `overloaded`).
    #[arg(long, env = "READ_QUEUE", default_value_t = 64)]
    pub read_queue: usize,
    #[command(flatten)]
    pub common: CommonSettings,
}

pub struct Application(Running);

impl Application {
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let common = settings.common;
        let events = Events::connect(&common.events).await?;
        let api = Api {
            name: "reactive-api",
            routes: routes::configure,
            blocking_threads: None,
        };
        let (running, state) = start(api, &settings.bind_addr, &common, |metrics| {
            metrics.register(order_core::plumbing::metrics::allocator_info(
                crate::ALLOCATOR,
            ));
            let db = Db::connect(&common, metrics.clone())?;
            Ok(AppState {
                batch: batch::Writer::start(&common, db.clone(), &metrics),
                db,
                deps: Deps::new(&common, metrics.clone())?,
                admission: Admission::new(&common, REACTIVE_MAX_IN_FLIGHT, metrics.clone())
                    .bounded_by_memory(&common, REACTIVE_ORDER_MEMORY_KIB),
                reads: ReadAdmission::new(
                    settings.read_in_flight,
                    settings.read_queue,
                    common.queue_timeout(),
                    metrics.clone(),
                ),
                events,
                metrics,
                hash_key: RequestHashKey::from_settings(&common)?,
                settings: common.clone(),
            })
        })
        .await?;
        let app = state.into_inner();
        outbox::spawn_relay(app.clone());
        recovery::spawn(app);
        Ok(Application(running))
    }

    pub fn port(&self) -> u16 {
        self.0.port
    }

    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        self.0.run_until_stopped().await
    }
}
