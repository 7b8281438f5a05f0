//! The environment the bench gives each API, written out in full.

use super::*;
use crate::api_env::map_of as map;
use clap::Parser;

fn args(extra: &[&str]) -> BenchArgs {
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }
    Cli::parse_from(["bench"].iter().chain(extra)).bench
}

/// What every API of a default bench gets, admission control off.
const DEFAULT_CELL: &[(&str, &str)] = &[
    ("DB_POOL_SIZE", "100"),
    ("DB_POOL_TIMEOUT_MS", "5000"),
    ("DB_STATEMENT_TIMEOUT_MS", "5000"),
    ("DB_TX_SCOPE", "short"),
    ("DEPS_HTTP", "http1"),
    ("DEPS_TIMEOUT_MS", "10000"),
    ("HTTP_WORKERS", "1"),
    ("LEASE_MS", "30000"),
    ("MAX_IN_FLIGHT", "0"),
    ("MAX_LOOP_LAG_MS", "0"),
    ("QUEUE_TIMEOUT_MS", "100"),
    ("RECONCILE_INTERVAL_MS", "5000"),
    ("REQUEST_DEADLINE_MS", "3600000"),
];

#[test]
fn a_default_cell_gives_both_apis_the_same_settings_and_blocking_api_its_threads() {
    let args = args(&[]);
    assert_eq!(
        common_settings(&args, Some(ApiKind::Reactive)).to_env(),
        map(DEFAULT_CELL)
    );
    let mut blocking = map(DEFAULT_CELL);
    blocking.insert("BLOCKING_THREADS".to_owned(), "200".to_owned());
    blocking.insert("DEPS_CLIENT".to_owned(), "ureq".to_owned());
    assert_eq!(
        common_settings(&args, Some(ApiKind::Blocking)).to_env(),
        blocking
    );
    // The settings bench.json records: the blocking API's included.
    assert_eq!(common_settings(&args, None).to_env(), blocking);

    let mut env = blocking.clone();
    for (k, v) in [
        ("DEPS_URL", "http://127.0.0.1:9191"),
        ("DATABASE_URL", "postgres://lab@127.0.0.1:5999/orders"),
        ("REQUEST_HASH_KEY", "order-lab-load-test-request-hash-key"),
    ] {
        env.insert(k.to_owned(), v.to_owned());
    }
    assert_eq!(
        api_settings(&args, "http://127.0.0.1:9191", ApiKind::Blocking)
            .env_at("postgres://lab@127.0.0.1:5999/orders"),
        env
    );
}

#[test]
fn the_bench_flags_reach_the_apis_settings() {
    let args = args(&[
        "--db-pool-size",
        "20",
        "--blocking-threads",
        "64",
        "--deps-http",
        "h2c",
        "--blocking-client",
        "reqwest-blocking",
    ]);
    let mut blocking = map(DEFAULT_CELL);
    for (k, v) in [
        ("DB_POOL_SIZE", "20"),
        ("BLOCKING_THREADS", "64"),
        ("DEPS_HTTP", "h2c"),
        ("DEPS_CLIENT", "reqwest-blocking"),
    ] {
        blocking.insert(k.to_owned(), v.to_owned());
    }
    assert_eq!(
        common_settings(&args, Some(ApiKind::Blocking)).to_env(),
        blocking
    );
}
