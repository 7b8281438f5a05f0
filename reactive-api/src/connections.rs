//! reactive-api's connection pool: deadpool's managed pool of sqlx `PgConnection`s.
//!
//! Why not sqlx's own `PgPool`: sqlx 0.9 pings every connection as it goes back to the pool
//! (`Floating::return_to_pool`; no option turns it off), so every checkout kept its connection
//! out of the pool for one more round trip after its statement: at 6.5 ms from the database
//! (experiment D) a statement held its connection twice as long as in blocking-api.
//!
//! What that ping was for is kept without a round trip on the normal path:
//! - a connection whose server is gone is tested and replaced before it is lent again, by the
//!   rule both APIs share (`order_core::connections`, applied in [`Manager::recycle`]);
//! - a transaction dropped before its end is rolled back at once by `db::Tx` itself; anything else
//!   left unsent in a connection's buffer is flushed by a ping at its next checkout.
//!
//! A checkout ([`acquire`]) waits at most `DB_POOL_TIMEOUT_MS` in all: for a free connection, or
//! for the database to accept a new one (an unreachable or unavailable server is tried again with
//! backoff until then, as sqlx's pool and r2d2 do).

use std::time::Duration;

use deadpool::managed::{self, Metrics, PoolError, RecycleError, RecycleResult};
use order_core::connections;
use order_core::db_failure::{self, DbFailure};
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection};

pub type Pool = managed::Pool<Manager>;
pub type Pooled = managed::Object<Manager>;

/// A pooled connection, and when it was last known good (`order_core::connections::mark`).
pub struct PgConn {
    pub(crate) raw: PgConnection,
    tested_at: u64,
}

pub struct Manager {
    options: PgConnectOptions,
}

impl Manager {
    pub fn new(options: PgConnectOptions) -> Self {
        Manager { options }
    }
}

impl managed::Manager for Manager {
    type Type = PgConn;
    type Error = sqlx::Error;

    async fn create(&self) -> Result<PgConn, sqlx::Error> {
        let tested_at = connections::mark();
        let raw = PgConnection::connect_with(&self.options).await?;
        Ok(PgConn { raw, tested_at })
    }

    /// Runs when a pooled connection is taken: a round trip only if a connection may have been
    /// lost since this one was known good, or if it has something unsent.
    async fn recycle(&self, conn: &mut PgConn, _: &Metrics) -> RecycleResult<sqlx::Error> {
        if connections::needs_test(conn.tested_at) || conn.raw.should_flush() {
            let tested_at = connections::mark();
            conn.raw.ping().await.map_err(RecycleError::Backend)?;
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
pub async fn acquire(pool: &Pool, timeout: Duration) -> Result<Pooled, sqlx::Error> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut backoff = Duration::from_millis(10);
    loop {
        let error = match tokio::time::timeout_at(deadline, pool.get()).await {
            Ok(Ok(conn)) => return Ok(conn),
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
    }

    #[test]
    fn refused_connections_are_retried_and_bad_configuration_is_not() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(retryable(&sqlx::Error::Io(refused)));
        assert!(!retryable(&sqlx::Error::Configuration("bad url".into())));
        assert!(!retryable(&sqlx::Error::RowNotFound));
    }
}
