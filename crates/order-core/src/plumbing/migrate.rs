//! One migrations folder (`/migrations`), applied by one migrator in both APIs at start-up.
//!
//! Several replicas (and both APIs) may start at once: the migrator runs under a PostgreSQL
//! advisory lock, so each migration is applied exactly once. It is the lock sqlx's own migrator
//! takes ([`advisory_lock_id`]), so a release that still lets sqlx lock excludes this one too;
//! but it is taken here with `pg_try_advisory_lock` and a bound (`MIGRATION_LOCK_WAIT_MS`), naming
//! the session that holds it while it waits, instead of sqlx's `pg_advisory_lock`, which waits for
//! ever and says nothing — a start-up that hangs before its port is bound.
//!
//! Rolling upgrades and rollbacks: a database migrated by a newer release holds migrations this
//! binary does not know. They are logged and left alone (sqlx's `ignore_missing`); migrations are
//! written to be compatible with the release before them (added columns and tables, nothing
//! renamed or dropped in the same release), so the older binary still runs against them.
//!
//! The migration statements run with `lock_timeout` = `DB_STATEMENT_TIMEOUT_MS`: an `ALTER TABLE`
//! that queues for its lock behind a long transaction would queue every request behind it; it
//! fails instead, and the start-up with it, to be retried. No `statement_timeout`: a migration that
//! works (a backfill, an index) may take longer than a request's statement.
//!
//! blocking-api uses this migrator too — at start-up only, never on its request path — rather than
//! keeping a second migration tool.

use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::migrate::{Migrate, Migrator};
use sqlx::{Connection, PgConnection};

use crate::plumbing::settings::CommonSettings;

/// How the migrator waits: for the advisory lock, and for a table's lock in a migration.
#[derive(Debug, Clone, Copy)]
pub struct MigrateOptions {
    /// Longest wait for the migration lock before the start-up fails.
    pub lock_wait: Duration,
    /// `lock_timeout` of the migration statements; zero leaves PostgreSQL's (unbounded).
    pub lock_timeout: Duration,
    /// Longest wait for the migrator's connection (`DB_POOL_TIMEOUT_MS`, the pools' own bound).
    pub connect_timeout: Duration,
}

impl MigrateOptions {
    pub fn from_settings(s: &CommonSettings) -> Self {
        MigrateOptions {
            lock_wait: Duration::from_millis(s.migration_lock_wait_ms),
            lock_timeout: Duration::from_millis(s.db_statement_timeout_ms),
            connect_timeout: s.db_pool_timeout(),
        }
    }
}

impl Default for MigrateOptions {
    /// The settings' defaults.
    fn default() -> Self {
        Self::from_settings(&CommonSettings::new("", ""))
    }
}

/// The migrations, in the form this module runs them: unknown applied versions ignored, and no
/// lock of sqlx's own (the lock is [`run`]'s).
fn migrator() -> Migrator {
    let mut migrator = sqlx::migrate!("../../migrations");
    migrator.set_ignore_missing(true).set_locking(false);
    migrator
}

/// The key of the advisory lock the migrator holds on the database named `database`: sqlx's
/// (`0x3d32ad9e` × the CRC-32 of the name), so that any sqlx migrator excludes this one.
pub fn advisory_lock_id(database: &str) -> i64 {
    0x3d32ad9e * i64::from(crc32fast::hash(database.as_bytes()))
}

/// How often a waiting migrator says again what it waits for.
const WAIT_LOG_EVERY: Duration = Duration::from_secs(5);
/// The pause between two tries of the lock.
const RETRY_EVERY: Duration = Duration::from_millis(100);

/// Applies the pending migrations to the database at `database_url`.
pub async fn run(database_url: &str, options: MigrateOptions) -> anyhow::Result<()> {
    let mut conn = connect_within(database_url, options.connect_timeout)
        .await
        .context("connecting to PostgreSQL to apply migrations")?;
    if !options.lock_timeout.is_zero() {
        sqlx::query("SELECT set_config('lock_timeout', $1, false)")
            .bind(options.lock_timeout.as_millis().to_string())
            .execute(&mut conn)
            .await
            .context("setting the migrations' lock_timeout")?;
    }
    let database: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&mut conn)
        .await
        .context("reading the database's name")?;
    let lock_id = advisory_lock_id(&database);
    take_lock(&mut conn, &database, lock_id, options.lock_wait).await?;
    let applied = apply(&mut conn).await;
    let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(lock_id)
        .execute(&mut conn)
        .await;
    applied?;
    unlocked.context("releasing the migration lock")?;
    conn.close().await.ok();
    Ok(())
}

