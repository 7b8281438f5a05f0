//! Every name [`ApiSettings::to_env`] writes is one the APIs read, with a value they accept: the
//! environment is read back by order-core's own settings parser.

use super::*;
use clap::{CommandFactory, FromArgMatches, Parser};
use order_core::plumbing::settings::CommonSettings;

#[derive(Parser)]
struct Product {
    #[command(flatten)]
    settings: CommonSettings,
}

/// Every setting stated, none at a product default.
fn all_stated() -> ApiSettings {
    ApiSettings {
        deps_url: Some("http://127.0.0.1:9191".to_owned()),
        db_pool_size: 7,
        db_pool_timeout_ms: 1500,
        deps_timeout_ms: 2500,
        deps_http: Some(DepsHttp::H2c),
        http_workers: 2,
        db_tx_scope: Some(TxScope::Short),
        lease_ms: 40_000,
        reconcile_interval_ms: 700,
        persist_batch: Some(PersistBatch { max: 3, wait_ms: 9 }),
        queue_timeout_ms: Some(50),
        request_deadline_ms: Some(70_000),
        db_statement_timeout_ms: Some(0),
        max_loop_lag_ms: 8,
        max_in_flight: Some(0),
        events: Some(EventsEnv {
            mode: EventsMode::Outbox,
            nats_url: "nats://127.0.0.1:4333".to_owned(),
            nats_timeout_ms: 5000,
        }),
        blocking_threads: Some(64),
        deps_client: Some(DepsClient::ReqwestBlocking),
    }
}

/// The environment as order-core's command line: each variable as the flag that reads it.
fn parsed_by_the_product(env: &BTreeMap<String, String>) -> CommonSettings {
    let command = Product::command();
    let mut argv = vec!["api".to_owned()];
    for (name, value) in env {
        let arg = command
            .get_arguments()
            .find(|a| a.get_env().is_some_and(|e| e == name.as_str()))
            .unwrap_or_else(|| panic!("{name} is not a setting of order_core::plumbing::settings"));
        argv.push(format!("--{}={value}", arg.get_long().unwrap()));
    }
    let matches = command.try_get_matches_from(&argv).unwrap();
    CommonSettings::from_arg_matches(&matches).unwrap()
}

#[test]
fn every_setting_the_lab_states_is_read_by_the_apis_as_stated() {
    let s = all_stated();
    let mut env = s.env_at("postgres://lab@127.0.0.1:5999/orders");
    // blocking-api's own, beside the common ones (blocking-api/src/startup.rs).
    assert_eq!(env.remove("BLOCKING_THREADS").as_deref(), Some("64"));
    let client = env.remove("DEPS_CLIENT").expect("DEPS_CLIENT stated");
    assert_eq!(
        <DepsClient as clap::ValueEnum>::from_str(&client, false),
        Ok(DepsClient::ReqwestBlocking),
        "DEPS_CLIENT={client} is not a value blocking-api reads"
    );
    let p = parsed_by_the_product(&env);
    assert_eq!(p.database_url, "postgres://lab@127.0.0.1:5999/orders");
    assert_eq!(p.deps_url, "http://127.0.0.1:9191");
    assert_eq!(p.request_hash_key.as_deref(), Some(LAB_REQUEST_HASH_KEY));
    assert_eq!(
        (p.db_pool_size, p.db_pool_timeout_ms, p.deps_timeout_ms),
        (7, 1500, 2500)
    );
    assert_eq!((p.deps_http, p.http_workers), (DepsHttp::H2c, 2));
    assert_eq!(p.db_tx_scope, TxScope::Short);
    assert_eq!((p.lease_ms, p.reconcile_interval_ms), (40_000, 700));
    assert_eq!((p.persist_batch_max, p.persist_batch_wait_ms), (3, 9));
    assert_eq!(
        (
            p.queue_timeout_ms,
            p.request_deadline_ms,
            p.db_statement_timeout_ms
        ),
        (50, 70_000, 0)
    );
    assert_eq!((p.max_loop_lag_ms, p.max_in_flight), (8, Some(0)));
    assert_eq!(p.events.events_mode, EventsMode::Outbox);
    assert_eq!(p.events.nats_url, "nats://127.0.0.1:4333");
    assert_eq!(p.events.nats_timeout_ms, 5000);
}

#[test]
fn a_setting_left_unstated_is_not_in_the_environment() {
    let s = ApiSettings {
        deps_url: None,
        deps_http: None,
        db_tx_scope: None,
        persist_batch: None,
        queue_timeout_ms: None,
        request_deadline_ms: None,
        db_statement_timeout_ms: None,
        max_in_flight: None,
        events: None,
        blocking_threads: None,
        deps_client: None,
        ..all_stated()
    };
    let names: Vec<String> = s.to_env().into_keys().collect();
    assert_eq!(
        names,
        [
            "DB_POOL_SIZE",
            "DB_POOL_TIMEOUT_MS",
            "DEPS_TIMEOUT_MS",
            "HTTP_WORKERS",
            "LEASE_MS",
            "MAX_LOOP_LAG_MS",
            "RECONCILE_INTERVAL_MS"
        ]
    );
}
