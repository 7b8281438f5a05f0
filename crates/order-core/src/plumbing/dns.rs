//! The dependencies' names, each looked up once and kept: how both APIs find `DEPS_URL`'s host.
//!
//! A name server that answers slowly or not at all must not stall a service whose connections
//! are already open, and must cost a call no more than that call's own timeout. Neither HTTP
//! client gives that by itself:
//! - ureq (blocking-api) resolves the URL's host on every call, before it looks in its pool for
//!   an open connection, and its default resolver runs each lookup on a thread spawned for that
//!   call. Every dependency call would spawn a thread (three per order, even for `127.0.0.1`),
//!   and a stalled name server would stall every call, on open connections too.
//! - reqwest (reactive-api, and blocking-api's `reqwest-blocking` client) looks a name up only
//!   for a new connection, on a blocking-pool thread, bounded by nothing but the call's timeout,
//!   and looks it up again for each new connection: a burst of new connections is a burst of
//!   queries to the name server, each waiting its resolver's `timeout:5 attempts:2`.
//!
//! Here:
//! - an address (`127.0.0.1`, `[::1]`) is used as it is: no lookup, no thread;
//! - a name is looked up once, by one thread named `deps-resolve`, and its addresses are kept
//!   for [`FRESH_FOR`] (30 s, as long as the JVM of the seed's Spring services keeps a successful
//!   lookup, `networkaddress.cache.ttl`); after that the next call starts one lookup in the
//!   background and is served the kept addresses meanwhile;
//! - a call that finds no addresses kept waits for the one lookup in flight for its name, at
//!   most its own timeout (the call's remaining deadline);
//! - after a failed lookup, calls fail at once with its error for [`RETRY_AFTER`] before the
//!   next lookup is tried: nothing spins on a name that does not resolve;
//! - each lookup is counted on `/metrics` (`deps_dns_lookups_total{name,outcome}`), and a name
//!   is logged once when it stops resolving and once when it resolves again.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use prometheus::{IntCounterVec, Opts};

/// How long a successful lookup's addresses are used before the name is looked up again.
pub const FRESH_FOR: Duration = Duration::from_secs(30);

/// How long calls fail with a failed lookup's error before the name is looked up again.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Looks `host` up (`port` is only carried into the addresses).
pub type Lookup = dyn Fn(&str, u16) -> io::Result<Vec<SocketAddr>> + Send + Sync;

/// Why a name gave no address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// The lookup in flight did not answer within the call's timeout.
    TimedOut,
    /// The last lookup failed (its error), or found no address.
    Failed(String),
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolveError::TimedOut => f.write_str("name lookup timed out"),
            ResolveError::Failed(why) => write!(f, "name lookup failed: {why}"),
        }
    }
}

impl std::error::Error for ResolveError {}

/// The names and their kept addresses; cheap to clone (one cache per process).
#[derive(Clone)]
pub struct DnsCache {
    inner: Arc<Inner>,
}

struct Inner {
    names: Mutex<HashMap<(String, u16), Entry>>,
    /// Notified when a lookup finishes.
    finished: Condvar,
    lookup: Box<Lookup>,
    fresh_for: Duration,
    retry_after: Duration,
    lookups: IntCounterVec,
}

#[derive(Default)]
struct Entry {
    /// The last successful lookup's addresses.
    addrs: Option<Arc<[SocketAddr]>>,
    resolved_at: Option<Instant>,
    failed: Option<(Instant, String)>,
    in_flight: bool,
    /// Counts finished lookups, so that a waiting call knows one finished.
    generation: u64,
}

impl DnsCache {
    /// The system's resolver (`getaddrinfo`), [`FRESH_FOR`] and [`RETRY_AFTER`].
    pub fn system() -> DnsCache {
        DnsCache::new(
            Box::new(|host, port| (host, port).to_socket_addrs().map(Iterator::collect)),
            FRESH_FOR,
            RETRY_AFTER,
        )
    }

    pub fn new(lookup: Box<Lookup>, fresh_for: Duration, retry_after: Duration) -> DnsCache {
        let lookups = IntCounterVec::new(
            Opts::new(
                "deps_dns_lookups_total",
                "Lookups of the dependencies' host names, by name and outcome (ok, failed)",
            ),
            &["name", "outcome"],
        )
        .expect("a valid metric");
        DnsCache {
            inner: Arc::new(Inner {
                names: Mutex::new(HashMap::new()),
                finished: Condvar::new(),
                lookup,
                fresh_for,
                retry_after,
                lookups,
            }),
        }
    }

    /// The lookup counter, to register with the API's metrics.
    pub fn collector(&self) -> Box<dyn prometheus::core::Collector> {
        Box::new(self.inner.lookups.clone())
    }

    /// Lookups made so far of `name` that ended with `outcome` (`ok`, `failed`).
    pub fn lookups(&self, name: &str, outcome: &str) -> u64 {
        self.inner.lookups.with_label_values(&[name, outcome]).get()
    }

