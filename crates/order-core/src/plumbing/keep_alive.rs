//! The bound on a kept-alive connection between two requests, which actix-http leaves open.
//!
//! actix-http bounds the head of a connection's *first* request (`CLIENT_HEADER_TIMEOUT_MS`, its
//! `client_request_timeout`) and an idle kept-alive connection (`KEEP_ALIVE_S`, its `keep_alive`).
//! But its keep-alive timer stops at the first byte of the next request, and its head timer is
//! never started again: a client that sends its next head a byte at a time holds the connection
//! (a file descriptor, buffers, a place under `max_connections`) for as long as it likes.
//!
//! [`ConnectionWatch`] closes such a connection: from the end of each response, the next
//! request's head must be complete within `KEEP_ALIVE_S` + `CLIENT_HEADER_TIMEOUT_MS` (idle at
//! most the keep-alive, then the head within its own timeout), or the socket is shut down. The
//! middleware [`track`] tells it when a request's head has arrived (the handler runs) and when its
//! response is done. Cost per connection: one duplicated file descriptor (the watch's handle on
//! the socket, so that shutting it down can never hit a descriptor number the kernel has since
//! reused for another connection) and one small task on the worker's event loop, asleep until
//! its deadline.

use std::any::Any;
use std::net::Shutdown;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use actix_web::body::MessageBody;
use actix_web::dev::{Extensions, ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use tokio::sync::Notify;

/// One connection's state, shared by its watch task and its requests.
#[derive(Default)]
struct State {
    /// Requests of this connection being handled (HTTP/1.1: 0 or 1; HTTP/2: its open streams).
    active: AtomicUsize,
    /// When the last response was done, in ms after [`epoch`] plus one; 0 before any.
    idle_since: AtomicU64,
    /// The connection ended: the watch task returns (and closes its descriptor).
    closed: AtomicBool,
    changed: Notify,
}

impl State {
    fn changed(&self) {
        self.changed.notify_one();
    }
}

/// Lives in the connection's extensions (`HttpRequest::conn_data`) for as long as actix keeps the
/// connection; dropping it ends the watch. One per connection (not `Clone`): the requests' guards
/// share its `State`, not the watch.
pub struct ConnectionWatch(Arc<State>);

impl Drop for ConnectionWatch {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::Release);
        self.0.changed();
    }
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64 + 1
}

/// `HttpServer::on_connect`: starts the watch of a new TCP connection, which must send each next
/// request's head within `between_requests` of the previous response.
pub fn on_connect(connection: &dyn Any, extensions: &mut Extensions, between_requests: Duration) {
    let Some(stream) = connection.downcast_ref::<actix_web::rt::net::TcpStream>() else {
        return;
    };
    let socket = match stream.as_fd().try_clone_to_owned() {
        Ok(fd) => std::net::TcpStream::from(fd),
        Err(e) => {
            // Out of descriptors: serve the connection anyway, bounded by actix's timers alone.
            tracing::warn!(error = %e, "cannot watch a connection between its requests");
            return;
        }
    };
    let state = Arc::new(State::default());
    actix_web::rt::spawn(watch(state.clone(), socket, between_requests));
    extensions.insert(ConnectionWatch(state));
}

/// Shuts the socket down once the connection has been between requests for `bound`.
async fn watch(state: Arc<State>, socket: std::net::TcpStream, bound: Duration) {
    loop {
        if state.closed.load(Ordering::Acquire) {
            return;
        }
        let idle_since = state.idle_since.load(Ordering::Acquire);
        if idle_since == 0 || state.active.load(Ordering::Acquire) > 0 {
            // Before the first response actix's head timer applies; during a request, nothing.
            state.changed.notified().await;
            continue;
        }
        let deadline = epoch() + Duration::from_millis(idle_since - 1) + bound;
        tokio::select! {
            _ = state.changed.notified() => continue,
            _ = tokio::time::sleep_until(deadline.into()) => {}
        }
        let unchanged = state.idle_since.load(Ordering::Acquire) == idle_since
            && state.active.load(Ordering::Acquire) == 0
            && !state.closed.load(Ordering::Acquire);
        if unchanged {
            tracing::debug!("closing a kept-alive connection whose next request head is late");
            let _ = socket.shutdown(Shutdown::Both);
            return;
        }
    }
}

/// Holds a request as active on its connection; when dropped (response done, or the handler
/// dropped because the client left) the connection is between requests again.
struct InRequest(Arc<State>);

impl InRequest {
    fn enter(state: &Arc<State>) -> Self {
        state.active.fetch_add(1, Ordering::AcqRel);
        state.changed();
        InRequest(state.clone())
    }
}

impl Drop for InRequest {
    fn drop(&mut self) {
        self.0.idle_since.store(now_ms(), Ordering::Release);
        self.0.active.fetch_sub(1, Ordering::AcqRel);
        self.0.changed();
    }
}

/// Middleware: marks the request's connection busy from its head until its response.
pub async fn track(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let held = req
        .conn_data::<ConnectionWatch>()
        .map(|watch| InRequest::enter(&watch.0));
    let result = next.call(req).await;
    drop(held);
    result
}
