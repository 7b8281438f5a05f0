//! The transaction scope on sqlx + deadpool: the pool ([`Db`]), a connection in autocommit
//! ([`Conn`]), a transaction ([`Tx`]), the request's held transaction with `DB_TX_SCOPE=request`
//! ([`Held`]) and one step's connection, held or its own ([`Step`]). Every acquire is bounded by
//! `DB_POOL_TIMEOUT_MS` and measured (waiting, wait time, timeouts). The twin of blocking-api's
//! `db/tx.rs`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use order_core::domain::error::ApiError;
use order_core::domain::idempotency::KeyRef;
use order_core::domain::sql;
use order_core::plumbing::metrics::Metrics;
use order_core::plumbing::settings::{CommonSettings, TxScope};
use prometheus::HistogramTimer;
use sqlx::postgres::PgConnectOptions;

use super::error::{begin_failed, db_error};
use crate::connections::{self, Lent, Manager, PgConn, Pool};

#[derive(Clone)]
pub struct Db {
    pool: Pool,
    timeout: Duration,
    metrics: Arc<Metrics>,
}

/// A transaction and the timer of how long its connection is held. Dropped before
/// [`Db::commit`], it is rolled back at once by a task of its own, which then returns the
/// connection: an open transaction left on an idle pooled connection would keep its locks.
pub struct Tx {
    /// Always `Some` until the transaction ends (committed, or handed to the rollback task).
    conn: Option<Lent>,
    _held: HistogramTimer,
}

impl Tx {
    fn conn(&mut self) -> &mut PgConn {
        self.conn
            .as_mut()
            .expect("an open transaction has its connection")
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime left to roll back on: the connection is closed instead (the server ends
            // the transaction with the session).
            conn.discard();
            return;
        };
        runtime.spawn(async move {
            if let Err(e) = control(&mut conn, "ROLLBACK").await {
                connections::note_failure(&e);
                // The transaction's state is unknown: closed, not reused.
                conn.discard();
            }
        });
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
    conn: Lent,
    _held: HistogramTimer,
}

impl Conn {
    pub fn conn(&mut self) -> &mut PgConn {
        &mut self.conn
    }
}

/// One step's connection: the request's held transaction, or an autocommit one of its own,
/// which goes back to the pool when the step is dropped (a held transaction stays held).
pub enum Step<'h> {
    Held(&'h mut Tx),
    Own(Conn),
}

impl Step<'_> {
    pub fn conn(&mut self) -> &mut PgConn {
        match self {
            Step::Held(tx) => tx.conn(),
            Step::Own(c) => c.conn(),
        }
    }
}

impl Db {
    /// A lazy pool: connections open on first use, as in blocking-api's r2d2 pool, and a checkout
    /// pings only after a failure that may have lost connections (`connections.rs`, the rule
    /// blocking-api's pool follows too). Every connection starts with
    /// `CommonSettings::session_options` (startup options).
    pub fn connect(settings: &CommonSettings, metrics: Arc<Metrics>) -> anyhow::Result<Self> {
        let options: PgConnectOptions = settings
            .database_url
            .parse::<PgConnectOptions>()
            .context("parsing DATABASE_URL")?
            .options(settings.session_options());
        let manager = Manager::new(options, settings.db_client_deadline());
        let pool = Pool::builder(manager)
            .max_size(settings.db_pool_size as usize)
            .build()
            .context("building the connection pool")?;
        Ok(Db {
            pool,
            timeout: settings.db_pool_timeout(),
            metrics,
        })
    }

    /// Open connections and idle ones, for the pool gauges.
    pub fn pool_state(&self) -> (u32, u32) {
        let status = self.pool.status();
        (status.size as u32, status.available as u32)
    }

    /// Takes a connection (bounded wait, measured) for autocommit statements.
    pub async fn acquire(&self, kind: &str) -> Result<Conn, ApiError> {
        let conn = self.checkout().await?;
        Ok(Conn {
            conn,
            _held: self.metrics.tx_timer(kind),
        })
    }

    /// A connection from the pool, the wait measured (not yet counted as held).
    async fn checkout(&self) -> Result<Lent, ApiError> {
        let timer = self.metrics.start_acquire();
        let conn = connections::acquire(&self.pool, self.timeout).await;
        timer.finish(matches!(conn, Err(sqlx::Error::PoolTimedOut)));
        conn.map_err(|e| ApiError::DatabaseUnavailable(e.into()))
    }

