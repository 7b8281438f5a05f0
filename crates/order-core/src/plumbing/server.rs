//! The HTTP server and route table, built once for both APIs so that routing, middleware,
//! listen backlog and connection limits cannot differ between them — only the handlers do.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::http::{KeepAlive, Method};
use actix_web::middleware::from_fn;
use actix_web::{App, FromRequest, Handler, HttpServer, Responder, web};
use anyhow::Context;

use crate::plumbing::admission::LoopLag;
use crate::plumbing::http::{not_found, resource, shared_routes, track_metrics};
use crate::plumbing::metrics::Metrics;
use crate::plumbing::settings::CommonSettings;

pub use crate::plumbing::lifecycle::Lifecycle;

/// Listen backlog of both servers: thousands of connections can arrive at once under a ramp.
pub const BACKLOG: u32 = 4096;
/// How long a connection being shut down waits for the client to close it.
pub const CLIENT_DISCONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The API's own routes: `POST /orders`, `GET /orders/{id}`, `GET /metrics` (the probes are
/// `http::shared_routes`'); any other method on these paths is 405 with `Allow` ([`resource`]).
pub fn order_routes<C, CA, G, GA, M, MA>(
    cfg: &mut web::ServiceConfig,
    create: C,
    get: G,
    metrics: M,
) where
    C: Handler<CA>,
    CA: FromRequest + 'static,
    C::Output: Responder + 'static,
    G: Handler<GA>,
    GA: FromRequest + 'static,
    G::Output: Responder + 'static,
    M: Handler<MA>,
    MA: FromRequest + 'static,
    M::Output: Responder + 'static,
{
    cfg.service(resource("/orders", Method::POST, create))
        .service(resource("/orders/{id}", Method::GET, get))
        .service(resource("/metrics", Method::GET, metrics));
}

/// A started server: its port and the future that runs it.
pub struct Running {
    pub port: u16,
    server: Server,
    lifecycle: web::Data<Lifecycle>,
    /// `SHUTDOWN_DELAY_MS`.
    shutdown_delay: Duration,
}

impl Running {
    /// Serves until SIGTERM or SIGINT, then shuts down gracefully: `/ready` turns 503 at once and
    /// every response says `Connection: close`; after SIGTERM new connections are still accepted
    /// and served for `SHUTDOWN_DELAY_MS` (SIGINT skips it); then the listener closes, orders in
    /// flight finish (for at most `SHUTDOWN_GRACE_MS`), and this returns `Ok` (exit status 0).
    pub async fn run_until_stopped(self) -> anyhow::Result<()> {
        let (handle, lifecycle) = (self.server.handle(), self.lifecycle.clone());
        let delay = self.shutdown_delay;
        tokio::spawn(async move {
            let signal = match shutdown_signal().await {
                Ok(signal) => signal,
                Err(e) => {
                    tracing::error!(error = %e, "cannot listen for shutdown signals");
                    return;
                }
            };
            lifecycle.start_draining();
            let delay = match signal {
                // The platform removes this process from its load balancers as it sends SIGTERM,
                // and the removal reaches every node only after a while: until then new
                // connections still come, and a closed listener would refuse them.
                Signal::Terminate => delay,
                // A person at a terminal: nothing routes here.
                Signal::Interrupt => Duration::ZERO,
            };
            tracing::info!(
                ?signal,
                delay_ms = delay.as_millis() as u64,
                "shutdown signal: /ready 503, serving for the delay, then draining"
            );
            tokio::time::sleep(delay).await;
            handle.stop(true).await;
        });
        Ok(self.server.await?)
    }
}

/// The signal that stops the server.
#[derive(Debug, Clone, Copy)]
enum Signal {
    /// SIGTERM: what `docker stop` and orchestrators send.
    Terminate,
    /// SIGINT: Ctrl-C.
    Interrupt,
}

async fn shutdown_signal() -> std::io::Result<Signal> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = term.recv() => Ok(Signal::Terminate),
        interrupted = tokio::signal::ctrl_c() => interrupted.map(|()| Signal::Interrupt),
    }
}

/// What one API brings to the shared server: its name (for the log), its routes and, for
/// blocking-api only, the total size of actix's blocking pool (`blocking_threads`).
#[derive(Clone, Copy)]
pub struct Api<'a> {
    pub name: &'a str,
    pub routes: fn(&mut web::ServiceConfig),
    pub blocking_threads: Option<usize>,
}

