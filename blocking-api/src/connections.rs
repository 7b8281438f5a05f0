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

use anyhow::Context;
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

/// `url` as libpq should read it: with `options=-c name=value …` added, percent-encoded, and
/// `gssencmode=disable` unless the URL says otherwise. sqlx (reactive-api) never negotiates GSSAPI
/// encryption; libpq's default (`prefer`) loads Kerberos at every connect, on r2d2's background
/// threads, whose mutexes can then abort a process that exits while one connects.
///
/// With a client `deadline`, the socket's own bounds too, unless the URL sets them: TCP
/// keepalives, `tcp_user_timeout` (data unacknowledged that long fails the connection) and
/// `connect_timeout` (whole seconds, at least 2, libpq's floor). They end a call on a path that
/// drops packets; a path that still acknowledges them (a stopped proxy) needs the watchdog.
pub(crate) fn with_libpq_options(
    url: &str,
    options: &[(&str, String)],
    deadline: Option<std::time::Duration>,
) -> String {
    let mut params = Vec::new();
    if !url.contains("gssencmode=") {
        params.push("gssencmode=disable".to_owned());
    }
    if let Some(deadline) = deadline {
        let connect_s = deadline.as_millis().div_ceil(1000).max(2);
        let bounds = [
            ("keepalives", "1".to_owned()),
            ("keepalives_idle", "30".to_owned()),
            ("keepalives_interval", "10".to_owned()),
            ("keepalives_count", "3".to_owned()),
            ("tcp_user_timeout", deadline.as_millis().to_string()),
            ("connect_timeout", connect_s.to_string()),
        ];
        for (name, value) in bounds {
            if !url.contains(&format!("{name}=")) {
                params.push(format!("{name}={value}"));
            }
        }
    }
    if !options.is_empty() {
        let value: Vec<String> = options.iter().map(|(k, v)| format!("-c {k}={v}")).collect();
        let encoded = value
            .join(" ")
            .replace('%', "%25")
            .replace(' ', "%20")
            .replace('=', "%3D");
        params.push(format!("options={encoded}"));
    }
    if params.is_empty() {
        return url.to_owned();
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}{}", params.join("&"))
}

/// Where the database listens (host, or a Unix socket's directory, and port), as libpq reads the
/// URL: the `host`/`hostaddr`/`port` parameters override the authority; `localhost:5432` by
/// default. `connections.rs` recognises each connection's socket by it.
pub(crate) fn address_of(database_url: &str) -> anyhow::Result<(String, u16)> {
    let url = url::Url::parse(database_url).context("parsing DATABASE_URL")?;
    let param = |name: &str| {
        url.query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    };
    let host = param("hostaddr")
        .or_else(|| param("host"))
        .or_else(|| {
            url.host().map(|h| match h {
                url::Host::Ipv6(ip) => ip.to_string(),
                other => other.to_string(),
            })
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    let port = match param("port") {
        Some(port) => port.parse().context("the port parameter of DATABASE_URL")?,
        None => url.port().unwrap_or(5432),
    };
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    #[test]
    fn libpq_options_are_appended_encoded() {
        let opts = [("statement_timeout", "5000".to_owned())];
        assert_eq!(
            super::with_libpq_options("postgres://u@h/db", &opts, None),
            "postgres://u@h/db?gssencmode=disable&options=-c%20statement_timeout%3D5000"
        );
        assert_eq!(
            super::with_libpq_options("postgres://u@h/db?sslmode=disable", &opts, None),
            "postgres://u@h/db?sslmode=disable&gssencmode=disable&options=-c%20statement_timeout%3D5000"
        );
        assert_eq!(
            super::with_libpq_options("postgres://u@h/db?gssencmode=require", &[], None),
            "postgres://u@h/db?gssencmode=require"
        );
    }

    #[test]
    fn a_client_deadline_bounds_the_socket_unless_the_url_does() {
        let deadline = Some(std::time::Duration::from_millis(6000));
        assert_eq!(
            super::with_libpq_options("postgres://u@h/db?connect_timeout=9", &[], deadline),
            "postgres://u@h/db?connect_timeout=9&gssencmode=disable&keepalives=1&\
             keepalives_idle=30&keepalives_interval=10&keepalives_count=3&tcp_user_timeout=6000"
        );
        let short = Some(std::time::Duration::from_millis(1500));
        let url = super::with_libpq_options("postgres://u@h/db", &[], short);
        assert!(
            url.ends_with("tcp_user_timeout=1500&connect_timeout=2"),
            "{url}"
        );
    }

    #[test]
    fn the_database_address_is_read_as_libpq_reads_it() {
        let of = |u: &str| super::address_of(u).unwrap();
        assert_eq!(
            of("postgres://u@db.example:6432/x"),
            ("db.example".into(), 6432)
        );
        assert_eq!(of("postgres://u@h/x"), ("h".into(), 5432));
        assert_eq!(of("postgres://u@[::1]/x"), ("::1".into(), 5432));
        assert_eq!(
            of("postgres://u@h/x?host=/run/postgresql&port=5433"),
            ("/run/postgresql".into(), 5433)
        );
    }
}
