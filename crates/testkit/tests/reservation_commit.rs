//! The reservation's commit does not wait for its WAL flush, and nothing after it inherits that:
//! `sql::RESERVE_KEY` sets `synchronous_commit = off` for its own transaction only, and
//! `sql::DURABLE_COMMIT` (sent before a request-scope transaction commits) sets it back to the
//! session's default. Checked on the statements themselves, both APIs running the same text; the
//! session starts with `synchronous_commit = on` (the test server's default is off).

use order_core::domain::sql;
use sqlx::{ConnectOptions, Connection, PgConnection, Row};
use testkit::TestDatabase;

async fn durable_session(db: &TestDatabase) -> PgConnection {
    let options: sqlx::postgres::PgConnectOptions = db.url.parse().expect("the test URL parses");
    options
        .options([("synchronous_commit", "on")])
        .connect()
        .await
        .expect("connecting to the test database")
}

async fn synchronous_commit(conn: &mut PgConnection) -> String {
    sqlx::query("SHOW synchronous_commit")
        .fetch_one(&mut *conn)
        .await
        .expect("SHOW synchronous_commit")
        .get(0)
}

async fn reserve(conn: &mut PgConnection, reference_id: &str) -> i32 {
    sqlx::query(sql::RESERVE_KEY)
        .bind("seller-1")
        .bind(reference_id)
        .bind("hash")
        .bind(30.0_f64)
        .fetch_one(&mut *conn)
        .await
        .expect("the key is free")
        .get("attempt")
}

#[tokio::test]
async fn the_reservation_commits_without_waiting_and_leaves_the_session_durable() {
    let db = TestDatabase::new().await;
    let mut conn = durable_session(&db).await;
    // Inside a transaction block the setting can be seen before the commit that reads it.
    let mut tx = conn.begin().await.unwrap();
    assert_eq!(reserve(&mut tx, "seen").await, 1);
    assert_eq!(synchronous_commit(&mut tx).await, "off");
    // What a request-scope transaction sends before its COMMIT: durable again.
    sqlx::raw_sql(sql::DURABLE_COMMIT)
        .execute(&mut *tx)
        .await
        .unwrap();
    assert_eq!(synchronous_commit(&mut tx).await, "on");
    tx.commit().await.unwrap();
    // In autocommit (short scope) the setting ends with the reservation's own transaction.
    assert_eq!(reserve(&mut conn, "autocommit").await, 1);
    assert_eq!(synchronous_commit(&mut conn).await, "on");
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM idempotency_keys")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(kept, 2, "both reservations committed");
}
