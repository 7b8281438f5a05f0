//! A TCP proxy between an API and its PostgreSQL or NATS that adds a round-trip time (the
//! "distance" to the database, a slow broker) or freezes (a database or broker that stopped
//! answering). The contract suite uses it for the slow broker and the frozen database; the lab
//! for experiment D, its slowed broker and its freeze faults (through `loadtest/latency-proxy`,
//! which also holds the proxy's binary).
//!
//! Why a delay: experiment D (docs/results/README.md, "The experiments") compares the blocking
//! and the async API when the database is in the same zone (0.3 ms app→DB RTT), another zone
//! (0.6 ms) or another region (6.5 ms). Latency keeps connections and transactions open longer,
//! which is where a thread-per-request API and an async one should differ. On one box PostgreSQL
//! is ~0.05 ms away, so the `loadtest` lab starts a [`LatencyProxy`] in-process next to it and
//! gives the API under test [`proxied_url`] instead of the real `DATABASE_URL`.
//!
//! How delays are applied: each connection has two directions. In each, a reader stamps every
//! chunk it reads at time `t` with `t + rtt/2` and queues it on a bounded channel; a writer
//! waits until that instant and writes it, never before the previous chunk of that direction.
//! So a request/response pays the full RTT, while a stream is delayed like a long pipe, not
//! serialised: throughput is kept. End of stream (a half-close) travels the same way, after the
//! data before it; any error closes both sockets. The channel bounds memory per connection, and
//! once full it stops the reader, so TCP flow control pushes back on the sender. An RTT of zero
//! is a plain `copy_bidirectional` pass-through.
//!
//! Freezing ([`LatencyProxy::set_frozen`]; the lab's "database freeze", the contract suite's
//! frozen database): while frozen, the proxy reads nothing, writes nothing and forwards no new
//! connection (the kernel still completes the handshakes its backlog holds), as a stopped
//! (SIGSTOP) server or proxy would; bytes already read wait in their direction's queue and leave,
//! in order, once it thaws. Connections stay open throughout, and the kernel still accepts and
//! acknowledges what the API sends, so neither TCP keepalives nor `tcp_user_timeout` fire: only a
//! deadline of the API's own ends its wait.
//!
//! Threads: none per connection. Connections are tasks on the proxy's own single-threaded
//! runtime (one thread, see [`LatencyProxy::bind`]); deadlines are kept by one timer thread
//! (`clock.rs`), because tokio's timer rounds up to whole milliseconds.
//!
//! Accuracy: each wait ends with a thread wake-up, tens of microseconds late, more on a VM
//! whose CPUs went idle. The clock learns that lateness and fires that much earlier (at most
//! [`MAX_LEAD`]), so chunks leave on time on median. What remains is the proxy's two extra
//! loopback hops (~0.05 ms per round trip in release builds) and scheduling delays under CPU
//! contention. `tests/proxy_postgres.rs` prints the measured figures; reports should quote the
//! measured app→DB round trip next to the configured one.

mod clock;
mod pg_url;
mod pipe;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{oneshot, watch};

use self::clock::Clock;
/// How much earlier than its deadline a single chunk may be written (see `clock.rs`: the
/// proxy anticipates its own wake-up lateness so that chunks leave on time on median).
pub use self::clock::MAX_LEAD;
pub use self::pg_url::{proxied_url, upstream_of};

/// A running proxy. Dropping it stops it too; [`LatencyProxy::stop`] also waits for it.
pub struct LatencyProxy {
    local_addr: SocketAddr,
    /// The round-trip time in nanoseconds, read for every chunk (see [`LatencyProxy::set_rtt`]).
    rtt: Arc<AtomicU64>,
    connections: Arc<AtomicU64>,
    /// `true` while frozen (see [`LatencyProxy::set_frozen`]).
    frozen: watch::Sender<bool>,
    /// Dropping (or sending on) it ends the proxy thread.
    shutdown: Option<oneshot::Sender<()>>,
    /// Completes once the proxy thread has closed every connection.
    finished: oneshot::Receiver<()>,
}

impl LatencyProxy {
    /// Listens on 127.0.0.1:0, forwards to `upstream` (host:port) adding `rtt`.
    pub async fn start(upstream: SocketAddr, rtt: Duration) -> anyhow::Result<Self> {
        Self::launch((Ipv4Addr::LOCALHOST, 0).into(), upstream, rtt, false)
    }

    /// Like [`LatencyProxy::start`], but the round-trip time may change while it runs
    /// ([`LatencyProxy::set_rtt`]; a broker slowed mid-run): every connection takes the delayed
    /// path, even at zero.
    pub async fn start_adjustable(upstream: SocketAddr, rtt: Duration) -> anyhow::Result<Self> {
        Self::launch((Ipv4Addr::LOCALHOST, 0).into(), upstream, rtt, true)
    }

    /// [`LatencyProxy::start_adjustable`] at zero RTT, synchronously: a path that adds nothing
    /// until it is frozen or slowed, started where no `.await` is possible (inside a test's
    /// settings closure, to rewrite the API's `DATABASE_URL` with [`proxied_url`]). Needs no tokio
    /// runtime of the caller's.
    pub fn freezable(upstream: SocketAddr) -> anyhow::Result<Self> {
        Self::launch(
            (Ipv4Addr::LOCALHOST, 0).into(),
            upstream,
            Duration::ZERO,
            true,
        )
    }

