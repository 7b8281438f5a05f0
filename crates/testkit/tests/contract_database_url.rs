//! The API's own bound on a database call (`DB_STATEMENT_TIMEOUT_MS` + `DB_CLIENT_MARGIN_MS`)
//! holds however `DATABASE_URL` names the server: with the server named by `PGHOST`/`PGPORT`
//! (a URL without a host) a frozen path is still answered 503 `database_unavailable` within the
//! bound; a URL that names several servers refuses to start, saying so. The `PGHOST` case runs
//! the API as a separate process (its binary, with that environment).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mock_deps::{MockConfig, MockDeps};
use order_core::plumbing::settings::CommonSettings;
use testbed::proxy::{LatencyProxy, upstream_of};
use testkit::child::{ApiChild, binary, start_api};
use testkit::{Api, TOKEN, TestDatabase, contract_tests, valid_order};

contract_tests!(
    a_server_named_by_pghost_gets_the_client_deadline,
    a_url_naming_several_servers_refuses_to_start_saying_so,
);

const STATEMENT_TIMEOUT_MS: u64 = 1000;
const CLIENT_MARGIN_MS: u64 = 500;
const POOL_TIMEOUT_MS: u64 = 500;
/// Scheduling on a shared test machine.
const SLACK: Duration = Duration::from_millis(1500);

/// The API binary on `port`, with `DATABASE_URL=postgres:///<database>` and the server (here,
/// `relay`) named by libpq's environment variables only.
async fn start_with_pghost(
    api: Api,
    db: &TestDatabase,
    relay: &LatencyProxy,
    deps: &MockDeps,
    port: u16,
) -> ApiChild {
    let url = reqwest::Url::parse(&db.url).unwrap();
    let mut cmd = Command::new(binary(api));
    cmd.env_clear()
        .env("DATABASE_URL", format!("postgres:///{}", db.name()))
        .env("PGHOST", relay.local_addr().ip().to_string())
        .env("PGPORT", relay.local_addr().port().to_string())
        .env("PGUSER", url.username())
        .env("DEPS_URL", deps.base_url())
        .env("BIND_ADDR", format!("127.0.0.1:{port}"))
        .env("APP_ENV", "development")
        .env("DB_STATEMENT_TIMEOUT_MS", STATEMENT_TIMEOUT_MS.to_string())
        .env("DB_CLIENT_MARGIN_MS", CLIENT_MARGIN_MS.to_string())
        .env("DB_POOL_TIMEOUT_MS", POOL_TIMEOUT_MS.to_string())
        // As in every contract test (see `TestApp::spawn_with`): no refusal on loop lag.
        .env("MAX_LOOP_LAG_MS", "0")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    if let Some(password) = url.password() {
        cmd.env("PGPASSWORD", password);
    }
    if let Some(client) = api.deps_client() {
        cmd.env("DEPS_CLIENT", client.as_str());
    }
    start_api(cmd, port).await
}

/// Posts an order; its status and error code, failing the test if no answer comes within
/// `bound` (and a few seconds more).
async fn order(port: u16, reference: &str, bound: Duration) -> (u16, String, Duration) {
    let started = Instant::now();
    let send = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/orders"))
        .header("Authorization", TOKEN)
        .json(&valid_order(reference))
        .send();
    let Ok(answer) = tokio::time::timeout(bound + Duration::from_secs(5), send).await else {
        panic!("{reference}: no answer within {:?}", started.elapsed());
    };
    let response = answer.unwrap();
    let status = response.status().as_u16();
    let took = started.elapsed();
    let json: serde_json::Value = response.json().await.unwrap_or_default();
    (
        status,
        json["error"].as_str().unwrap_or_default().to_owned(),
        took,
    )
}

async fn a_server_named_by_pghost_gets_the_client_deadline(api: Api) {
    let db = TestDatabase::new().await;
    let deps = MockDeps::spawn(MockConfig::instant()).await.unwrap();
    let relay = LatencyProxy::freezable(upstream_of(&db.url).unwrap()).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let _api = start_with_pghost(api, &db, &relay, &deps, port).await;
    let bound =
        Duration::from_millis(POOL_TIMEOUT_MS + STATEMENT_TIMEOUT_MS + CLIENT_MARGIN_MS) + SLACK;
    let (status, code, _) = order(port, "before-freeze", bound).await;
    assert_eq!(status, 201, "{code}");

    relay.set_frozen(true);
    let (status, code, took) = order(port, "frozen", bound).await;
    assert_eq!((status, code.as_str()), (503, "database_unavailable"));
    assert!(took <= bound, "answered after {took:?}, bound {bound:?}");
    relay.set_frozen(false);
}

async fn a_url_naming_several_servers_refuses_to_start_saying_so(api: Api) {
    let db = TestDatabase::new().await;
    let upstream = upstream_of(&db.url).unwrap();
    let url = reqwest::Url::parse(&db.url).unwrap();
    let user = url.username();
    let name = db.name();
    // The first server refuses at once: libpq would go on to the second, a live one.
    for several in [
        format!("postgres://{user}@127.0.0.1:1,{upstream}/{name}"),
        format!(
            "postgres://{user}@/{name}?host=127.0.0.1,{}&port=1,{}",
            upstream.ip(),
            upstream.port()
        ),
    ] {
        let mut common = CommonSettings::new(several.clone(), "http://127.0.0.1:9");
        common.max_loop_lag_ms = 0;
        let Err(refused) = testkit::build(api, common).await else {
            panic!("{api:?} started with {several}");
        };
        let refused = format!("{refused:#}");
        assert!(
            refused.contains("DATABASE_URL names several database servers"),
            "{several}: {refused}"
        );
    }
}
