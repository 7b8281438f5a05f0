//! reactive-api's connection pool: deadpool's managed pool of sqlx `PgConnection`s.
//!
//! Why not sqlx's own `PgPool`: sqlx 0.9 pings every connection as it goes back to the pool
//! (`Floating::return_to_pool`; no option turns it off), so every checkout kept its connection
//! out of the pool for one more round trip after its statement: at 6.5 ms from the database
//! (experiment D) a statement held its connection twice as long as in blocking-api.
//!
//! What that ping was for is kept without a round trip on the normal path:
//! - a connection whose server is gone is tested and replaced before it is lent again, by the
//!   rule both APIs share (`order_core::plumbing::connections`, applied in [`Manager::recycle`]);
//! - a transaction dropped before its end is rolled back at once by `db::Tx` itself; anything else
//!   left unsent in a connection's buffer is flushed by a ping at its next checkout.
//!
//! A checkout ([`acquire`]) waits at most `DB_POOL_TIMEOUT_MS` in all: for a free connection, or
//! for the database to accept a new one (an unreachable or unavailable server is tried again with
//! backoff until then, as sqlx's pool and r2d2 do).
//!
//! Every call on a connection goes through [`PgConn::run`], bounded by the client deadline
//! (`DB_STATEMENT_TIMEOUT_MS` + `DB_CLIENT_MARGIN_MS`). PostgreSQL's `statement_timeout` ends a
//! slow statement, but not a call whose packets never reach the server: with the path to it frozen
//! (a stopped proxy, a partition where the kernel still acknowledges what we send) keepalives and
//! `tcp_user_timeout` never fire and the call would wait for ever. Past the deadline the call is
//! dropped half-way, so the connection's protocol state is unknown: it is marked abandoned and
//! closed as its holder lets it go ([`Lent`]), never lent again.

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use deadpool::managed::{self, Metrics, PoolError, RecycleError, RecycleResult};
use order_core::domain::db_failure::{self, ClientDeadline, DbFailure};
use order_core::plumbing::connections;
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection};

pub type Pool = managed::Pool<Manager>;
pub type Pooled = managed::Object<Manager>;

/// A pooled connection, and when it was last known good (`order_core::plumbing::connections::mark`).
pub struct PgConn {
    raw: PgConnection,
    tested_at: u64,
    /// The longest one call may take (`CommonSettings::db_client_deadline`; `None`: unbounded).
    deadline: Option<Duration>,
    /// A call was given up at the deadline: the connection is closed, never lent again.
    abandoned: bool,
}

impl PgConn {
    /// Runs one database call (`call` builds it on the raw connection), bounded by the client
    /// deadline. Past it the call is dropped, the connection abandoned, and the error is the
    /// deadline's ([`is_deadline`]); a connection already abandoned fails at once.
    pub async fn run<'c, T, F>(
        &'c mut self,
        call: impl FnOnce(&'c mut PgConnection) -> F,
    ) -> Result<T, sqlx::Error>
    where
        F: Future<Output = Result<T, sqlx::Error>> + 'c,
    {
        if self.abandoned {
            return Err(deadline_passed());
        }
        let Some(limit) = self.deadline else {
            return call(&mut self.raw).await;
        };
        match tokio::time::timeout(limit, call(&mut self.raw)).await {
            Ok(result) => result,
            Err(_) => {
                self.abandoned = true;
                Err(deadline_passed())
            }
        }
    }
}

/// The error of a call given up at the client deadline: an I/O timeout, so that it counts as a
/// possible loss for the other pooled connections too ([`note_failure`]).
fn deadline_passed() -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        ClientDeadline,
    ))
}

/// Whether `e` is a call given up at the client deadline.
pub fn is_deadline(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Io(io) if io.get_ref().is_some_and(|inner| inner.is::<ClientDeadline>()))
}

/// A connection lent out of the pool: given back when dropped, or closed if a call on it was
/// abandoned at the client deadline.
pub struct Lent(Option<Pooled>);

impl Lent {
    /// Closes the connection instead of giving it back (its state is unknown).
    pub fn discard(mut self) {
        if let Some(conn) = self.0.take() {
            drop(managed::Object::take(conn));
        }
    }
}

impl Deref for Lent {
    type Target = PgConn;

    fn deref(&self) -> &PgConn {
        self.0.as_ref().expect("lent until dropped")
    }
}