    /// Takes a connection (bounded wait, measured) and opens a transaction on it.
    pub async fn begin(&self, kind: &str) -> Result<Tx, ApiError> {
        let Conn { mut conn, _held } = self.acquire(kind).await?;
        match control(&mut conn, "BEGIN").await {
            Ok(()) => Ok(Tx {
                conn: Some(conn),
                _held,
            }),
            Err(e) => {
                // No transaction was held.
                _held.stop_and_discard();
                Err(begin_failed(e))
            }
        }
    }

    /// For `DB_TX_SCOPE=request`: takes the request's connection now and holds it to the end.
    pub async fn hold(&self, scope: TxScope) -> Result<Held, ApiError> {
        Ok(Held(match scope {
            TxScope::Short => None,
            TxScope::Request => Some(self.begin("request").await?),
        }))
    }

    pub async fn step<'h>(&self, held: &'h mut Held, kind: &str) -> Result<Step<'h>, ApiError> {
        Ok(match &mut held.0 {
            Some(tx) => Step::Held(tx),
            None => Step::Own(self.acquire(kind).await?),
        })
    }

    /// Ends a request: commits its held transaction (a no-op in short scope).
    pub async fn commit(&self, held: Held) -> Result<(), ApiError> {
        match held.0 {
            Some(mut tx) => {
                // Taken out first: a transaction whose COMMIT was sent is not rolled back.
                let mut conn = tx
                    .conn
                    .take()
                    .expect("an open transaction has its connection");
                control(&mut conn, sql::DURABLE_COMMIT)
                    .await
                    .map_err(db_error)?;
                control(&mut conn, "COMMIT").await.map_err(db_error)
            }
            None => Ok(()),
        }
    }

    /// Makes a request-scope transaction's work durable (`COMMIT`) and opens the next one on the
    /// same connection, which stays held: the `CHARGING` mark must be committed before the
    /// gateway sees the card, whatever the scope. A no-op in short scope (each step commits).
    pub async fn checkpoint(&self, held: &mut Held) -> Result<(), ApiError> {
        if let Some(tx) = &mut held.0 {
            control(tx.conn(), sql::DURABLE_COMMIT)
                .await
                .map_err(db_error)?;
            control(tx.conn(), "COMMIT").await.map_err(db_error)?;
            control(tx.conn(), "BEGIN").await.map_err(begin_failed)?;
        }
        Ok(())
    }

    /// Gives up an attempt after a transient failure: its lease ends now (`sql::RELEASE_KEY`), so
    /// a retry may take the key over at once. A request-scope transaction is rolled back first
    /// (which may already have removed a fresh reservation; the statement then matches nothing).
    /// If even this fails, the lease simply runs out.
    pub async fn release(&self, held: Held, key: KeyRef<'_>) {
        drop(held);
        let result = async {
            let mut c = self.acquire("release").await?;
            c.conn()
                .run(|pg| {
                    sqlx::query(sql::RELEASE_KEY)
                        .bind(key.seller_id)
                        .bind(key.reference_id)
                        .bind(key.attempt)
                        .execute(pg)
                })
                .await
                .map_err(db_error)
        };
        if let Err(e) = result.await {
            tracing::debug!(error = %e, "could not release the key; its lease will expire");
        }
    }

    pub async fn ping(&self) -> Result<(), ApiError> {
        let mut conn = self.checkout().await?;
        conn.run(|pg| sqlx::query(sql::PING).execute(pg))
            .await
            .map_err(db_error)?;
        Ok(())
    }
}

/// A transaction-control statement (`BEGIN`, `COMMIT`, `ROLLBACK`, `PREPARE TRANSACTION …`), sent
/// as it is, as in blocking-api (sqlx's `Transaction` needs a connection of sqlx's own pool).
pub(crate) async fn control(
    conn: &mut PgConn,
    statement: impl sqlx::SqlSafeStr,
) -> Result<(), sqlx::Error> {
    conn.run(|pg| sqlx::raw_sql(statement).execute(pg))
        .await
        .map(|_| ())
}
