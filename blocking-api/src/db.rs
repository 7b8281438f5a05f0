//! The database layer on diesel + r2d2: the SQL of `order_core::sql`, run with `sql_query`.
//!
//! Mirrors reactive-api's `db.rs`: the same statements, each in autocommit (or in the request's
//! held transaction with `DB_TX_SCOPE=request`), with every
//! acquire bounded by `DB_POOL_TIMEOUT_MS` and measured (waiting, wait time, timeouts).
//! These functions block their thread; they only ever run on the blocking pool. Every call is
//! bounded by the client deadline (`connections::PgConn::run`, `watchdog.rs`).

use std::marker::PhantomData;
use std::sync::Arc;

use anyhow::Context;

use diesel::connection::{AnsiTransactionManager, TransactionManager};
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::r2d2::{Pool, PooledConnection};
use diesel::sql_types::Untyped;
use diesel::sql_types::{Array, BigInt, Double, Integer, Nullable, Text, Timestamptz};
use diesel::{QueryResult, QueryableByName, RunQueryDsl, sql_query};
use order_core::contract::ValidOrder;
use order_core::error::ApiError;
use order_core::idempotency::{self, ExistingKey, KeyRef, Reservation, WonKey};
use order_core::metrics::Metrics;
use order_core::order::{Charging, Outcome, Placed, plain};
use order_core::recovery::ClaimedKey;
use order_core::settings::{CommonSettings, TxScope};
use order_core::sql;
use prometheus::HistogramTimer;

use crate::connections::{self, Manager, PgConn};

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
        let (host, port) = address_of(&settings.database_url)?;
        let pool = Pool::builder()
            .max_size(settings.db_pool_size)
            .min_idle(Some(0))
            .connection_timeout(settings.db_pool_timeout())
            // A checkout pings only after a failure that may have lost connections
            // (`connections.rs`); reactive-api's pool follows the same rule.
            .test_on_check_out(true)
            .build_unchecked(Manager::new(url, &host, port, deadline));
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

    /// Recovery: claims up to `batch` keys left in `CHARGING` whose lease expired.
    pub fn claim_charging(
        &self,
        lease_seconds: f64,
        batch: i64,
    ) -> Result<Vec<ClaimedKey>, ApiError> {
        #[derive(QueryableByName)]
        struct Claimed {
            #[diesel(sql_type = Text)]
            seller_id: String,
            #[diesel(sql_type = Text)]
            reference_id: String,
            #[diesel(sql_type = Integer)]
            attempt: i32,
            #[diesel(sql_type = Text)]
            gateway_key: String,
            #[diesel(sql_type = BigInt)]
            amount: i64,
            #[diesel(sql_type = Text)]
            pending_order: String,
            #[diesel(sql_type = Integer)]
            deferrals: i32,
        }
        let mut c = self.acquire("recovery")?;
        let rows: Vec<Claimed> = c
            .conn()
            .run(|pg| {
                sql_query(sql::CLAIM_CHARGING)
                    .bind::<Double, _>(lease_seconds)
                    .bind::<BigInt, _>(batch)
                    .prepared()
                    .load(pg)
            })
            .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|r| ClaimedKey {
                seller_id: r.seller_id,
                reference_id: r.reference_id,
                attempt: r.attempt,
                gateway_key: r.gateway_key,
                amount: r.amount,
                pending_order: r.pending_order,
                deferrals: r.deferrals,
            })
            .collect())
    }

    /// Recovery: puts a claimed key off for `backoff_seconds` (`sql::DEFER_KEY`).
    pub fn defer(&self, key: &ClaimedKey, backoff_seconds: f64) -> Result<(), ApiError> {
        let mut c = self.acquire("recovery")?;
        c.conn()
            .run(|pg| {
                sql_query(sql::DEFER_KEY)
                    .bind::<Text, _>(&key.seller_id)
                    .bind::<Text, _>(&key.reference_id)
                    .bind::<Integer, _>(key.attempt)
                    .bind::<Double, _>(backoff_seconds)
                    .prepared()
                    .execute(pg)
            })
            .map_err(db_error)?;
        Ok(())
    }

    /// Recovery, right before a void: whether the claim still holds (`sql::REASSERT_CLAIM`).
    pub fn reassert_claim(&self, key: &ClaimedKey, lease_seconds: f64) -> Result<bool, ApiError> {
        let mut c = self.acquire("recovery")?;
        let rows = c
            .conn()
            .run(|pg| {
                sql_query(sql::REASSERT_CLAIM)
                    .bind::<Text, _>(&key.seller_id)
                    .bind::<Text, _>(&key.reference_id)
                    .bind::<Integer, _>(key.attempt)
                    .bind::<Double, _>(lease_seconds)
                    .prepared()
                    .execute(pg)
            })
            .map_err(db_error)?;
        Ok(rows == 1)
    }

    /// Recovery's gauge: keys in `CHARGING` put off at least once (`sql::DEFERRED_KEYS`).
    pub fn deferred_keys(&self) -> Result<i64, ApiError> {
        #[derive(QueryableByName)]
        struct Count {
            #[diesel(sql_type = BigInt)]
            deferred: i64,
        }
        let mut c = self.acquire("recovery")?;
        let row: Count = c
            .conn()
            .run(|pg| sql_query(sql::DEFERRED_KEYS).prepared().get_result(pg))
            .map_err(db_error)?;
        Ok(row.deferred)
    }

    /// Recovery: the key's charge never happened (and is voided at the gateway): release it.
    pub fn release_uncharged(&self, key: &ClaimedKey) -> Result<bool, ApiError> {
        let mut c = self.acquire("recovery")?;
        let rows = c
            .conn()
            .run(|pg| {
                sql_query(sql::RELEASE_UNCHARGED)
                    .bind::<Text, _>(&key.seller_id)
                    .bind::<Text, _>(&key.reference_id)
                    .bind::<Integer, _>(key.attempt)
                    .prepared()
                    .execute(pg)
            })
            .map_err(db_error)?;
        Ok(rows == 1)
    }

    /// The stored document of an order, if it belongs to `seller_id`.
    pub fn find_order(&self, id: &str, seller_id: &str) -> Result<Option<String>, ApiError> {
        #[derive(QueryableByName)]
        struct Found {
            #[diesel(sql_type = Text)]
            response_body: String,
        }
        let mut c = self.acquire("read")?;
        let found: Option<Found> = c
            .conn()
            .run(|pg| {
                sql_query(sql::FIND_ORDER)
                    .bind::<Text, _>(id)
                    .bind::<Text, _>(seller_id)
                    .prepared_as::<statement::FIND_ORDER>()
                    .get_result(pg)
            })
            .map(Some)
            .or_else(not_found_is_none)?;
        Ok(found.map(|f| f.response_body))
    }
}

