//! The transaction scope on diesel + r2d2: the pool ([`Db`]), a connection in autocommit
//! ([`Conn`]), a transaction ([`Tx`]), the request's held transaction with `DB_TX_SCOPE=request`
//! ([`Held`]) and one step's connection, held or its own ([`Step`]). Every acquire is bounded by
//! `DB_POOL_TIMEOUT_MS` and measured (waiting, wait time, timeouts). The twin of reactive-api's
//! `db/tx.rs`.

use std::sync::Arc;

use diesel::connection::{AnsiTransactionManager, TransactionManager};
use diesel::r2d2::{Pool, PooledConnection};
use diesel::sql_types::{Integer, Text};
use diesel::{RunQueryDsl, sql_query};
use order_core::domain::error::ApiError;
use order_core::domain::idempotency::KeyRef;
use order_core::domain::sql;
use order_core::plumbing::metrics::Metrics;
use order_core::plumbing::settings::{CommonSettings, TxScope};
use prometheus::HistogramTimer;

use super::error::{begin_failed, db_error};
use super::prepared::{Prepare, statement};
use crate::connections::{Manager, PgConn, with_libpq_options};
use crate::db_socket::Target;

type PgPool = Pool<Manager>;

#[derive(Clone)]
pub struct Db {
    pool: PgPool,
    metrics: Arc<Metrics>,
}

/// A transaction on a pooled connection; rolled back if dropped before [`Tx::commit`].
pub struct Tx {
    conn: PooledConnection<Manager>,
    open: bool,
    _held: HistogramTimer,
}

impl Tx {
    fn commit(mut self) -> Result<(), ApiError> {
        self.open = false;
        self.conn
            .run(AnsiTransactionManager::commit_transaction)
            .map_err(db_error)
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        if self.open {
            // A failed rollback marks the connection broken; r2d2 then discards it.
            let _ = self.conn.run(AnsiTransactionManager::rollback_transaction);
        }
    }
}

/// With `DB_TX_SCOPE=request`, the transaction every step of a request runs in.
pub struct Held(Option<Tx>);

impl Held {
    /// No held transaction: each step takes a connection of its own (short scope, and every
    /// retry on a fresh connection).
    pub fn none() -> Self {
        Held(None)
    }
}

/// A pooled connection in autocommit: each statement is its own transaction, with no
/// `BEGIN`/`COMMIT` round trips (every step of the order flow is one atomic statement).
pub struct Conn {
    conn: PooledConnection<Manager>,
    _held: HistogramTimer,
}

impl Conn {
    pub fn conn(&mut self) -> &mut PgConn {
        &mut self.conn
    }
}

/// One step's connection: the request's held transaction, or an autocommit one of its own,
/// which goes back to the pool when the step is dropped (a held transaction stays held).
// Lives on the stack for one step; boxing `Own` would only add an allocation per step.
#[allow(clippy::large_enum_variant)]
pub enum Step<'h> {
    Held(&'h mut Tx),
    Own(Conn),
}

impl Step<'_> {
    pub fn conn(&mut self) -> &mut PgConn {
        match self {
            Step::Held(tx) => &mut tx.conn,
            Step::Own(c) => c.conn(),
        }
    }
}

impl Db {
    /// A lazy pool: connections open on first use, as in reactive-api's sqlx pool. Every
    /// connection starts with `CommonSettings::session_options` (libpq's `options` parameter).
    pub fn connect(settings: &CommonSettings, metrics: Arc<Metrics>) -> anyhow::Result<Self> {
        let deadline = settings.db_client_deadline();
        let url = with_libpq_options(
            &settings.database_url,
            &settings.session_options(),
            deadline,
        );
        let target = Target::of(&settings.database_url, |name| std::env::var(name).ok())?;
        let pool = Pool::builder()
            .max_size(settings.db_pool_size)
            .min_idle(Some(0))
            .connection_timeout(settings.db_pool_timeout())
            // A checkout pings only after a failure that may have lost connections
            // (`connections.rs`); reactive-api's pool follows the same rule.
            .test_on_check_out(true)
            .build_unchecked(Manager::new(url, target, deadline));
        Ok(Db { pool, metrics })
    }

    /// Open connections and idle ones, for the pool gauges.
    pub fn pool_state(&self) -> (u32, u32) {
        let state = self.pool.state();
        (state.connections, state.idle_connections)
    }