/// A connection for the start-up's own work, opened within `bound`. sqlx's `PgConnection::connect`
/// has no bound of its own (its pools bound it with their acquire timeout): a connection whose
/// handshake is lost — a SYN dropped while a container network is being set up, a peer that
/// accepts and never answers — left the process waiting for ever before its port was bound, alive
/// and never ready, where a failed start is restarted.
pub(crate) async fn connect_within(
    database_url: &str,
    bound: Duration,
) -> anyhow::Result<PgConnection> {
    match tokio::time::timeout(bound, PgConnection::connect(database_url)).await {
        Ok(connected) => Ok(connected?),
        Err(_) => anyhow::bail!(
            "no connection within DB_POOL_TIMEOUT_MS={} ms",
            bound.as_millis()
        ),
    }
}

/// Logs the applied migrations this binary does not know (a newer release's), then applies its own.
async fn apply(conn: &mut PgConnection) -> anyhow::Result<()> {
    let migrator = migrator();
    conn.ensure_migrations_table(&migrator.table_name)
        .await
        .context("creating the migrations table")?;
    let known: std::collections::HashSet<i64> = migrator.iter().map(|m| m.version).collect();
    let applied = conn
        .list_applied_migrations(&migrator.table_name)
        .await
        .context("listing the applied migrations")?;
    for unknown in applied.iter().filter(|m| !known.contains(&m.version)) {
        tracing::warn!(
            version = unknown.version,
            "the database holds a migration this release does not know (applied by a newer \
             release); it is left as it is"
        );
    }
    migrator
        .run(&mut *conn)
        .await
        .context("applying migrations")
}

/// Takes the migration lock within `wait`, saying every few seconds which session holds it.
async fn take_lock(
    conn: &mut PgConnection,
    database: &str,
    lock_id: i64,
    wait: Duration,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut last_log: Option<Instant> = None;
    loop {
        let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(lock_id)
            .fetch_one(&mut *conn)
            .await
            .context("trying the migration lock")?;
        if taken {
            return Ok(());
        }
        let holder = lock_holder(conn, lock_id).await;
        if started.elapsed() >= wait {
            anyhow::bail!(
                "the migration lock (advisory lock {lock_id} on database {database:?}) is held by \
                 {holder}; gave up after MIGRATION_LOCK_WAIT_MS={} ms. Another instance may be \
                 migrating (then a restart succeeds once it is done), or a session holds the lock \
                 without migrating: end it (pg_terminate_backend)",
                wait.as_millis()
            );
        }
        if last_log.is_none_or(|t| t.elapsed() >= WAIT_LOG_EVERY) {
            tracing::warn!(
                lock_id,
                database,
                holder = %holder,
                waited_ms = started.elapsed().as_millis() as u64,
                limit_ms = wait.as_millis() as u64,
                "waiting for the migration lock"
            );
            last_log = Some(Instant::now());
        }
        tokio::time::sleep(RETRY_EVERY).await;
    }
}

/// A session holding the lock: pid, application name, state, client address, connected since.
type Holder = (i32, String, String, String, String);

/// Who holds the advisory lock `lock_id`, as a line for the log (best effort).
async fn lock_holder(conn: &mut PgConnection, lock_id: i64) -> String {
    // A bigint advisory key is stored as classid (high 32 bits) and objid (low 32 bits).
    let sql = "SELECT a.pid, coalesce(a.application_name, ''), coalesce(a.state, ''), \
               coalesce(a.client_addr::text, 'local'), \
               coalesce(a.backend_start::text, '') \
               FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
               WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
               AND l.classid::bigint = (($1 >> 32) & 4294967295) \
               AND l.objid::bigint = ($1 & 4294967295)";
    let row: Result<Option<Holder>, _> = sqlx::query_as(sql)
        .bind(lock_id)
        .fetch_optional(&mut *conn)
        .await;
    match row {
        Ok(Some((pid, app, state, client, since))) => format!(
            "pid {pid} (application {app:?}, client {client}, state {state:?}, connected since \
             {since})"
        ),
        Ok(None) => "a session that just let it go".to_owned(),
        Err(e) => format!("a session this one cannot see ({e})"),
    }
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_database_that_accepts_and_never_answers_fails_the_start_within_its_bound() {
        // The kernel completes the handshake for a listener nobody accepts from: the startup
        // message is sent and no answer ever comes.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("postgres://lab:lab@{}/orders", silent.local_addr().unwrap());
        let bound = std::time::Duration::from_millis(300);
        let options = super::MigrateOptions {
            connect_timeout: bound,
            ..Default::default()
        };
        let outcome = tokio::time::timeout(bound * 10, super::run(&url, options)).await;
        let error = outcome
            .expect("the start-up waited past its bound")
            .unwrap_err();
        assert_eq!(
            format!("{error:#}"),
            "connecting to PostgreSQL to apply migrations: no connection within \
             DB_POOL_TIMEOUT_MS=300 ms"
        );
    }

    #[test]
    fn the_lock_is_sqlx_migrators_own() {
        // sqlx-postgres' generate_lock_id("postgres"): 0x3d32ad9e × crc32("postgres").
        assert_eq!(super::advisory_lock_id("postgres"), 368_907_709_894_077_238);
    }
}
