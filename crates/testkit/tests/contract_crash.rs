//! The API process itself dies: `kill -9` between the charge and the commit, the API started
//! again, and recovery turns the charge into the order. The API runs as a separate process (its
//! binary, as deployed); PostgreSQL and mock-deps are the test's own. Also: the binary refuses to
//! start without a request hash key, or with a lease a healthy attempt could outlive; and SIGTERM
//! drains: orders in flight finish with 201, then the process exits 0.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mock_deps::{MockConfig, MockDeps};
use sqlx::PgPool;
use testkit::{Api, TOKEN, TestDatabase, contract_tests, valid_order};

contract_tests!(
    killed_between_charge_and_commit_is_recovered_after_restart,
    refuses_to_start_without_a_hash_key_or_with_a_short_lease,
    sigterm_lets_orders_in_flight_finish_then_exits_0,
);

fn binary(api: Api) -> std::path::PathBuf {
    testbed::process::find_binary(api.binary_name())
        .expect("scripts/test.sh builds the API binaries")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

/// The API binary with a short lease and a fast recovery loop.
fn command(api: Api, db: &TestDatabase, deps: &MockDeps, port: u16) -> Command {
    let mut cmd = Command::new(binary(api));
    cmd.env_clear()
        .env("DATABASE_URL", &db.url)
        .env("DEPS_URL", deps.base_url())
        .env("BIND_ADDR", format!("127.0.0.1:{port}"))
        .env("REQUEST_HASH_KEY", "a-test-request-hash-key")
        .env("DEPS_TIMEOUT_MS", "1000")
        .env("DB_POOL_TIMEOUT_MS", "500")
        .env("LEASE_MS", "2500")
        .env("RECONCILE_INTERVAL_MS", "200")
        .env("RUST_LOG", "warn")
        // As in every contract test (see `TestApp::spawn_with`): no refusal on loop lag.
        .env("MAX_LOOP_LAG_MS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(client) = api.deps_client() {
        cmd.env("DEPS_CLIENT", client.as_str());
    }
    cmd
}

async fn start(api: Api, db: &TestDatabase, deps: &MockDeps, port: u16) -> Child {
    let mut child = command(api, db, deps, port)
        .spawn()
        .expect("starting the API");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = client
            .get(format!("http://127.0.0.1:{port}/ready"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200);
        if ready {
            return child;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the API exited at start-up"
        );
        assert!(Instant::now() < deadline, "the API never became ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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

async fn sigterm_lets_orders_in_flight_finish_then_exits_0(api: Api) {
    let db = TestDatabase::new().await;
    let mut mocks = MockConfig::instant();
    mocks.payment.latency_ms = 700; // under the binary's DEPS_TIMEOUT_MS of 1000
    let deps = MockDeps::spawn(mocks).await.unwrap();
    let pool = PgPool::connect(&db.url).await.unwrap();
    let port = free_port();
    let mut child = start(api, &db, &deps, port).await;
    let requests: Vec<_> = (0..5)
        .map(|i| {
            let url = format!("http://127.0.0.1:{port}/orders");
            let body = valid_order(&format!("drain-{i}"));
            tokio::spawn(async move {
                let r = reqwest::Client::new()
                    .post(url)
                    .header("Authorization", TOKEN)
                    .json(&body)
                    .send()
                    .await
                    .expect("an order in flight at SIGTERM is answered");
                let status = r.status().as_u16();
                (status, r.text().await.unwrap_or_default())
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    while deps.stats().payment.in_flight < 5 {
        assert!(Instant::now() < deadline, "the payments never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    // At once, the API stops saying it is ready (503 while draining, or no longer listening).
    tokio::time::sleep(Duration::from_millis(100)).await;
    let ready = reqwest::Client::new()
        .get(format!("http://127.0.0.1:{port}/ready"))
        .timeout(Duration::from_secs(2))
        .send()
        .await;
    assert!(
        !ready.as_ref().is_ok_and(|r| r.status() == 200),
        "still ready while draining: {ready:?}"
    );
    for request in requests {
        let (status, body) = request.await.unwrap();
        assert_eq!(status, 201, "{body}");
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the API did not exit after draining"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "exit status {status}");
    let orders: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&pool)
        .await
        .unwrap();
    let ledger = deps.ledger();
    assert_eq!(
        (ledger.charges, orders),
        (5, 5),
        "every charge has its order"
    );
}