    /// Takes a connection (bounded wait, measured) for autocommit statements.
    pub fn acquire(&self, kind: &str) -> Result<Conn, ApiError> {
        let timer = self.metrics.start_acquire();
        // r2d2 only fails a checkout when DB_POOL_TIMEOUT_MS has passed.
        let conn = self.pool.get();
        timer.finish(conn.is_err());
        Ok(Conn {
            conn: conn.map_err(|e| ApiError::DatabaseUnavailable(e.into()))?,
            _held: self.metrics.tx_timer(kind),
        })
    }

    /// Takes a connection (bounded wait, measured) and opens a transaction on it.
    pub fn begin(&self, kind: &str) -> Result<Tx, ApiError> {
        let Conn { mut conn, _held } = self.acquire(kind)?;
        if let Err(e) = conn.run(AnsiTransactionManager::begin_transaction) {
            // No transaction was held.
            _held.stop_and_discard();
            return Err(begin_failed(e));
        }
        Ok(Tx {
            conn,
            open: true,
            _held,
        })
    }

    /// For `DB_TX_SCOPE=request`: takes the request's connection now and holds it to the end.
    pub fn hold(&self, scope: TxScope) -> Result<Held, ApiError> {
        Ok(Held(match scope {
            TxScope::Short => None,
            TxScope::Request => Some(self.begin("request")?),
        }))
    }

    pub fn step<'h>(&self, held: &'h mut Held, kind: &str) -> Result<Step<'h>, ApiError> {
        Ok(match &mut held.0 {
            Some(tx) => Step::Held(tx),
            None => Step::Own(self.acquire(kind)?),
        })
    }

    /// Ends a request: commits its held transaction (a no-op in short scope).
    pub fn commit(&self, held: Held) -> Result<(), ApiError> {
        match held.0 {
            Some(mut tx) => {
                durable_commit(&mut tx.conn)?;
                tx.commit()
            }
            None => Ok(()),
        }
    }

    /// Makes a request-scope transaction's work durable (`COMMIT`) and opens the next one on the
    /// same connection, which stays held: the `CHARGING` mark must be committed before the
    /// gateway sees the card, whatever the scope. A no-op in short scope (each step commits).
    pub fn checkpoint(&self, held: &mut Held) -> Result<(), ApiError> {
        if let Some(tx) = &mut held.0 {
            durable_commit(&mut tx.conn)?;
            tx.open = false;
            tx.conn
                .run(AnsiTransactionManager::commit_transaction)
                .map_err(db_error)?;
            tx.conn
                .run(AnsiTransactionManager::begin_transaction)
                .map_err(begin_failed)?;
            tx.open = true;
        }
        Ok(())
    }

    /// Gives up an attempt after a transient failure: its lease ends now (`sql::RELEASE_KEY`), so
    /// a retry may take the key over at once. A request-scope transaction is rolled back first
    /// (which may already have removed a fresh reservation; the statement then matches nothing).
    /// If even this fails, the lease simply runs out.
    pub fn release(&self, held: Held, key: KeyRef<'_>) {
        drop(held);
        let result = (|| {
            let mut c = self.acquire("release")?;
            c.conn()
                .run(|pg| {
                    sql_query(sql::RELEASE_KEY)
                        .bind::<Text, _>(key.seller_id)
                        .bind::<Text, _>(key.reference_id)
                        .bind::<Integer, _>(key.attempt)
                        .prepared_as::<statement::RELEASE_KEY>()
                        .execute(pg)
                })
                .map_err(db_error)
        })();
        if let Err(e) = result {
            tracing::debug!(error = %e, "could not release the key; its lease will expire");
        }
    }

    pub fn ping(&self) -> Result<(), ApiError> {
        let timer = self.metrics.start_acquire();
        let conn = self.pool.get();
        timer.finish(conn.is_err());
        let mut conn = conn.map_err(|e| ApiError::DatabaseUnavailable(e.into()))?;
        conn.run(|pg| sql_query(sql::PING).prepared().execute(pg))
            .map_err(db_error)?;
        Ok(())
    }
}

/// `sql::DURABLE_COMMIT`, before a request-scope transaction commits.
fn durable_commit(conn: &mut PgConn) -> Result<(), ApiError> {
    conn.run(|c| sql_query(sql::DURABLE_COMMIT).execute(c))
        .map(|_| ())
        .map_err(db_error)
}
