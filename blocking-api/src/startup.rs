//! Builds the server from [`Settings`]: migrations, pool, HTTP client, listener.

use std::net::TcpListener;
use std::sync::Arc;

use actix_web::web;
use anyhow::Context;
use order_core::metrics::Metrics;
use order_core::server::{Running, serve};
use order_core::settings::CommonSettings;

use crate::{clients::Deps, db::Db, routes};

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
    #[command(flatten)]
    pub common: CommonSettings,
}

/// What every handler shares.
pub struct AppState {
    pub settings: CommonSettings,
    pub db: Db,
    pub deps: Deps,
    pub metrics: Arc<Metrics>,
}

pub struct Application(Running);

impl Application {
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let common = settings.common.clone();
        order_core::migrate::run(&common.database_url).await?;
        let blocking_threads = Some(settings.blocking_threads);
        let metrics = Arc::new(Metrics::new(common.db_pool_size, blocking_threads));
        let state = web::Data::new(AppState {
            db: Db::connect(&common, metrics.clone())?,
            deps: Deps::new(&common, metrics.clone())?,
            metrics: metrics.clone(),
            settings: common.clone(),
        });
        let listener = TcpListener::bind(&settings.bind_addr)
            .with_context(|| format!("binding {}", settings.bind_addr))?;
        let workers = common.http_workers;
        let running = serve(
            listener,
            workers,
            blocking_threads,
            state,
            metrics,
            routes::configure,
        )?;
        tracing::info!(
            port = running.port,
            workers,
            ?blocking_threads,
            "blocking-api listening"
        );
        Ok(Application(running))
    }

    pub fn port(&self) -> u16 {
        self.0.port
    }

    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        self.0.run_until_stopped().await
    }
}