/// The start-up of both APIs: checks the settings (and, for two-phase, that the server allows
/// prepared transactions), applies the migrations, builds the API's handler state around the
/// shared metrics, binds `bind_addr` and serves `api.routes` with `common.http_workers` event loops. Returns the state too, for the API's recovery loop. Only
/// `state` and `api` (its routes and blocking-api's pool) differ between the two.
pub async fn start<S: Send + Sync + 'static>(
    api: Api<'_>,
    bind_addr: &str,
    common: &CommonSettings,
    state: impl FnOnce(Arc<Metrics>) -> anyhow::Result<S>,
) -> anyhow::Result<(Running, web::Data<S>)> {
    common.check()?;
    crate::plumbing::database_url::check_one_server(&common.database_url, |name| {
        std::env::var(name).ok()
    })?;
    crate::plumbing::prepared::require(
        &common.database_url,
        common.events.events_mode,
        common.db_pool_timeout(),
    )
    .await?;
    crate::domain::request_hash::warn_if_development(common);
    let migrate = crate::plumbing::migrate::MigrateOptions::from_settings(common);
    crate::plumbing::migrate::run(&common.database_url, migrate).await?;
    tracing::info!("{}: migrations applied", api.name);
    let metrics = Arc::new(Metrics::new(common.db_pool_size, api.blocking_threads));
    let state = web::Data::new(state(metrics.clone())?);
    let listener = TcpListener::bind(bind_addr).with_context(|| format!("binding {bind_addr}"))?;
    let workers = common.http_workers;
    let running = serve(listener, common, api, state.clone(), metrics)?;
    tracing::info!(
        port = running.port,
        workers,
        blocking_threads = ?api.blocking_threads,
        "{} listening",
        api.name
    );
    Ok((running, state))
}

/// Starts serving on `listener` with `HTTP_WORKERS` event loops. `api.blocking_threads` (blocking-api
/// only) is the total size of actix's blocking pool, which actix sizes per worker. Signals are
/// handled by [`Running::run_until_stopped`] (actix's own would stop on SIGINT without draining,
/// and on SIGTERM without the delay); `SHUTDOWN_GRACE_MS` bounds the graceful stop.
pub fn serve<S: Send + Sync + 'static>(
    listener: TcpListener,
    common: &CommonSettings,
    api: Api<'_>,
    state: web::Data<S>,
    metrics: Arc<Metrics>,
) -> anyhow::Result<Running> {
    let Api {
        routes,
        blocking_threads,
        ..
    } = api;
    let port = listener.local_addr()?.port();
    let probe_metrics = metrics.clone();
    let metrics = web::Data::new(metrics);
    let lifecycle = web::Data::new(Lifecycle::default());
    let workers = common.http_workers.max(1);
    let grace = common.shutdown_grace();
    let app_lifecycle = lifecycle.clone();
    let keep_alive = match common.keep_alive_s {
        0 => KeepAlive::Disabled,
        _ => KeepAlive::Timeout(common.keep_alive()),
    };
    let between_requests = common.keep_alive() + common.client_header_timeout();
    let cap = crate::plumbing::connection_cap::Cap::new(crate::plumbing::connection_cap::limit(
        common.max_connections,
    )?);
    metrics.connections_limit.set(cap.limit() as i64);
    // actix's own limit, per worker, only bounds the connections being refused on top of the cap.
    let actix_limit = (cap.limit() + crate::plumbing::connection_cap::REFUSING).div_ceil(workers);
    let mut server = HttpServer::new(move || {
        // Called on each worker's own event loop: the loop's lag probe runs there, and the
        // worker's handlers find it as `web::Data<LoopLag>`.
        let lag = web::Data::from(LoopLag::spawn(probe_metrics.clone()));
        App::new()
            .wrap(from_fn(crate::plumbing::connection_cap::refuse))
            .wrap(from_fn(track_metrics))
            .wrap(from_fn(crate::plumbing::keep_alive::track))
            // Outermost: every response, a refusal's too, says `Connection: close` while draining.
            .wrap(from_fn(crate::plumbing::lifecycle::close_while_draining))
            .app_data(lag)
            .app_data(state.clone())
            .app_data(app_lifecycle.clone())
            .app_data(metrics.clone())
            .configure(shared_routes)
            .configure(routes)
            .default_service(web::to(not_found))
    })
    .workers(workers)
    .backlog(BACKLOG)
    .max_connections(actix_limit)
    // A client that closes its connection ends its request: actix drops the handler, which
    // tells the order's work (see `admission::ClientGuard`) that nobody waits for it.
    .h1_allow_half_closed(false)
    // A client must send the head of its first request within CLIENT_HEADER_TIMEOUT_MS, or get
    // 408 and lose the connection (the body's own limit is the handlers', CLIENT_BODY_TIMEOUT_MS).
    // actix starts this timer for a connection's first request only, and its keep-alive timer
    // stops at the next request's first byte: `keep_alive::on_connect` bounds every later head
    // (KEEP_ALIVE_S + CLIENT_HEADER_TIMEOUT_MS after the previous response).
    .client_request_timeout(common.client_header_timeout())
    .keep_alive(keep_alive)
    // A connection above MAX_CONNECTIONS is only answered and closed: it needs no watch.
    .on_connect(move |connection, extensions| {
        if cap.admit(extensions) {
            crate::plumbing::keep_alive::on_connect(connection, extensions, between_requests)
        }
    })
    // actix-web's own default, said here: a connection being shut down that the client does not
    // close within a second is dropped.
    .client_disconnect_timeout(CLIENT_DISCONNECT_TIMEOUT)
    .disable_signals()
    // actix counts whole seconds: round the grace up.
    .shutdown_timeout(grace.as_millis().div_ceil(1000) as u64);
    if let Some(threads) = blocking_threads {
        server = server.worker_max_blocking_threads(threads.div_ceil(workers));
    }
    let server = server.listen(listener)?.run();
    Ok(Running {
        port,
        server,
        lifecycle,
        shutdown_delay: common.shutdown_delay(),
    })
}
