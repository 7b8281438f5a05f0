//! Rolling upgrades and rollbacks: a release starts against a database a newer release migrated
//! (its unknown migrations are logged, not fatal), and a start-up whose migration lock is held by
//! another session fails within `MIGRATION_LOCK_WAIT_MS`, naming the holder, instead of hanging
//! before its port is bound.

use std::time::{Duration, Instant};

use mock_deps::{MockConfig, MockDeps};
use order_core::settings::CommonSettings;
use sqlx::{Connection, PgConnection};
use testkit::{Api, TOKEN, TestDatabase, build, contract_tests, valid_order};

contract_tests!(
    a_release_starts_against_a_database_migrated_by_a_newer_one,
    a_held_migration_lock_fails_the_start_within_its_bound,
);

async fn a_release_starts_against_a_database_migrated_by_a_newer_one(api: Api) {
    let db = TestDatabase::new().await;
    let mut conn = PgConnection::connect(&db.url).await.unwrap();
    // What a newer release leaves behind: an applied migration this binary has never heard of.
    sqlx::query(
        "INSERT INTO _sqlx_migrations \
         (version, description, success, checksum, execution_time) \
         VALUES (29991231000001, 'from a newer release', true, '\\x00', 1)",
    )
    .execute(&mut conn)
    .await
    .expect("recording a newer migration");
    let deps = MockDeps::spawn(MockConfig::instant()).await.unwrap();
    let port = build(api, CommonSettings::new(&db.url, deps.base_url()))
        .await
        .unwrap_or_else(|e| {
            panic!("{api:?} refused a database migrated by a newer release: {e:#}")
        });
    let response = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/orders"))
        .header("Authorization", TOKEN)
        .json(&valid_order("newer-db-1"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
}

async fn a_held_migration_lock_fails_the_start_within_its_bound(api: Api) {
    let db = TestDatabase::new().await;
    let mut holder = PgConnection::connect(&db.url).await.unwrap();
    let lock_id = order_core::migrate::advisory_lock_id(db.name());
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(lock_id)
        .execute(&mut holder)
        .await
        .unwrap();
    let deps = MockDeps::spawn(MockConfig::instant()).await.unwrap();
    let mut settings = CommonSettings::new(&db.url, deps.base_url());
    settings.migration_lock_wait_ms = 1000;
    let started = Instant::now();
    let outcome = tokio::time::timeout(Duration::from_secs(20), build(api, settings)).await;
    let elapsed = started.elapsed();
    let error = match outcome {
        Err(_) => panic!("{api:?} still waiting for the migration lock after 20 s"),
        Ok(Ok(_)) => panic!("{api:?} started while another session held the migration lock"),
        Ok(Err(e)) => format!("{e:#}"),
    };
    assert!(
        elapsed < Duration::from_secs(5),
        "gave up after {elapsed:?}"
    );
    assert!(error.contains("migration lock"), "{error}");
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut holder)
        .await
        .unwrap();
    assert!(
        error.contains(&format!("pid {pid}")),
        "the holder is named: {error}"
    );
}