impl DerefMut for Lent {
    fn deref_mut(&mut self) -> &mut PgConn {
        self.0.as_mut().expect("lent until dropped")
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Some(conn) = self.0.take()
            && conn.abandoned
        {
            drop(managed::Object::take(conn));
        }
    }
}

pub struct Manager {
    options: PgConnectOptions,
    deadline: Option<Duration>,
}

impl Manager {
    /// Connections with `options`, each call on them bounded by `deadline`.
    pub fn new(options: PgConnectOptions, deadline: Option<Duration>) -> Self {
        Manager { options, deadline }
    }
}

impl managed::Manager for Manager {
    type Type = PgConn;
    type Error = sqlx::Error;

    async fn create(&self) -> Result<PgConn, sqlx::Error> {
        let tested_at = connections::mark();
        let raw = PgConnection::connect_with(&self.options).await?;
        Ok(PgConn {
            raw,
            tested_at,
            deadline: self.deadline,
            abandoned: false,
        })
    }

    /// Runs when a pooled connection is taken: a round trip only if a connection may have been
    /// lost since this one was known good, or if it has something unsent. An abandoned
    /// connection is never lent (`Lent` closes it first; this is the last line).
    async fn recycle(&self, conn: &mut PgConn, _: &Metrics) -> RecycleResult<sqlx::Error> {
        if conn.abandoned {
            return Err(RecycleError::message("abandoned at the client deadline"));
        }
        if connections::needs_test(conn.tested_at) || conn.raw.should_flush() {
            let tested_at = connections::mark();
            conn.run(|raw| raw.ping()).await?;
            conn.tested_at = tested_at;
        }
        Ok(())
    }
}

/// Counts a failure that may have lost its connection (I/O, protocol, or the server saying it
/// is shutting down or unreachable): every pooled connection then tests itself once.
pub fn note_failure(e: &sqlx::Error) {
    let lost = match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::BeginFailed => true,
        sqlx::Error::Database(db) => db
            .code()
            .is_some_and(|c| connections::sqlstate_may_lose(&c)),
        _ => false,
    };
    if lost {
        connections::note_possible_loss();
    }
}

/// Takes a connection, waiting at most `timeout` in all: `PoolTimedOut` once it passed.
pub async fn acquire(pool: &Pool, timeout: Duration) -> Result<Lent, sqlx::Error> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut backoff = Duration::from_millis(10);
    loop {
        let error = match tokio::time::timeout_at(deadline, pool.get()).await {
            Ok(Ok(conn)) => return Ok(Lent(Some(conn))),
            Err(_) | Ok(Err(PoolError::Timeout(_))) => return Err(sqlx::Error::PoolTimedOut),
            Ok(Err(PoolError::Closed)) => return Err(sqlx::Error::PoolClosed),
            Ok(Err(PoolError::Backend(e))) => e,
            Ok(Err(e)) => return Err(sqlx::Error::Configuration(e.to_string().into())),
        };
        if !retryable(&error) {
            return Err(error);
        }
        if tokio::time::Instant::now() + backoff >= deadline {
            tracing::debug!(%error, "no connection to the database within the pool timeout");
            return Err(sqlx::Error::PoolTimedOut);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(timeout / 5);
    }
}

/// A connection attempt worth repeating: the server unreachable, starting, or full.
fn retryable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) => true,
        sqlx::Error::Database(db) => {
            db_failure::judge(db.code().as_deref()) == DbFailure::Transient
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_failures_that_can_lose_a_connection_count() {
        let good = connections::mark();
        note_failure(&sqlx::Error::RowNotFound);
        note_failure(&sqlx::Error::PoolTimedOut);
        assert!(!connections::needs_test(good));
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        note_failure(&sqlx::Error::Io(reset));
        assert!(connections::needs_test(good));
        let after_reset = connections::mark();
        note_failure(&deadline_passed());
        assert!(connections::needs_test(after_reset));
    }

    #[test]
    fn only_the_deadline_error_reads_as_the_deadline() {
        assert!(is_deadline(&deadline_passed()));
        let timed_out = std::io::Error::from(std::io::ErrorKind::TimedOut);
        assert!(!is_deadline(&sqlx::Error::Io(timed_out)));
        assert!(!is_deadline(&sqlx::Error::PoolTimedOut));
    }

    #[test]
    fn refused_connections_are_retried_and_bad_configuration_is_not() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(retryable(&sqlx::Error::Io(refused)));
        assert!(!retryable(&sqlx::Error::Configuration("bad url".into())));
        assert!(!retryable(&sqlx::Error::RowNotFound));
    }
}