#[derive(QueryableByName)]
struct Won {
    #[diesel(sql_type = Integer)]
    attempt: i32,
    #[diesel(sql_type = Text)]
    key_id: String,
    #[diesel(sql_type = Text)]
    state: String,
    #[diesel(sql_type = Nullable<Text>)]
    gateway_key: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pending_order: Option<String>,
}

#[derive(QueryableByName)]
struct KeyRow {
    #[diesel(sql_type = Text)]
    request_hash: String,
    #[diesel(sql_type = Text)]
    state: String,
    #[diesel(sql_type = Nullable<Integer>)]
    response_status: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    response_body: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    order_id: Option<String>,
}

/// Reserves the key, or reads who holds it (see `order_core::idempotency`).
pub fn reserve(
    conn: &mut PgConn,
    seller_id: &str,
    order: &ValidOrder,
    lease_seconds: f64,
) -> Result<Reservation, ApiError> {
    let reference_id = &order.request.reference_id;
    let won: Option<Won> = conn
        .run(|pg| {
            sql_query(sql::RESERVE_KEY)
                .bind::<Text, _>(seller_id)
                .bind::<Text, _>(reference_id)
                .bind::<Text, _>(&order.request_hash)
                .bind::<Double, _>(lease_seconds)
                .prepared_as::<statement::RESERVE_KEY>()
                .get_result(pg)
        })
        .map(Some)
        .or_else(not_found_is_none)?;
    if let Some(w) = won {
        return idempotency::acquired(WonKey {
            attempt: w.attempt,
            key_id: w.key_id,
            state: w.state,
            gateway_key: w.gateway_key,
            pending_order: w.pending_order,
        });
    }
    Ok(match find_key(conn, seller_id, reference_id)? {
        Some(existing) => Reservation::Taken(existing),
        None => Reservation::Released,
    })
}