    /// Changes the round-trip time for every chunk read from now on (chunks already in flight
    /// keep theirs, and never overtake one another). Only a proxy started with
    /// [`LatencyProxy::start_adjustable`] delays a connection opened at zero.
    pub fn set_rtt(&self, rtt: Duration) {
        self.rtt.store(nanos(rtt), Ordering::Relaxed);
    }

    /// Freezes (`true`) or thaws (`false`) every connection and the listener (see the module
    /// doc). Only a proxy started with [`LatencyProxy::start_adjustable`] freezes a connection
    /// opened at zero RTT (a pass-through has no place to hold bytes); its listener always does.
    pub fn set_frozen(&self, frozen: bool) {
        self.frozen.send_replace(frozen);
    }

    /// Like [`LatencyProxy::start`], listening on `listen` (for the binary).
    ///
    /// The proxy runs on a thread of its own with a single-threaded tokio runtime, plus the
    /// timer thread when `rtt` is not zero, rather than on the caller's runtime: in the lab
    /// the caller is the load generator, whose busy runtime would otherwise queue the proxy's
    /// writes behind its own tasks and stretch the RTT.
    pub async fn bind(
        listen: SocketAddr,
        upstream: SocketAddr,
        rtt: Duration,
    ) -> anyhow::Result<Self> {
        Self::launch(listen, upstream, rtt, false)
    }

    /// Binds `listen` here, so that an address in use is this call's error, then serves it on the
    /// proxy's own thread.
    fn launch(
        listen: SocketAddr,
        upstream: SocketAddr,
        rtt: Duration,
        adjustable: bool,
    ) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot build the proxy's runtime")?;
        let listener = {
            // Registered with the proxy's runtime, which serves it.
            let _entered = runtime.enter();
            listen_on(listen).with_context(|| format!("cannot listen on {listen}"))?
        };
        let local_addr = listener.local_addr()?;
        let clock = if rtt.is_zero() && !adjustable {
            None
        } else {
            Some(Clock::start().context("cannot start the proxy's timer thread")?)
        };
        let connections = Arc::new(AtomicU64::new(0));
        let accepted = Arc::clone(&connections);
        let rtt = Arc::new(AtomicU64::new(nanos(rtt)));
        let shared_rtt = Arc::clone(&rtt);
        let (shutdown, stopped) = oneshot::channel();
        let (finished_tx, finished) = oneshot::channel();
        let (frozen, thawed) = watch::channel(false);
        std::thread::Builder::new()
            .name("latency-proxy".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let forward = Forward {
                        upstream,
                        rtt: shared_rtt,
                        clock,
                        thawed,
                    };
                    accept_loop(listener, forward, accepted, stopped).await;
                });
                // Dropping the runtime drops every connection task, closing their sockets.
                drop(runtime);
                let _ = finished_tx.send(());
            })
            .context("cannot start the proxy thread")?;
        tracing::debug!(%local_addr, %upstream, rtt_ns = rtt.load(Ordering::Relaxed), "latency proxy started");
        Ok(Self {
            local_addr,
            rtt,
            connections,
            frozen,
            shutdown: Some(shutdown),
            finished,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn rtt(&self) -> Duration {
        Duration::from_nanos(self.rtt.load(Ordering::Relaxed))
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Stops listening and closes every proxied connection.
    pub async fn stop(mut self) {
        self.shutdown.take();
        let _ = (&mut self.finished).await;
    }
}

impl Drop for LatencyProxy {
    fn drop(&mut self) {
        // Ends the accept loop; the proxy thread then closes everything on its own.
        self.shutdown.take();
    }
}

/// Where and how accepted connections are forwarded.
struct Forward {
    upstream: SocketAddr,
    rtt: Arc<AtomicU64>,
    clock: Option<Clock>,
    /// Watches the frozen flag; waiting on it for `false` is waiting for the thaw.
    thawed: watch::Receiver<bool>,
}

/// What `TcpListener::bind` does (`SO_REUSEADDR`, a backlog of 1024), outside an `async fn`.
fn listen_on(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

async fn accept_loop(
    listener: TcpListener,
    mut forward: Forward,
    accepted: Arc<AtomicU64>,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            // Sent or dropped: either way, stop.
            _ = &mut stopped => break,
            // While frozen, nothing is accepted; a thaw, or the proxy's end, ends the wait.
            thawed = forward.thawed.wait_for(|frozen| !frozen) => if thawed.is_err() { break },
        }
        tokio::select! {
            _ = &mut stopped => break,
            result = listener.accept() => match result {
                Ok((client, peer)) => {
                    accepted.fetch_add(1, Ordering::Relaxed);
                    let (upstream, rtt) = (forward.upstream, Arc::clone(&forward.rtt));
                    let clock = forward.clock.clone();
                    let thawed = forward.thawed.clone();
                    tokio::spawn(async move {
                        match pipe::serve(client, upstream, rtt, clock, thawed).await {
                            Ok(()) => tracing::trace!(%peer, "proxied connection closed"),
                            Err(error) => tracing::debug!(%peer, %error, "proxied connection failed"),
                        }
                    });
                }
                Err(error) => {
                    // Typically out of file descriptors: back off instead of spinning.
                    tracing::warn!(%error, "latency proxy: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
    if let Some(clock) = &forward.clock {
        clock.stop();
    }
}
