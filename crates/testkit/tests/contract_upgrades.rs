//! Rolling upgrades and rollbacks: a release starts against a database a newer release migrated
//! (its unknown migrations are logged, not fatal), and a start-up whose migration lock is held by
//! another session fails within `MIGRATION_LOCK_WAIT_MS`, naming the holder, instead of hanging
//! before its port is bound; so does a migration that waits for a table's lock, within its
//! `lock_timeout`. Recovery never voids a charge because this release cannot read its
//! pending order (a newer release's): the key waits, counted and logged, for a release that can.

use std::time::{Duration, Instant};

use mock_deps::{MockConfig, MockDeps};
use order_core::domain::contract::CreateOrderRequest;
use order_core::domain::order::PendingOrder;
use order_core::domain::request_hash::RequestHashKey;
use order_core::plumbing::settings::CommonSettings;
use sqlx::{Connection, PgConnection};
use testkit::{
    Api, StubGateway, TOKEN, TestApp, TestDatabase, build, contract_tests, eventually,
    fast_recovery, valid_order,
};

contract_tests!(
    a_release_starts_against_a_database_migrated_by_a_newer_one,
    a_held_migration_lock_fails_the_start_within_its_bound,
    a_migration_behind_a_held_table_lock_fails_the_start_within_the_lock_timeout,
    a_pending_order_this_release_cannot_read_is_deferred_never_voided,
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
    let lock_id = order_core::plumbing::migrate::advisory_lock_id(db.name());
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

/// A migration that must wait for a table's lock (a long query holds it) gives up after
/// `lock_timeout` = `DB_STATEMENT_TIMEOUT_MS` and fails the start, saying so, rather than queue
/// every request for that table behind its own wait; the next start, the query gone, applies it.
async fn a_migration_behind_a_held_table_lock_fails_the_start_within_the_lock_timeout(api: Api) {
    let db = TestDatabase::new().await;
    let mut conn = PgConnection::connect(&db.url).await.unwrap();
    // The last migration, not yet applied: its ALTER TABLE needs idempotency_keys to itself.
    for undo in [
        "ALTER TABLE idempotency_keys DROP COLUMN unreadable_since",
        "DELETE FROM _sqlx_migrations WHERE description = 'unreadable pending'",
    ] {
        let done = sqlx::query(undo).execute(&mut conn).await.unwrap();
        assert!(
            undo.starts_with("ALTER") || done.rows_affected() == 1,
            "{undo}"
        );
    }
    // A long query's lock, held in an open transaction.
    let mut reader = PgConnection::connect(&db.url).await.unwrap();
    let mut query = sqlx::Connection::begin(&mut reader).await.unwrap();
    sqlx::query("SELECT count(*) FROM idempotency_keys")
        .execute(&mut *query)
        .await
        .unwrap();
    let deps = MockDeps::spawn(MockConfig::instant()).await.unwrap();
    let mut settings = CommonSettings::new(&db.url, deps.base_url());
    settings.db_statement_timeout_ms = 1000;
    let started = Instant::now();
    let outcome = tokio::time::timeout(Duration::from_secs(20), build(api, settings.clone())).await;
    let elapsed = started.elapsed();
    let error = match outcome {
        Err(_) => panic!("{api:?}'s migration still waiting for a table lock after 20 s"),
        Ok(Ok(_)) => panic!("{api:?} started while its migration could not have run"),
        Ok(Err(e)) => format!("{e:#}"),
    };
    assert!(
        elapsed < Duration::from_secs(5),
        "gave up after {elapsed:?}"
    );
    assert!(error.contains("lock timeout"), "{error}");
    query.rollback().await.unwrap();
    build(api, settings)
        .await
        .unwrap_or_else(|e| panic!("{api:?} did not start once the lock was free: {e:#}"));
    let applied: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM information_schema.columns \
         WHERE table_name = 'idempotency_keys' AND column_name = 'unreadable_since')",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert!(applied, "the migration was not applied on the next start");
}

/// The pending order `valid_order(reference_id)` makes, as this release stores it (JSON).
fn pending_order(reference_id: &str) -> serde_json::Value {
    let body = serde_json::to_vec(&valid_order(reference_id)).unwrap();
    let order = CreateOrderRequest::parse(&body)
        .unwrap()
        .validate(&RequestHashKey::development())
        .unwrap();
    serde_json::from_str(&PendingOrder::new("acme", &order).to_json()).unwrap()
}

async fn key_row(app: &TestApp, reference_id: &str) -> (String, i32) {
    sqlx::query_as("SELECT state, deferrals FROM idempotency_keys WHERE reference_id = $1")
        .bind(reference_id)
        .fetch_one(&app.pool)
        .await
        .expect("the key")
}

async fn a_pending_order_this_release_cannot_read_is_deferred_never_voided(api: Api) {
    // The gateway charged every key (the charge is live): only the pending order can make it.
    let charged =
        serde_json::json!({"status": "SUCCESS", "amount": 15000, "code": "c-1", "charged": true});
    let stub = StubGateway::start(200, charged, Duration::ZERO).await;
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        fast_recovery(s);
        s.deps_url = stub.url().to_owned();
    })
    .await;
    // What a newer release leaves in CHARGING: a field this one does not know, and a field this
    // one needs that the newer one no longer writes.
    let mut newer = pending_order("newer-1");
    newer["gift_wrap"] = true.into();
    let mut without = pending_order("newer-2");
    without.as_object_mut().unwrap().remove("installments");
    for (reference_id, pending) in [("newer-1", &newer), ("newer-2", &without)] {
        sqlx::query(
            "INSERT INTO idempotency_keys (seller_id, reference_id, request_hash, state, attempt, \
             lease_expires_at, gateway_key, amount, pending_order) \
             VALUES ('acme', $1, 'h', 'CHARGING', 1, now() - interval '1 second', $2, 15000, $3)",
        )
        .bind(reference_id)
        .bind(format!("acme:{reference_id}:k:1"))
        .bind(pending.to_string())
        .execute(&app.pool)
        .await
        .unwrap();
    }
    eventually(20, "recovery to count both keys as unreadable", || async {
        app.metric("recovery_unreadable_deferred").await == Some(2.0)
    })
    .await;
    // Tried again after its back-off (1 s, then 2 s), never voided, never made into an order.
    eventually(20, "a second deferral", || async {
        key_row(&app, "newer-1").await.1 >= 2
    })
    .await;
    assert_eq!(
        stub.voids(),
        0,
        "a charge was voided for an unreadable pending order"
    );
    assert_eq!(key_row(&app, "newer-1").await.0, "CHARGING");
    assert_eq!(key_row(&app, "newer-2").await.0, "CHARGING");
    assert_eq!(app.count("orders").await, 0);
    // The same request's retry is told to come back, not answered 500.
    let retry = app.post_order(TOKEN, &valid_order("newer-1")).await;
    assert_ne!(retry.status(), 500, "{}", retry.text().await.unwrap());

    // A release that can read it: here, the pending order as this release writes it.
    sqlx::query("UPDATE idempotency_keys SET pending_order = $2 WHERE reference_id = $1")
        .bind("newer-1")
        .bind(pending_order("newer-1").to_string())
        .execute(&app.pool)
        .await
        .unwrap();
    eventually(30, "the readable key to become its order", || async {
        key_row(&app, "newer-1").await.0 == "COMPLETED"
    })
    .await;
    assert_eq!(app.count("orders").await, 1);
    eventually(20, "the gauge to drop to the one key left", || async {
        app.metric("recovery_unreadable_deferred").await == Some(1.0)
    })
    .await;
    assert_eq!(stub.voids(), 0);
}