/// Reads a key's row.
pub fn find_key(
    conn: &mut PgConn,
    seller_id: &str,
    reference_id: &str,
) -> Result<Option<ExistingKey>, ApiError> {
    let row: Option<KeyRow> = conn
        .run(|pg| {
            sql_query(sql::FIND_KEY)
                .bind::<Text, _>(seller_id)
                .bind::<Text, _>(reference_id)
                .prepared_as::<statement::FIND_KEY>()
                .get_result(pg)
        })
        .map(Some)
        .or_else(not_found_is_none)?;
    Ok(row.map(|row| ExistingKey {
        request_hash: row.request_hash,
        state: row.state,
        response_status: row.response_status,
        response_body: row.response_body,
        order_id: row.order_id,
    }))
}

/// Marks the key `CHARGING` with its charge. `false`: this attempt lost its lease.
pub fn mark_charging(
    conn: &mut PgConn,
    key: KeyRef<'_>,
    charging: &Charging,
    lease_seconds: f64,
) -> Result<bool, ApiError> {
    let rows = conn
        .run(|pg| {
            sql_query(sql::MARK_CHARGING)
                .bind::<Text, _>(key.seller_id)
                .bind::<Text, _>(key.reference_id)
                .bind::<Integer, _>(key.attempt)
                .bind::<Text, _>(&charging.gateway_key)
                .bind::<BigInt, _>(charging.pending.amount)
                .bind::<Text, _>(charging.pending.to_json())
                .bind::<Double, _>(lease_seconds)
                .prepared_as::<statement::MARK_CHARGING>()
                .execute(pg)
        })
        .map_err(db_error)?;
    Ok(rows == 1)
}

/// Stores a completed outcome on the key. `false`: this attempt lost its lease.
pub fn complete_key(
    conn: &mut PgConn,
    key: KeyRef<'_>,
    outcome: &Outcome,
) -> Result<bool, ApiError> {
    let rows = conn
        .run(|pg| {
            sql_query(sql::COMPLETE_KEY)
                .bind::<Text, _>(key.seller_id)
                .bind::<Text, _>(key.reference_id)
                .bind::<Integer, _>(key.attempt)
                .bind::<Integer, _>(i32::from(outcome.status))
                .bind::<Text, _>(&outcome.body)
                .bind::<Nullable<Text>, _>(outcome.order_id.as_deref())
                .prepared_as::<statement::COMPLETE_KEY>()
                .execute(pg)
        })
        .map_err(db_error)?;
    Ok(rows == 1)
}

