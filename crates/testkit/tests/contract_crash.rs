//! The API process itself dies: `kill -9` between the charge and the commit, the API started
//! again, and recovery turns the charge into the order. The API runs as a separate process (its
//! binary, as deployed); PostgreSQL and mock-deps are the test's own. Also: the binary refuses to
//! start without a request hash key, or with a lease a healthy attempt could outlive. What a
//! SIGTERM does is `contract_rolling_deploy.rs`'s.

use std::process::Command;
use std::time::{Duration, Instant};

use mock_deps::{MockConfig, MockDeps};
use sqlx::PgPool;
use testkit::child::{ApiChild, api_command, free_port, start_api};
use testkit::{Api, TOKEN, TestDatabase, contract_tests, valid_order};

contract_tests!(
    killed_between_charge_and_commit_is_recovered_after_restart,
    refuses_to_start_without_a_hash_key_or_with_a_short_lease,
);

fn command(api: Api, db: &TestDatabase, deps: &MockDeps, port: u16) -> Command {
    api_command(api, &db.url, &deps.base_url(), port)
}

async fn start(api: Api, db: &TestDatabase, deps: &MockDeps, port: u16) -> ApiChild {
    start_api(command(api, db, deps, port), port).await
}

async fn killed_between_charge_and_commit_is_recovered_after_restart(api: Api) {
    let db = TestDatabase::new().await;
    let mut mocks = MockConfig::instant();
    // The gateway takes its time; it charges even when its client is gone, as gateways do.
    mocks.payment.latency_ms = 500;
    let deps = MockDeps::spawn(mocks).await.unwrap();
    let pool = PgPool::connect(&db.url).await.unwrap();
    let port = free_port();
    let mut first = start(api, &db, &deps, port).await;

    let body = valid_order("crash-1");
    let url = format!("http://127.0.0.1:{port}/orders");
    let request = tokio::spawn({
        let body = body.clone();
        async move {
            let client = reqwest::Client::new();
            client
                .post(url)
                .header("Authorization", TOKEN)
                .json(&body)
                .send()
                .await
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while deps.stats().payment.in_flight == 0 {
        assert!(Instant::now() < deadline, "the payment never started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Killed while the gateway charges: nothing after the charge will run in this process.
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    assert!(
        request.await.unwrap().is_err(),
        "the client lost its connection"
    );
    while deps.ledger().charges == 0 {
        assert!(Instant::now() < deadline, "the gateway never charged");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let state: String = sqlx::query_scalar("SELECT state FROM idempotency_keys")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(state, "CHARGING", "the crash left the charge to recovery");
    assert_eq!(
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM orders")
            .fetch_one(&pool)
            .await
            .unwrap(),
        0
    );

    let mut second = start(api, &db, &deps, port).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let done: String = sqlx::query_scalar("SELECT state FROM idempotency_keys")
            .fetch_one(&pool)
            .await
            .unwrap();
        if done == "COMPLETED" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "recovery never completed the key"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (payment_key, amount): (String, i64) =
        sqlx::query_as("SELECT payment_key, amount FROM orders")
            .fetch_one(&pool)
            .await
            .unwrap();
    let ledger = deps.ledger_with_detail();
    assert_eq!((ledger.charges, ledger.voids), (1, 0));
    assert_eq!(ledger.charges_by_key.unwrap()[&payment_key].amount, amount);

    let replay = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/orders"))
        .header("Authorization", TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), 201);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(deps.ledger().charges, 1);
    second.kill().unwrap();
    second.wait().unwrap();
}

async fn refuses_to_start_without_a_hash_key_or_with_a_short_lease(api: Api) {
    let db = TestDatabase::new().await;
    let deps = MockDeps::spawn(MockConfig::instant()).await.unwrap();
    let run = |cmd: &mut Command| {
        let out = cmd.output().expect("running the API");
        assert!(!out.status.success(), "it started");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let mut no_key = command(api, &db, &deps, free_port());
    no_key.env_remove("REQUEST_HASH_KEY");
    let said = run(&mut no_key);
    assert!(said.contains("REQUEST_HASH_KEY is not set"), "{said}");
    let mut short = command(api, &db, &deps, free_port());
    short.env("LEASE_MS", "2499");
    let said = run(&mut short);
    assert!(said.contains("LEASE_MS=2499"), "{said}");
}
