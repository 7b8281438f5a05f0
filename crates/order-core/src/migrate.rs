//! One migrations folder (`/migrations`), applied by one migrator in both APIs at start-up.
//!
//! sqlx's migrator takes a PostgreSQL advisory lock while it runs, so both APIs (or several
//! replicas) starting at once apply each migration exactly once. blocking-api uses it too — at
//! start-up only, never on its request path — rather than keeping a second migration tool.

use anyhow::Context;
use sqlx::Connection;

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// Applies the pending migrations to the database at `database_url`.
pub async fn run(database_url: &str) -> anyhow::Result<()> {
    let mut conn = sqlx::PgConnection::connect(database_url)
        .await
        .context("connecting to PostgreSQL to apply migrations")?;
    MIGRATOR
        .run(&mut conn)
        .await
        .context("applying migrations")?;
    conn.close().await.ok();
    Ok(())
}
