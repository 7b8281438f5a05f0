//! Builds the server from [`Settings`]: migrations, pool, HTTP client, listener.

use std::net::TcpListener;
use std::sync::Arc;

use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};
use anyhow::Context;
use order_core::http::{
    BACKLOG, MAX_CONNECTIONS_PER_WORKER, not_found, shared_routes, track_metrics,
};
use order_core::metrics::Metrics;
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

pub struct Application {
    port: u16,
    server: Server,
}

impl Application {
    pub async fn build(settings: Settings) -> anyhow::Result<Self> {
        let common = settings.common.clone();
        order_core::migrate::run(&common.database_url).await?;
        let metrics = Arc::new(Metrics::new(
            common.db_pool_size,
            Some(settings.blocking_threads),
        ));
        let state = web::Data::new(AppState {
            db: Db::connect(&common, metrics.clone())?,
            deps: Deps::new(&common, metrics.clone())?,
            metrics: metrics.clone(),
            settings: common.clone(),
        });
        let listener = TcpListener::bind(&settings.bind_addr)
            .with_context(|| format!("binding {}", settings.bind_addr))?;
        let port = listener.local_addr()?.port();
        let metrics_data = web::Data::new(metrics);
        let server = HttpServer::new(move || {
            App::new()
                .wrap(from_fn(track_metrics))
                .app_data(state.clone())
                .app_data(metrics_data.clone())
                .configure(shared_routes)
                .configure(routes::configure)
                .default_service(web::to(not_found))
        })
        .workers(common.http_workers)
        // actix sizes the blocking pool per worker: split BLOCKING_THREADS so the total is exact.
        .worker_max_blocking_threads(
            settings
                .blocking_threads
                .div_ceil(common.http_workers.max(1)),
        )
        .backlog(BACKLOG)
        .max_connections(MAX_CONNECTIONS_PER_WORKER)
        .listen(listener)?
        .run();
        tracing::info!(
            port,
            workers = common.http_workers,
            "blocking-api listening"
        );
        Ok(Application { port, server })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        Ok(self.server.await?)
    }
}
