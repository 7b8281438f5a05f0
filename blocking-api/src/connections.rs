//! blocking-api's connection pool: r2d2 with diesel's connection manager, and the rule both
//! APIs share for testing a pooled connection (`order_core::plumbing::connections`).
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
//! finds it (`db_socket.rs`, however `DATABASE_URL` and libpq's environment name the server); a
//! connection whose socket cannot be told is closed at once and opened again, never lent without
//! its deadline. libpq's `tcp_user_timeout` and keepalives, which every connection sets, bound a
//! path that drops packets too.

use std::os::fd::RawFd;
use std::sync::Mutex;
use std::time::Duration;

use diesel::pg::PgConnection;
use diesel::r2d2::{self, ConnectionManager, ManageConnection};
use diesel::result::Error;
use order_core::domain::db_failure::ClientDeadline;
use order_core::plumbing::connections;

use crate::db_socket::{self, Target};
use crate::watchdog;

/// A pooled connection, and when it was last known good (`order_core::plumbing::connections::mark`).
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
    /// Where libpq connects, to tell a new connection's socket when several appear at once.
    target: Target,
    deadline: Option<Duration>,
}

impl Manager {
    /// Connections to `url` (libpq's form), going to `target`, each call bounded by `deadline`.
    pub fn new(url: String, target: Target, deadline: Option<Duration>) -> Self {
        Manager {
            inner: ConnectionManager::new(url),
            target,
            deadline,
        }
    }

    /// Opens a connection and, with a deadline, finds its socket (`db_socket`: one connect at a
    /// time in this process). A connection whose socket cannot be told is closed and the connect
    /// fails (r2d2 tries again): no call runs without the deadline.
    fn establish(&self) -> Result<(PgConnection, Option<RawFd>), r2d2::Error> {
        if self.deadline.is_none() {
            return Ok((self.inner.connect()?, None));
        }
        static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
        let _one = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let before = db_socket::open_sockets();
        let raw = self.inner.connect()?;
        let appeared = db_socket::appeared(&before);
        match db_socket::choose(&appeared, || self.target.peers()) {
            Some(fd) => Ok((raw, Some(fd))),
            None => {
                tracing::warn!(
                    appeared = appeared.len(),
                    "could not tell a new database connection's socket, which its client \
                     deadline needs: connection closed, to be opened again"
                );
                Err(r2d2::Error::ConnectionError(
                    diesel::ConnectionError::BadConnection(
                        "the connection's socket could not be told apart".to_owned(),
                    ),
                ))
            }
        }
    }
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
}
