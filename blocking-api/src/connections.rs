//! blocking-api's connection pool: r2d2 with diesel's connection manager, and the rule both
//! APIs share for testing a pooled connection (`order_core::connections`).
//!
//! r2d2 is told to test a connection as it is taken (`test_on_check_out`), and [`Manager`]
//! makes that test a round trip only when a connection may have been lost since this one was
//! last known good. diesel's own check on return (`has_broken`) is local and only catches a
//! connection left in a transaction: a connection whose server is gone (PostgreSQL restarted, a
//! reset socket) looks healthy to it, so without this r2d2 lent every dead connection again and
//! each failed its order, for ever.
//!
//! Every call on a connection goes through [`PgConn::run`], bounded by the client deadline
//! (`DB_STATEMENT_TIMEOUT_MS` + `DB_CLIENT_MARGIN_MS`) by the watchdog (`watchdog.rs`, which says
//! why), which needs the connection's socket. diesel does not expose it, so [`Manager::connect`]
//! finds it: it lists this process's TCP sockets connected to the database's address before and
//! after opening the connection, one connect at a time; the one socket that appeared is this
//! connection's. When that is not exactly one (another part of the process connected to the same
//! address at that moment) the connection gets no socket and its calls no deadline (logged);
//! libpq's `tcp_user_timeout` and keepalives, which every connection sets, still bound a path that
//! drops packets.

use std::collections::HashSet;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::RawFd;
use std::sync::Mutex;
use std::time::Duration;

use diesel::pg::PgConnection;
use diesel::r2d2::{self, ConnectionManager, ManageConnection};
use diesel::result::Error;
use order_core::connections;
use order_core::db_failure::ClientDeadline;

use crate::watchdog;

/// A pooled connection, and when it was last known good (`order_core::connections::mark`).
pub struct PgConn {
    raw: PgConnection,
    tested_at: u64,
    /// The connection's socket, for the watchdog (`None`: not found, calls unbounded).
    socket: Option<RawFd>,
    /// The longest one call may take (`CommonSettings::db_client_deadline`; `None`: unbounded).
    deadline: Option<Duration>,
    /// A call was given up at the deadline: the connection is broken, r2d2 discards it.
    abandoned: bool,
}

impl PgConn {
    /// Runs one database call on the connection, bounded by the client deadline: past it the
    /// watchdog shuts the socket down, the call fails at once, the connection is abandoned and
    /// the error is the deadline's ([`is_deadline`]). A connection already abandoned fails at
    /// once.
    pub fn run<T>(
        &mut self,
        call: impl FnOnce(&mut PgConnection) -> Result<T, Error>,
    ) -> Result<T, Error> {
        if self.abandoned {
            return Err(deadline_passed());
        }
        let (Some(fd), Some(limit)) = (self.socket, self.deadline) else {
            return call(&mut self.raw);
        };
        let ticket = watchdog::arm(fd, limit);
        let result = call(&mut self.raw);
        if watchdog::disarm(ticket) {
            self.abandoned = true;
            return Err(deadline_passed());
        }
        result
    }
}

/// The error of a call given up at the client deadline. diesel has no variant for an error of
/// the caller's own; `QueryBuilderError` is the one that carries any error, and [`is_deadline`]
/// recognises it by its type, never by text.
fn deadline_passed() -> Error {
    Error::QueryBuilderError(Box::new(ClientDeadline))
}

/// Whether `e` is a call given up at the client deadline.
pub fn is_deadline(e: &Error) -> bool {
    matches!(e, Error::QueryBuilderError(inner) if inner.is::<ClientDeadline>())
}

pub struct Manager {
    inner: ConnectionManager<PgConnection>,
    /// Where the database is, to recognise a new connection's socket (empty: not over TCP).
    peers: Vec<SocketAddr>,
    deadline: Option<Duration>,
}

impl Manager {
    /// Connections to `url` (libpq's form), whose database listens at `host:port`, each call
    /// bounded by `deadline`.
    pub fn new(url: String, host: &str, port: u16, deadline: Option<Duration>) -> Self {
        let peers = if host.starts_with('/') {
            Vec::new()
        } else {
            (host, port)
                .to_socket_addrs()
                .map(Iterator::collect)
                .unwrap_or_default()
        };
        Manager {
            inner: ConnectionManager::new(url),
            peers,
            deadline,
        }
    }

    /// Opens a connection and finds its socket (one connect at a time in this process, so that
    /// the sockets appearing meanwhile are this connection's).
    fn establish(&self) -> Result<(PgConnection, Option<RawFd>), r2d2::Error> {
        static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
        let _one = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let before = sockets_to(&self.peers);
        let raw = self.inner.connect()?;
        let after = sockets_to(&self.peers);
        let mut new = after.difference(&before);
        let socket = match (new.next(), new.next()) {
            (Some(&(fd, _)), None) => Some(fd),
            _ if self.deadline.is_none() => None,
            (found, _) => {
                tracing::warn!(
                    found = found.is_some(),
                    "could not tell this connection's socket; its calls have no client deadline"
                );
                None
            }
        };
        Ok((raw, socket))
    }
}

/// This process's sockets connected to one of `peers`, as (fd, inode): a closed fd whose number
/// was reused for a new socket still counts as new.
fn sockets_to(peers: &[SocketAddr]) -> HashSet<(RawFd, u64)> {
    use nix::sys::socket::{SockaddrLike, SockaddrStorage, getpeername};
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return HashSet::new();
    };
    entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let fd: RawFd = entry.file_name().to_str()?.parse().ok()?;
            let target = std::fs::read_link(entry.path()).ok()?;
            let inode = target
                .to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()?;
            let peer = getpeername::<SockaddrStorage>(fd).ok()?;
            let peer: SocketAddr = match peer.family()? {
                nix::sys::socket::AddressFamily::Inet => (*peer.as_sockaddr_in()?).into(),
                nix::sys::socket::AddressFamily::Inet6 => (*peer.as_sockaddr_in6()?).into(),
                _ => return None,
            };
            peers.contains(&peer).then_some((fd, inode))
        })
        .collect()
}

impl ManageConnection for Manager {
    type Connection = PgConn;
    type Error = r2d2::Error;

    fn connect(&self) -> Result<PgConn, r2d2::Error> {
        let tested_at = connections::mark();
        let (raw, socket) = self.establish()?;
        Ok(PgConn {
            raw,
            tested_at,
            socket,
            deadline: self.deadline,
            abandoned: false,
        })
    }

    /// Runs when a pooled connection is taken: a round trip (`SELECT 1`, within the client
    /// deadline) only if a connection may have been lost since this one was known good.
    fn is_valid(&self, conn: &mut PgConn) -> Result<(), r2d2::Error> {
        if connections::needs_test(conn.tested_at) {
            let tested_at = connections::mark();
            let inner = &self.inner;
            conn.run(|raw| Ok(inner.is_valid(raw)))
                .map_err(r2d2::Error::QueryError)??;
            conn.tested_at = tested_at;
        }
        Ok(())
    }

    /// A connection abandoned at the client deadline is broken: r2d2 closes it.
    fn has_broken(&self, conn: &mut PgConn) -> bool {
        conn.abandoned || self.inner.has_broken(&mut conn.raw)
    }
}
