//! The database layer on sqlx: the SQL of `order_core::sql`, run on pooled `PgConnection`s
//! (`connections.rs`: deadpool, because sqlx's own pool adds a round trip to every checkout).
//!
//! Mirrors blocking-api's `db.rs`: the same statements, each in autocommit (or in the request's
//! held transaction with `DB_TX_SCOPE=request`), with every
//! acquire bounded by `DB_POOL_TIMEOUT_MS` and measured (waiting, wait time, timeouts), and every
//! call bounded by the client deadline (`connections::PgConn::run`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use order_core::contract::ValidOrder;
use order_core::db_failure::{self, DbFailure};
use order_core::error::ApiError;
use order_core::idempotency::{self, ExistingKey, KeyRef, Reservation, WonKey};
use order_core::metrics::Metrics;
use order_core::order::{Charging, Outcome, Placed, plain};
use order_core::recovery::ClaimedKey;
use order_core::settings::{CommonSettings, TxScope};
use order_core::sql;
use prometheus::HistogramTimer;
use sqlx::Row;
use sqlx::postgres::PgConnectOptions;

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

    /// Recovery: claims up to `batch` keys left in `CHARGING` whose lease expired.
    pub async fn claim_charging(
        &self,
        lease_seconds: f64,
        batch: i64,
    ) -> Result<Vec<ClaimedKey>, ApiError> {
        let mut c = self.acquire("recovery").await?;
        let rows = c
            .conn()
            .run(|pg| {
                sqlx::query(sql::CLAIM_CHARGING)
                    .bind(lease_seconds)
                    .bind(batch)
                    .fetch_all(pg)
            })
            .await
            .map_err(db_error)?;
        rows.iter()
            .map(|r| {
                Ok(ClaimedKey {
                    seller_id: r.try_get(0)?,
                    reference_id: r.try_get(1)?,
                    attempt: r.try_get(2)?,
                    gateway_key: r.try_get(3)?,
                    amount: r.try_get(4)?,
                    pending_order: r.try_get(5)?,
                    deferrals: r.try_get(6)?,
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_error)
    }

    /// Recovery: puts a claimed key off for `backoff_seconds` (`sql::DEFER_KEY`).
    pub async fn defer(&self, key: &ClaimedKey, backoff_seconds: f64) -> Result<(), ApiError> {
        let mut c = self.acquire("recovery").await?;
        c.conn()
            .run(|pg| {
                sqlx::query(sql::DEFER_KEY)
                    .bind(&key.seller_id)
                    .bind(&key.reference_id)
                    .bind(key.attempt)
                    .bind(backoff_seconds)
                    .execute(pg)
            })
            .await
            .map_err(db_error)?;
        Ok(())
    }

    /// Recovery, right before a void: whether the claim still holds (`sql::REASSERT_CLAIM`).
    pub async fn reassert_claim(
        &self,
        key: &ClaimedKey,
        lease_seconds: f64,
    ) -> Result<bool, ApiError> {
        let mut c = self.acquire("recovery").await?;
        let done = c
            .conn()
            .run(|pg| {
                sqlx::query(sql::REASSERT_CLAIM)
                    .bind(&key.seller_id)
                    .bind(&key.reference_id)
                    .bind(key.attempt)
                    .bind(lease_seconds)
                    .execute(pg)
            })
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() == 1)
    }

    /// Recovery's gauge: keys in `CHARGING` put off at least once (`sql::DEFERRED_KEYS`).
    pub async fn deferred_keys(&self) -> Result<i64, ApiError> {
        let mut c = self.acquire("recovery").await?;
        let row = c
            .conn()
            .run(|pg| sqlx::query(sql::DEFERRED_KEYS).fetch_one(pg))
            .await
            .map_err(db_error)?;
        row.try_get::<i64, _>(0).map_err(db_error)
    }

    /// Recovery: the key's charge never happened (and is voided at the gateway): release it.
    pub async fn release_uncharged(&self, key: &ClaimedKey) -> Result<bool, ApiError> {
        let mut c = self.acquire("recovery").await?;
        let done = c
            .conn()
            .run(|pg| {
                sqlx::query(sql::RELEASE_UNCHARGED)
                    .bind(&key.seller_id)
                    .bind(&key.reference_id)
                    .bind(key.attempt)
                    .execute(pg)
            })
            .await
            .map_err(db_error)?;
        Ok(done.rows_affected() == 1)
    }

    /// The stored document of an order, if it belongs to `seller_id`.
    pub async fn find_order(&self, id: &str, seller_id: &str) -> Result<Option<String>, ApiError> {
        let mut c = self.acquire("read").await?;
        let row = c
            .conn()
            .run(|pg| {
                sqlx::query(sql::FIND_ORDER)
                    .bind(id)
                    .bind(seller_id)
                    .fetch_optional(pg)
            })
            .await
            .map_err(db_error)?;
        row.map(|r| r.try_get::<String, _>(0).map_err(db_error))
            .transpose()
    }
}

/// Reserves the key, or reads who holds it (see `order_core::idempotency`).
pub async fn reserve(
    conn: &mut PgConn,
    seller_id: &str,
    order: &ValidOrder,
    lease_seconds: f64,
) -> Result<Reservation, ApiError> {
    let reference_id = &order.request.reference_id;
    let won = conn
        .run(|pg| {
            sqlx::query(sql::RESERVE_KEY)
                .bind(seller_id)
                .bind(reference_id)
                .bind(&order.request_hash)
                .bind(lease_seconds)
                .fetch_optional(pg)
        })
        .await
        .map_err(db_error)?;
    if let Some(row) = won {
        let won = (|| {
            Ok::<_, sqlx::Error>(WonKey {
                attempt: row.try_get(0)?,
                key_id: row.try_get(1)?,
                state: row.try_get(2)?,
                gateway_key: row.try_get(3)?,
                pending_order: row.try_get(4)?,
            })
        })()
        .map_err(db_error)?;
        return idempotency::acquired(won);
    }
    Ok(match find_key(conn, seller_id, reference_id).await? {
        Some(existing) => Reservation::Taken(existing),
        None => Reservation::Released,
    })
}

/// Reads a key's row.
pub async fn find_key(
    conn: &mut PgConn,
    seller_id: &str,
    reference_id: &str,
) -> Result<Option<ExistingKey>, ApiError> {
    let row = conn
        .run(|pg| {
            sqlx::query(sql::FIND_KEY)
                .bind(seller_id)
                .bind(reference_id)
                .fetch_optional(pg)
        })
        .await
        .map_err(db_error)?;
    let Some(row) = row else {
        return Ok(None);
    };
    Ok(Some(ExistingKey {
        request_hash: row.try_get(0).map_err(db_error)?,
        state: row.try_get(1).map_err(db_error)?,
        response_status: row.try_get(2).map_err(db_error)?,
        response_body: row.try_get(3).map_err(db_error)?,
        order_id: row.try_get(4).map_err(db_error)?,
    }))
}

/// Marks the key `CHARGING` with its charge. `false`: this attempt lost its lease.
pub async fn mark_charging(
    conn: &mut PgConn,
    key: KeyRef<'_>,
    charging: &Charging,
    lease_seconds: f64,
) -> Result<bool, ApiError> {
    let done = conn
        .run(|pg| {
            sqlx::query(sql::MARK_CHARGING)
                .bind(key.seller_id)
                .bind(key.reference_id)
                .bind(key.attempt)
                .bind(&charging.gateway_key)
                .bind(charging.pending.amount)
                .bind(charging.pending.to_json())
                .bind(lease_seconds)
                .execute(pg)
        })
        .await
        .map_err(db_error)?;
    Ok(done.rows_affected() == 1)
}

/// Stores a completed outcome on the key. `false`: this attempt lost its lease.
pub async fn complete_key(
    conn: &mut PgConn,
    key: KeyRef<'_>,
    outcome: &Outcome,
) -> Result<bool, ApiError> {
    let done = conn
        .run(|pg| {
            sqlx::query(sql::COMPLETE_KEY)
                .bind(key.seller_id)
                .bind(key.reference_id)
                .bind(key.attempt)
                .bind(i32::from(outcome.status))
                .bind(&outcome.body)
                .bind(outcome.order_id.as_deref())
                .execute(pg)
        })
        .await
        .map_err(db_error)?;
    Ok(done.rows_affected() == 1)
}

/// Completes the key with the order's 201 and writes customer, order and items, in one statement
/// (`sql::PERSIST_ORDER`). `false`: this attempt lost its lease, and nothing was written.
/// `placed.payment_key` is the gateway idempotency key of the order's charge.
pub async fn persist_order(
    conn: &mut PgConn,
    key: KeyRef<'_>,
    outcome: &Outcome,
    placed: Placed<'_>,
) -> Result<bool, ApiError> {
    let Placed { doc, payment_key } = placed;
    let c = &doc.customer;
    let a = &c.address;
    let p = &doc.payment;
    let positions: Vec<i32> = (1..=doc.items.len() as i32).collect();
    let names: Vec<&str> = doc.items.iter().map(|i| i.name.as_str()).collect();
    let quantities: Vec<i64> = doc.items.iter().map(|i| i.quantity).collect();
    let values: Vec<i64> = doc.items.iter().map(|i| i.value).collect();
    let completed: i64 = conn
        .run(|pg| {
            sqlx::query(sql::PERSIST_ORDER)
                .bind(key.seller_id)
                .bind(key.reference_id)
                .bind(key.attempt)
                .bind(i32::from(outcome.status))
                .bind(&outcome.body)
                .bind(&doc.id)
                .bind(&c.full_name)
                .bind(&c.tax_id)
                .bind(&a.street)
                .bind(&a.number)
                .bind(&a.state)
                .bind(&a.city)
                .bind(&a.locality)
                .bind(&a.zip_code)
                .bind(a.complement.as_deref())
                .bind(&doc.status)
                .bind(doc.amount)
                .bind(doc.installments)
                .bind(&p.method)
                .bind(&p.card_last4)
                .bind(&p.code)
                .bind(plain(&p.status))
                .bind(plain(&doc.risk.recommendation))
                .bind(doc.created_at)
                .bind(payment_key)
                .bind(positions)
                .bind(names)
                .bind(quantities)
                .bind(values)
                .fetch_one(pg)
        })
        .await
        .and_then(|row| row.try_get(0))
        .map_err(db_error)?;
    Ok(completed == 1)
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

/// A `BEGIN` that failed: no transaction was opened, and a connection that cannot even begin is
/// as good as none — 503, like a failed acquire.
fn begin_failed(e: sqlx::Error) -> ApiError {
    connections::note_failure(&e);
    if connections::is_deadline(&e) {
        return db_failure::client_deadline();
    }
    ApiError::DatabaseUnavailable(e.into())
}

/// Pool timeouts and lost connections are `database_unavailable`; a server error is judged by
/// its SQLSTATE (`order_core::db_failure`: what may pass is 503, a refusal of the rows is marked
/// for recovery); anything else is a bug. Every failure that may have lost its connection is
/// noted for the pool (`connections.rs`). A call given up at the client deadline is
/// `db_failure::client_deadline`: unknown, never voided.
pub(crate) fn db_error(e: sqlx::Error) -> ApiError {
    connections::note_failure(&e);
    if connections::is_deadline(&e) {
        return db_failure::client_deadline();
    }
    let judged = match &e {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::BeginFailed => DbFailure::Transient,
        sqlx::Error::Database(db) => db_failure::judge(db.code().as_deref()),
        _ => DbFailure::Bug,
    };
    judged.into_api_error(e.into())
}
