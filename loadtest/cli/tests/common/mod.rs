//! What the end-to-end tests of the lab share: the service binaries they need, and a database of
//! their own on the test server.

use sqlx::Connection;

/// `Err` naming the first service binary not built.
pub fn binaries_present() -> Result<(), String> {
    for name in ["blocking-api", "reactive-api", "mock-deps"] {
        labkit::process::find_binary(name).map_err(|e| format!("{e:#}"))?;
    }
    Ok(())
}

/// A fresh database `<prefix>_<pid>` on the test server: `(url, admin url, name)`.
pub async fn own_database(server: &str, prefix: &str) -> (String, String, String) {
    let name = format!("{prefix}_{}", std::process::id());
    let mut conn = sqlx::PgConnection::connect(server)
        .await
        .expect("TEST_DATABASE_URL reachable");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name}"
    )))
    .execute(&mut conn)
    .await
    .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .unwrap();
    let base = server.rsplit_once('/').map_or(server, |(b, _)| b);
    (format!("{base}/{name}"), server.to_owned(), name)
}

/// Drops a database made by [`own_database`] (connections and all).
pub async fn drop_database(server: &str, name: &str) {
    let mut conn = sqlx::PgConnection::connect(server).await.unwrap();
    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&mut conn)
    .await;
}
