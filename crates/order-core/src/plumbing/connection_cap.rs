//! The cap on the client connections an API holds at once (`MAX_CONNECTIONS`), and what a client
//! above it sees.
//!
//! actix's own limit (`HttpServer::max_connections`, per worker) is no refusal: a worker at it
//! stops accepting, and the connections above it wait in the kernel's listen backlog
//! (`server::BACKLOG`), then their SYNs are dropped, so a client sees a connect that hangs. So the
//! API counts its connections itself ([`Cap::admit`], from `HttpServer::on_connect`): one above
//! `MAX_CONNECTIONS` is accepted, and every request on it is answered 503 `too_many_connections`
//! with `Connection: close` ([`refuse`]), after which actix closes it. One that sends nothing is
//! closed by actix's head timeout (`CLIENT_HEADER_TIMEOUT_MS`, 408). The connections being
//! refused are bounded too: actix's own limit is `MAX_CONNECTIONS` + [`REFUSING`]; past both,
//! the kernel's backlog holds the rest.
//!
//! What a connection costs, measured (docs/benchmarks.md, `labkit`'s `idle_connections`
//! example, 9,000 idle kept-alive connections): 12.5 KiB of RSS in blocking-api, 20.3 KiB in
//! reactive-api, and two file descriptors in both (the socket and the keep-alive watch's
//! duplicate, `keep_alive`). 1 GiB holds about 51,000 of reactive-api's; the default,
//! [`DEFAULT_MAX_CONNECTIONS`], is 20,000 (about 400 MiB), leaving the rest to the orders those
//! connections carry. It is lowered to what the open-file limit allows ([`limit`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{Extensions, ServiceRequest, ServiceResponse};
use actix_web::http::ConnectionType;
use actix_web::middleware::Next;
use actix_web::{ResponseError, web};

use crate::domain::error::ApiError;

/// `MAX_CONNECTIONS` when unset (and the open-file limit allows it).
pub const DEFAULT_MAX_CONNECTIONS: usize = 20_000;
/// File descriptors a connection under the cap holds: its socket and the keep-alive watch's
/// duplicate of it.
pub const FDS_PER_CONNECTION: u64 = 2;
/// Connections above the cap accepted at once to be refused (one descriptor each: no watch).
pub const REFUSING: usize = 512;
/// Descriptors kept for everything else: database and dependency connections, the runtime's own.
pub const RESERVED_FDS: u64 = 1024;

/// The connections a server holds under its cap.
pub struct Cap {
    limit: usize,
    open: AtomicUsize,
}

/// In a connection's extensions while it counts under the cap; dropped with the connection.
struct Counted(Arc<Cap>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// In the extensions of a connection accepted above the cap: its requests are refused.
struct OverCap;

impl Cap {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Cap {
            limit,
            open: AtomicUsize::new(0),
        })
    }

    /// The cap.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// `HttpServer::on_connect`: counts a new connection, or marks it to be refused when the cap
    /// is reached. Whether it was admitted.
    pub fn admit(self: &Arc<Self>, extensions: &mut Extensions) -> bool {
        let admitted = self
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < self.limit).then_some(open + 1)
            })
            .is_ok();
        if admitted {
            extensions.insert(Counted(self.clone()));
        } else {
            extensions.insert(OverCap);
        }
        admitted
    }
}

/// The probes, answered on a connection above the cap too.
const PROBES: [&str; 2] = ["/health", "/ready"];

/// Middleware: a request on a connection above the cap is answered 503 `too_many_connections`,
/// and its connection closed.
///
/// The probes ([`PROBES`]) are the exception: answered as under the cap, then the connection is
/// closed. The kubelet opens a connection per probe, so at the cap a refused `/health` would
/// have the replica restarted (dropping every connection it holds) and a refused `/ready` would
/// take it out of its Service, every replica at once under a flood of connections — while each
/// still serves the connections it holds and refuses the others clearly. Ready means this
/// process can serve, as with a slow database (`http::ready`).
pub async fn refuse(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    if req.conn_data::<OverCap>().is_none() {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_left_body);
    }
    if PROBES.contains(&req.path()) {
        let mut response = next.call(req).await?;
        response
            .response_mut()
            .head_mut()
            .set_connection_type(ConnectionType::Close);
        return Ok(response.map_into_left_body());
    }
    if let Some(metrics) = req.app_data::<web::Data<Arc<crate::plumbing::metrics::Metrics>>>() {
        metrics.connections_refused.inc();
    }
    let mut response = ApiError::TooManyConnections.error_response();
    response
        .head_mut()
        .set_connection_type(ConnectionType::Close);
    Ok(req.into_response(response).map_into_right_body())
}

