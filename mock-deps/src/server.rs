//! Starting the server: in-process for tests ([`MockDeps`]) or as the binary's main loop ([`run`]).

use std::net::SocketAddr;

use actix_web::dev::{Server, ServerHandle, Service};
use actix_web::{App, HttpServer, web};
use anyhow::Context;

use crate::config::MockConfig;
use crate::ledger::Ledger;
use crate::routes;
use crate::settings::Settings;
use crate::state::State;
use crate::stats::{Counters, Stats};

/// Connections one worker keeps before it stops accepting. actix's default (25k) is about what the
/// load lab reaches; the mock must never be the first thing to refuse, so leave headroom.
const MAX_CONNECTIONS_PER_WORKER: usize = 100_000;
/// Accept queue (capped by the kernel's `net.core.somaxconn`): absorbs connection bursts.
const BACKLOG: u32 = 4096;

fn build(
    state: web::Data<State>,
    addr: &str,
    workers: usize,
    signals: bool,
) -> anyhow::Result<(Server, SocketAddr)> {
    let server = HttpServer::new(move || {
        let counted = state.clone();
        App::new()
            .app_data(state.clone())
            .wrap_fn(move |req, srv| {
                if req.version() == actix_web::http::Version::HTTP_2 {
                    Counters::bump(&counted.stats.http2_requests);
                }
                srv.call(req)
            })
            .configure(routes::configure)
    })
    .workers(workers.max(1))
    .backlog(BACKLOG)
    .max_connections(MAX_CONNECTIONS_PER_WORKER)
    // actix keeps running a handler whose client has gone (half-closed connections are allowed by
    // default), so a hung request would live its full `hang_ms`. Treating EOF from the client as
    // the end of the connection drops the handler future, and its timer, at once. The payment
    // handler runs its charge in a detached task for that reason: only its wait is dropped.
    .h1_allow_half_closed(false)
    // A mock holds nothing worth draining: hung requests would only delay shutdown.
    .shutdown_timeout(1);
    let server = if signals {
        server
    } else {
        server.disable_signals()
    };
    // HTTP/1.1 and cleartext HTTP/2 (prior knowledge) on the same port: the APIs' `DEPS_HTTP`.
    let server = server
        .bind_auto_h2c(addr)
        .with_context(|| format!("cannot bind mock-deps to {addr}"))?;
    let local = *server
        .addrs()
        .first()
        .context("mock-deps bound no address")?;
    Ok((server.run(), local))
}

/// Runs the binary until SIGINT/SIGTERM.
pub async fn run(settings: Settings) -> anyhow::Result<()> {
    let config = settings.mock_config();
    config.validate().map_err(anyhow::Error::msg)?;
    let state = web::Data::new(State::new(config));
    let workers = usize::from(settings.http_workers);
    let (server, addr) = build(state, &settings.bind_addr, workers, true)?;
    tracing::info!(%addr, workers, ?config, "mock-deps listening");
    server.await.context("mock-deps server failed")
}

/// A mock-deps server running on the current tokio runtime, for tests and the load lab.
///
/// Dropping it stops the server (without waiting); [`MockDeps::stop`] also waits for the end.
#[derive(Debug)]
pub struct MockDeps {
    state: web::Data<State>,
    addr: SocketAddr,
    handle: ServerHandle,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl MockDeps {
    /// Starts on `127.0.0.1:0` with one worker and returns once the socket is bound.
    pub async fn spawn(config: MockConfig) -> anyhow::Result<MockDeps> {
        Self::bind("127.0.0.1:0", config, 1).await
    }

    /// Starts on `addr` with `workers` worker threads (at least 1).
    pub async fn bind(addr: &str, config: MockConfig, workers: usize) -> anyhow::Result<MockDeps> {
        config.validate().map_err(anyhow::Error::msg)?;
        let state = web::Data::new(State::new(config));
        let (server, addr) = build(state.clone(), addr, workers, false)?;
        let handle = server.handle();
        let task = Some(tokio::spawn(server));
        Ok(MockDeps {
            state,
            addr,
            handle,
            task,
        })
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Replaces the whole config, like `PUT /admin/config` with a full document.
    ///
    /// # Panics
    /// If a rate is outside `0..=1`: that is a bug in the calling test.
    pub fn set_config(&self, config: MockConfig) {
        if let Err(e) = config.validate() {
            panic!("invalid MockConfig: {e}");
        }
        let _ = self.state.update_config(|_| Ok::<_, ()>(config));
    }

    pub fn config(&self) -> MockConfig {
        self.state.config()
    }

    /// Same figures as `GET /admin/ledger` (without the per-key detail).
    pub fn ledger(&self) -> Ledger {
        self.state.ledger.snapshot(false)
    }

    /// Same as `GET /admin/ledger?detail=true`.
    pub fn ledger_with_detail(&self) -> Ledger {
        self.state.ledger.snapshot(true)
    }

    pub fn stats(&self) -> Stats {
        self.state.stats.snapshot()
    }

    /// Clears ledger and stats, like `POST /admin/reset`.
    pub fn reset(&self) {
        self.state.ledger.reset();
        self.state.stats.reset();
    }

    /// Stops the server, dropping in-flight requests, and waits until it is gone.
    pub async fn stop(mut self) {
        self.handle.stop(false).await;
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for MockDeps {
    fn drop(&mut self) {
        if self.task.is_some() {
            // The stop command is sent eagerly; nothing to wait for in a destructor.
            drop(self.handle.stop(false));
        }
    }
}