/// Completes the key with the order's 201 and writes customer, order and items, in one statement
/// (`sql::PERSIST_ORDER`). `false`: this attempt lost its lease, and nothing was written.
/// `placed.payment_key` is the gateway idempotency key of the order's charge.
pub fn persist_order(
    conn: &mut PgConn,
    key: KeyRef<'_>,
    outcome: &Outcome,
    placed: Placed<'_>,
) -> Result<bool, ApiError> {
    #[derive(QueryableByName)]
    struct Completed {
        #[diesel(sql_type = BigInt)]
        completed: i64,
    }
    let Placed { doc, payment_key } = placed;
    let c = &doc.customer;
    let a = &c.address;
    let p = &doc.payment;
    let positions: Vec<i32> = (1..=doc.items.len() as i32).collect();
    let names: Vec<&str> = doc.items.iter().map(|i| i.name.as_str()).collect();
    let quantities: Vec<i64> = doc.items.iter().map(|i| i.quantity).collect();
    let values: Vec<i64> = doc.items.iter().map(|i| i.value).collect();
    let row: Completed = conn
        .run(|pg| {
            sql_query(sql::PERSIST_ORDER)
                .bind::<Text, _>(key.seller_id)
                .bind::<Text, _>(key.reference_id)
                .bind::<Integer, _>(key.attempt)
                .bind::<Integer, _>(i32::from(outcome.status))
                .bind::<Text, _>(&outcome.body)
                .bind::<Text, _>(&doc.id)
                .bind::<Text, _>(&c.full_name)
                .bind::<Text, _>(&c.tax_id)
                .bind::<Text, _>(&a.street)
                .bind::<Text, _>(&a.number)
                .bind::<Text, _>(&a.state)
                .bind::<Text, _>(&a.city)
                .bind::<Text, _>(&a.locality)
                .bind::<Text, _>(&a.zip_code)
                .bind::<Nullable<Text>, _>(a.complement.as_deref())
                .bind::<Text, _>(&doc.status)
                .bind::<BigInt, _>(doc.amount)
                .bind::<BigInt, _>(doc.installments)
                .bind::<Text, _>(&p.method)
                .bind::<Text, _>(&p.card_last4)
                .bind::<Text, _>(&p.code)
                .bind::<Text, _>(plain(&p.status))
                .bind::<Text, _>(plain(&doc.risk.recommendation))
                .bind::<Timestamptz, _>(doc.created_at)
                .bind::<Text, _>(payment_key)
                .bind::<Array<Integer>, _>(positions)
                .bind::<Array<Text>, _>(names)
                .bind::<Array<BigInt>, _>(quantities)
                .bind::<Array<BigInt>, _>(values)
                .prepared_as::<statement::PERSIST_ORDER>()
                .get_result(pg)
        })
        .map_err(db_error)?;
    Ok(row.completed == 1)
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
fn with_libpq_options(
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
fn address_of(database_url: &str) -> anyhow::Result<(String, u16)> {
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

/// A `BEGIN` that failed: no transaction was opened, and a connection that cannot even begin is
/// as good as none — 503, like a failed checkout. A failure that may have lost the connection is
/// noted for the pool by `db_error`, as reactive-api's `begin_failed` does.
fn begin_failed(e: diesel::result::Error) -> ApiError {
    if connections::is_deadline(&e) {
        return db_error(e);
    }
    match db_error(e) {
        ApiError::Internal(cause) => ApiError::DatabaseUnavailable(cause),
        unavailable => unavailable,
    }
}

fn not_found_is_none<T>(e: diesel::result::Error) -> Result<Option<T>, ApiError> {
    match e {
        diesel::result::Error::NotFound => Ok(None),
        other => Err(db_error(other)),
    }
}

/// A server error is judged by its SQLSTATE (`order_core::db_failure`), never by its message
/// text. diesel hides the SQLSTATE behind its error kinds, so [`sqlstate`] gives back the code of
/// each kind it names; the others (`Unknown`: timeouts, shutdowns, deadlocks, bugs alike) are
/// judged unknown — 503, never voided — and may have lost their connection, which is noted for
/// the pool (`connections.rs`): each pooled connection then pays one ping. A call given up at
/// the client deadline is `db_failure::client_deadline`: unknown, never voided.
pub(crate) fn db_error(e: diesel::result::Error) -> ApiError {
    use diesel::result::Error;
    use order_core::db_failure::{self, DbFailure};
    if connections::is_deadline(&e) {
        // The other pooled connections may share the frozen path: each tests itself once.
        order_core::connections::note_possible_loss();
        return db_failure::client_deadline();
    }
    let judged = match &e {
        Error::DatabaseError(kind, _) => {
            let code = sqlstate(kind);
            if code.is_none_or(order_core::connections::sqlstate_may_lose) {
                order_core::connections::note_possible_loss();
            }
            db_failure::judge(code)
        }
        Error::BrokenTransactionManager => {
            order_core::connections::note_possible_loss();
            DbFailure::Transient
        }
        _ => DbFailure::Bug,
    };
    judged.into_api_error(e.into())
}

/// The SQLSTATE behind each of diesel's error kinds, as diesel chose the kind from it
/// (`diesel::pg::connection::result`); `None` for the kinds that do not name one.
fn sqlstate(kind: &diesel::result::DatabaseErrorKind) -> Option<&'static str> {
    use diesel::result::DatabaseErrorKind as Kind;
    Some(match kind {
        Kind::UniqueViolation => "23505",
        Kind::ForeignKeyViolation => "23503",
        Kind::NotNullViolation => "23502",
        Kind::CheckViolation => "23514",
        Kind::RestrictViolation => "23001",
        Kind::ExclusionViolation => "23P01",
        Kind::SerializationFailure => "40001",
        Kind::ReadOnlyTransaction => "25006",
        // diesel also reports a connection libpq found broken this way, whatever the code.
        Kind::ClosedConnection | Kind::UnableToSendCommand => "08006",
        _ => return None,
    })
}

/// A statement of `order_core::sql`, kept as a prepared statement on its connection. diesel
/// caches the statements its query builder makes, but never raw SQL (it cannot know that the
/// text is fixed), so every `sql_query` would be parsed and planned again by PostgreSQL at each
/// execution — about 0.9 ms of database CPU per order for the persist statement alone, where
/// reactive-api (sqlx prepares and caches every statement) paid nothing. The texts are constants,
/// so the cache (keyed by text and bind types) stays as small as the list of statements.
/// Overriding `is_safe_to_cache_prepared` uses the API diesel opens with its
/// `i-implement-a-third-party-backend-and-opt-into-breaking-changes` feature (enabled in the
/// workspace's Cargo.toml for this).
///
/// diesel finds a statement in that cache by its text, which it builds and hashes (SipHash, up to
/// 1.5 KB for the persist statement) at every execution — unless the query has a type of its
/// own. The order path's statements are named ([`statement`], [`Prepare::prepared_as`]), so they
/// are found by type: about 15 k instructions an order fewer (docs/benchmarks.md).
pub(crate) struct Prepared<Q, S = ByText>(Q, PhantomData<S>);

/// How diesel finds a [`Prepared`] statement in its cache: by its text ([`ByText`]), or by a
/// type named for it ([`statement`]).
pub(crate) trait Keying {
    /// `TypeId` diesel keys the statement by, when [`Keying::BY_TYPE`].
    type Id: 'static;
    const BY_TYPE: bool;
    /// The statement's text, for the debug-build check that a name is used with its own text.
    const SQL: Option<&'static str>;
}

/// Found by its text.
pub(crate) struct ByText;

impl Keying for ByText {
    type Id = ();
    const BY_TYPE: bool = false;
    const SQL: Option<&'static str> = None;
}

pub(crate) trait Prepare: Sized {
    fn prepared(self) -> Prepared<Self> {
        Prepared(self, PhantomData)
    }

    /// Prepared and found by the type `S` names it by. `S` must name this query's own text:
    /// diesel would run the statement cached under `S` whatever the text, so debug builds (every
    /// test) check it.
    fn prepared_as<S: Keying>(self) -> Prepared<Self, S>
    where
        Self: QueryFragment<Pg>,
    {
        if cfg!(debug_assertions)
            && let Some(expected) = S::SQL
        {
            let text = diesel::debug_query::<Pg, _>(&self).to_string();
            assert!(
                text.starts_with(expected),
                "statement named for another text: {text}"
            );
        }
        Prepared(self, PhantomData)
    }
}

impl<Q: QueryFragment<Pg>> Prepare for Q {}

impl<Q: QueryFragment<Pg>, S> QueryFragment<Pg> for Prepared<Q, S> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, _backend: &Pg) -> QueryResult<bool> {
        Ok(true)
    }
}