/// The cap a server applies: `MAX_CONNECTIONS` when set, else [`DEFAULT_MAX_CONNECTIONS`]; with
/// the open-file limit raised to its hard limit first. A cap the limit cannot hold
/// ([`FDS_PER_CONNECTION`] each, plus [`REFUSING`] and [`RESERVED_FDS`]) refuses to start when
/// `MAX_CONNECTIONS` asked for it, and is lowered to what the limit holds (logged) when it is the
/// default.
pub fn limit(setting: Option<usize>) -> anyhow::Result<usize> {
    let nofile = raise_nofile_limit();
    let fits = nofile.saturating_sub(RESERVED_FDS + REFUSING as u64) / FDS_PER_CONNECTION;
    let fits = usize::try_from(fits).unwrap_or(usize::MAX);
    match setting {
        Some(0) => anyhow::bail!("MAX_CONNECTIONS must be above 0"),
        Some(asked) if asked > fits => anyhow::bail!(
            "MAX_CONNECTIONS={asked} needs {} file descriptors ({FDS_PER_CONNECTION} per \
             connection, {REFUSING} connections being refused, {RESERVED_FDS} for the rest), but \
             the open-file limit (RLIMIT_NOFILE) is {nofile}: raise it (ulimit -n) or lower \
             MAX_CONNECTIONS to at most {fits}",
            needed(asked)
        ),
        Some(asked) => Ok(asked),
        None if fits < DEFAULT_MAX_CONNECTIONS => {
            tracing::warn!(
                max_connections = fits,
                nofile,
                "the open-file limit holds fewer than {DEFAULT_MAX_CONNECTIONS} connections: \
                 capped lower (raise RLIMIT_NOFILE to {} for the default)",
                needed(DEFAULT_MAX_CONNECTIONS)
            );
            anyhow::ensure!(
                fits > 0,
                "RLIMIT_NOFILE={nofile} holds no client connection"
            );
            Ok(fits)
        }
        None => Ok(DEFAULT_MAX_CONNECTIONS),
    }
}

/// The open-file limit a cap of `connections` needs.
pub fn needed(connections: usize) -> u64 {
    connections as u64 * FDS_PER_CONNECTION + REFUSING as u64 + RESERVED_FDS
}

/// Raises the soft open-file limit to the hard one (allowed without privileges); the soft limit
/// now in force.
fn raise_nofile_limit() -> u64 {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return 0;
    };
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return hard;
    }
    soft
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_above_the_cap_are_marked_and_a_closed_one_frees_its_place() {
        let cap = Cap::new(2);
        let mut first = Extensions::new();
        let mut second = Extensions::new();
        let mut third = Extensions::new();
        assert!(cap.admit(&mut first));
        assert!(cap.admit(&mut second));
        assert!(!cap.admit(&mut third));
        assert!(third.get::<OverCap>().is_some());
        drop(first);
        let mut fourth = Extensions::new();
        assert!(cap.admit(&mut fourth));
        assert!(fourth.get::<Counted>().is_some());
    }

    #[test]
    fn a_cap_the_open_file_limit_cannot_hold_is_refused_and_the_default_lowered() {
        let nofile = raise_nofile_limit();
        let fits = (nofile - RESERVED_FDS - REFUSING as u64) / FDS_PER_CONNECTION;
        let too_many = usize::try_from(fits).unwrap() + 1;
        let refused = limit(Some(too_many)).unwrap_err().to_string();
        assert!(refused.contains("RLIMIT_NOFILE"), "{refused}");
        assert_eq!(limit(Some(10)).unwrap(), 10);
        let default = limit(None).unwrap();
        assert!(
            needed(default) <= nofile,
            "{default} connections need more than {nofile}"
        );
        assert!(default <= DEFAULT_MAX_CONNECTIONS);
    }
}