    /// `host`'s addresses with `port`, within `timeout` at most.
    pub fn resolve(
        &self,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Arc<[SocketAddr]>, ResolveError> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(Arc::from([SocketAddr::new(ip, port)]));
        }
        let deadline = Instant::now() + timeout;
        let key = (host.to_owned(), port);
        let mut names = self.names();
        let entry = names.entry(key.clone()).or_default();
        let fresh = entry
            .resolved_at
            .is_some_and(|at| at.elapsed() < self.inner.fresh_for);
        let failed_lately = entry
            .failed
            .as_ref()
            .filter(|(at, _)| at.elapsed() < self.inner.retry_after)
            .map(|(_, why)| why.clone());
        if !fresh && !entry.in_flight && failed_lately.is_none() {
            match self.start_lookup(key.clone()) {
                Ok(()) => entry.in_flight = true,
                Err(e) => {
                    self.inner
                        .lookups
                        .with_label_values(&[host, "failed"])
                        .inc();
                    tracing::warn!(name = host, error = %e, "could not start a name lookup");
                    return Err(ResolveError::Failed(format!("starting a lookup: {e}")));
                }
            }
        }
        if let Some(addrs) = &entry.addrs {
            return Ok(addrs.clone());
        }
        if let Some(why) = failed_lately {
            return Err(ResolveError::Failed(why));
        }
        let generation = entry.generation;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ResolveError::TimedOut);
            }
            names = self
                .inner
                .finished
                .wait_timeout(names, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            let entry = &names[&key];
            if entry.generation != generation {
                return match (&entry.addrs, &entry.failed) {
                    (Some(addrs), _) => Ok(addrs.clone()),
                    (None, Some((_, why))) => Err(ResolveError::Failed(why.clone())),
                    (None, None) => Err(ResolveError::Failed("no address".to_owned())),
                };
            }
        }
    }

    fn names(&self) -> MutexGuard<'_, HashMap<(String, u16), Entry>> {
        self.inner.names.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One lookup of `key` on a thread of its own; its outcome is kept and the waiters woken.
    fn start_lookup(&self, key: (String, u16)) -> io::Result<()> {
        let cache = self.clone();
        std::thread::Builder::new()
            .name("deps-resolve".to_owned())
            .spawn(move || {
                let result = (cache.inner.lookup)(&key.0, key.1);
                cache.finish(&key, result);
            })
            .map(drop)
    }

    fn finish(&self, key: &(String, u16), result: io::Result<Vec<SocketAddr>>) {
        let name = key.0.as_str();
        let result = result.and_then(|addrs| {
            if addrs.is_empty() {
                Err(io::Error::other("no address"))
            } else {
                Ok(addrs)
            }
        });
        let mut names = self.names();
        let entry = names.entry(key.clone()).or_default();
        let was_failing = entry.failed.is_some();
        match result {
            Ok(addrs) => {
                self.inner.lookups.with_label_values(&[name, "ok"]).inc();
                entry.addrs = Some(Arc::from(addrs));
                entry.resolved_at = Some(Instant::now());
                entry.failed = None;
                if was_failing {
                    tracing::info!(name, "dependency host name resolves again");
                }
            }
            Err(e) => {
                self.inner
                    .lookups
                    .with_label_values(&[name, "failed"])
                    .inc();
                if !was_failing {
                    tracing::warn!(
                        name,
                        error = %e,
                        kept = entry.addrs.is_some(),
                        "dependency host name does not resolve: calls use the addresses kept, \
                         if any, and the name is looked up again after {:?}",
                        self.inner.retry_after
                    );
                }
                entry.failed = Some((Instant::now(), e.to_string()));
            }
        }
        entry.in_flight = false;
        entry.generation += 1;
        drop(names);
        self.inner.finished.notify_all();
    }
}

impl std::fmt::Debug for DnsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnsCache")
            .field("fresh_for", &self.inner.fresh_for)
            .finish_non_exhaustive()
    }
}

/// reqwest's resolver hook (reactive-api, and blocking-api's `reqwest-blocking` client): the
/// lookup waits on tokio's blocking pool, bounded by `timeout` (`DEPS_TIMEOUT_MS`; reqwest gives
/// a resolver no deadline of its own).
#[derive(Debug, Clone)]
pub struct ReqwestResolver {
    pub cache: DnsCache,
    pub timeout: Duration,
}

impl reqwest::dns::Resolve for ReqwestResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let (cache, timeout) = (self.cache.clone(), self.timeout);
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs = tokio::task::spawn_blocking(move || cache.resolve(&host, 0, timeout))
                .await
                .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)??;
            // The iterator owns the kept addresses (an `Arc`), not a copy of them.
            let addrs: reqwest::dns::Addrs = Box::new((0..addrs.len()).map(move |i| addrs[i]));
            Ok(addrs)
        })
    }
}

#[cfg(test)]
#[path = "dns_tests.rs"]
mod tests;