impl<Q, S: Keying> QueryId for Prepared<Q, S> {
    type QueryId = S::Id;
    const HAS_STATIC_QUERY_ID: bool = S::BY_TYPE;
}

impl<Q, S> Query for Prepared<Q, S> {
    type SqlType = Untyped;
}

impl<Q, C, S> RunQueryDsl<C> for Prepared<Q, S> {}

/// The statements of the order path, each a type named for its text (see [`Prepared`]).
#[allow(non_camel_case_types)]
pub(crate) mod statement {
    macro_rules! named {
        ($($name:ident = $sql:path;)*) => {$(
            pub(crate) struct $name;

            impl super::Keying for $name {
                type Id = $name;
                const BY_TYPE: bool = true;
                const SQL: Option<&'static str> = Some($sql);
            }
        )*};
    }

    named! {
        RESERVE_KEY = order_core::sql::RESERVE_KEY;
        FIND_KEY = order_core::sql::FIND_KEY;
        MARK_CHARGING = order_core::sql::MARK_CHARGING;
        RELEASE_KEY = order_core::sql::RELEASE_KEY;
        COMPLETE_KEY = order_core::sql::COMPLETE_KEY;
        PERSIST_ORDER = order_core::sql::PERSIST_ORDER;
        FIND_ORDER = order_core::sql::FIND_ORDER;
        PERSIST_ORDERS = order_core::batch::PERSIST_ORDERS;
    }
}

/// `sql::DURABLE_COMMIT`, before a request-scope transaction commits.
fn durable_commit(conn: &mut PgConn) -> Result<(), ApiError> {
    conn.run(|c| sql_query(sql::DURABLE_COMMIT).execute(c))
        .map(|_| ())
        .map_err(db_error)
}

#[cfg(test)]
mod tests {
    use super::{Prepare, sql, sql_query, statement};
    use diesel::sql_types::Text;

    #[test]
    fn a_statement_name_goes_with_its_own_text_only() {
        let _ = sql_query(sql::FIND_KEY)
            .bind::<Text, _>("seller")
            .bind::<Text, _>("ref")
            .prepared_as::<statement::FIND_KEY>();
        let wrong = std::panic::catch_unwind(|| {
            sql_query(sql::FIND_KEY).prepared_as::<statement::RESERVE_KEY>()
        });
        assert!(
            wrong.is_err(),
            "a name used with another text must not pass"
        );
    }

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
