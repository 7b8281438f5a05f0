//! The HTTP server and route table, built once for both APIs so that routing, middleware,
//! listen backlog and connection limits cannot differ between them — only the handlers do.

use std::net::TcpListener;
use std::sync::Arc;

use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{App, FromRequest, Handler, HttpServer, Responder, web};
use anyhow::Context;

use crate::http::{method_not_allowed, not_found, shared_routes, track_metrics};
use crate::metrics::Metrics;
use crate::settings::CommonSettings;

/// Listen backlog of both servers: thousands of connections can arrive at once under a ramp.
pub const BACKLOG: u32 = 4096;
/// Concurrent connections each actix worker accepts (actix's default is 25,000), same in both.
pub const MAX_CONNECTIONS_PER_WORKER: usize = 25_000;

/// The API's own routes: `POST /orders`, `GET /orders/{id}`, `GET /ready`, `GET /metrics`.
pub fn order_routes<C, CA, G, GA, R, RA, M, MA>(
    cfg: &mut web::ServiceConfig,
    create: C,
    get: G,
    ready: R,
    metrics: M,
) where
    C: Handler<CA>,
    CA: FromRequest + 'static,
    C::Output: Responder + 'static,
    G: Handler<GA>,
    GA: FromRequest + 'static,
    G::Output: Responder + 'static,
    R: Handler<RA>,
    RA: FromRequest + 'static,
    R::Output: Responder + 'static,
    M: Handler<MA>,
    MA: FromRequest + 'static,
    M::Output: Responder + 'static,
{
    cfg.service(
        web::resource("/orders")
            .route(web::post().to(create))
            .default_service(web::to(method_not_allowed)),
    )
    .service(
        web::resource("/orders/{id}")
            .route(web::get().to(get))
            .default_service(web::to(method_not_allowed)),
    )
    .route("/ready", web::get().to(ready))
    .route("/metrics", web::get().to(metrics));
}

/// A started server: its port and the future that runs it.
pub struct Running {
    pub port: u16,
    server: Server,
}

impl Running {
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        Ok(self.server.await?)
    }
}

/// The start-up of both APIs: checks the settings, applies the migrations, builds the API's
/// handler state around the shared metrics, binds `bind_addr` and serves `routes` with
/// `common.http_workers` event loops. Returns the state too, for the API's recovery loop. Only
/// `state`, `routes` and `blocking_threads` (blocking-api's pool) differ between the two.
pub async fn start<S: Send + Sync + 'static>(
    name: &str,
    bind_addr: &str,
    common: &CommonSettings,
    blocking_threads: Option<usize>,
    state: impl FnOnce(Arc<Metrics>) -> anyhow::Result<S>,
    routes: fn(&mut web::ServiceConfig),
) -> anyhow::Result<(Running, web::Data<S>)> {
    common.check()?;
    crate::request_hash::warn_if_development(common);
    crate::migrate::run(&common.database_url).await?;
    let metrics = Arc::new(Metrics::new(common.db_pool_size, blocking_threads));
    let state = web::Data::new(state(metrics.clone())?);
    let listener = TcpListener::bind(bind_addr).with_context(|| format!("binding {bind_addr}"))?;
    let workers = common.http_workers;
    let running = serve(
        listener,
        workers,
        blocking_threads,
        state.clone(),
        metrics,
        routes,
    )?;
    tracing::info!(
        port = running.port,
        workers,
        ?blocking_threads,
        "{name} listening"
    );
    Ok((running, state))
}

/// Starts serving on `listener` with `workers` event loops. `blocking_threads` (blocking-api
/// only) is the total size of actix's blocking pool, which actix sizes per worker.
pub fn serve<S: Send + Sync + 'static>(
    listener: TcpListener,
    workers: usize,
    blocking_threads: Option<usize>,
    state: web::Data<S>,
    metrics: Arc<Metrics>,
    routes: fn(&mut web::ServiceConfig),
) -> anyhow::Result<Running> {
    let port = listener.local_addr()?.port();
    let metrics = web::Data::new(metrics);
    let workers = workers.max(1);
    let mut server = HttpServer::new(move || {
        App::new()
            .wrap(from_fn(track_metrics))
            .app_data(state.clone())
            .app_data(metrics.clone())
            .configure(shared_routes)
            .configure(routes)
            .default_service(web::to(not_found))
    })
    .workers(workers)
    .backlog(BACKLOG)
    .max_connections(MAX_CONNECTIONS_PER_WORKER);
    if let Some(threads) = blocking_threads {
        server = server.worker_max_blocking_threads(threads.div_ceil(workers));
    }
    let server = server.listen(listener)?.run();
    Ok(Running { port, server })
}
