//! The environment the lab gives each API, written out in full: a setting that changes name or
//! value, or appears or goes, shows here.

use super::*;
use crate::api_env::map_of as map;

/// A lab of `args` with its own PostgreSQL (`lab_owned_database`) and mock-deps at
/// `http://127.0.0.1:9191`, before any API starts.
fn lab(extra: &[&str]) -> Lab {
    let args = LabArgs::from_flags(extra).unwrap();
    let profile = Profile::parse(&args.load.profile, args.load.duration_scale).unwrap();
    let (blocking_threads, threads_rule) = pool_threads(&args, &profile);
    Lab {
        blocking_threads,
        max_in_flight: args.load.max_in_flight,
        latency: args.latency,
        threads_rule,
        api_database_url: Some("postgres://lab@127.0.0.1:5999/orders".to_owned()),
        injection: None,
        faults: None,
        db: None,
        db_proxy: None,
        broker: None,
        profile,
        out: PathBuf::from("/tmp/lab"),
        run_id: "r".to_owned(),
        database_url: Some("postgres://lab@127.0.0.1:5999/orders".to_owned()),
        postgres_pid: None,
        lab_owned_database: true,
        deps_url: "http://127.0.0.1:9191".to_owned(),
        deps_pid: None,
        environment: Environment::default(),
        args,
    }
}

/// What a default `loadtest lab` records for both APIs (blocking-api adds its threads).
const DEFAULT_RUN: &[(&str, &str)] = &[
    ("DB_POOL_SIZE", "100"),
    ("DB_POOL_TIMEOUT_MS", "5000"),
    ("DB_RTT_MS", "0"),
    ("DB_STATEMENT_TIMEOUT_MS", "5000"),
    ("DB_TX_SCOPE", "short"),
    ("DEPS_TIMEOUT_MS", "10000"),
    ("DEPS_URL", "http://127.0.0.1:9191"),
    ("HTTP_WORKERS", "1"),
    ("LEASE_MS", "30000"),
    ("MAX_LOOP_LAG_MS", "5"),
    ("PERSIST_BATCH_MAX", "1"),
    ("PERSIST_BATCH_WAIT_MS", "5"),
    ("PG_DURABILITY", "on"),
    ("PG_VIA", "socket"),
    ("QUEUE_TIMEOUT_MS", "100"),
    ("RECONCILE_INTERVAL_MS", "5000"),
    ("REQUEST_DEADLINE_MS", "30000"),
];

#[test]
fn a_default_run_gives_both_apis_the_same_settings_and_blocking_api_its_threads() {
    let lab = lab(&[]);
    let reactive = lab.settings("reactive-api").unwrap();
    assert_eq!(reactive, map(DEFAULT_RUN));
    let mut blocking = map(DEFAULT_RUN);
    blocking.insert("BLOCKING_THREADS".to_owned(), "200".to_owned());
    blocking.insert("DEPS_CLIENT".to_owned(), "ureq".to_owned());
    assert_eq!(lab.settings("blocking-api").unwrap(), blocking);

    let mut env = blocking.clone();
    env.insert(
        "DATABASE_URL".to_owned(),
        "postgres://lab@127.0.0.1:5999/orders".to_owned(),
    );
    env.insert(
        "REQUEST_HASH_KEY".to_owned(),
        "order-lab-load-test-request-hash-key".to_owned(),
    );
    assert_eq!(lab.env(&lab.settings("blocking-api").unwrap()), env);
}

#[test]
fn every_flag_of_the_lab_reaches_the_apis_settings() {
    let lab = lab(&[
        "--db-pool-size",
        "7",
        "--db-pool-timeout-ms",
        "1500",
        "--deps-timeout-ms",
        "2500",
        "--http-workers",
        "2",
        "--blocking-threads",
        "auto",
        "--tx-scope",
        "request",
        "--db-rtt-ms",
        "1.5",
        "--lease-ms",
        "40000",
        "--reconcile-interval-ms",
        "700",
        "--db-durability",
        "off",
        "--db-via",
        "tcp",
        "--persist-batch-max",
        "3",
        "--persist-batch-wait-ms",
        "9",
        "--shedding",
        "off",
        "--queue-timeout-ms",
        "50",
        "--max-loop-lag-ms",
        "8",
        "--db-statement-timeout-ms",
        "0",
        "--profile",
        "ramp-100",
    ]);
    let reactive = &[
        ("DB_POOL_SIZE", "7"),
        ("DB_POOL_TIMEOUT_MS", "1500"),
        ("DB_RTT_MS", "1.5"),
        ("DB_STATEMENT_TIMEOUT_MS", "0"),
        ("DB_TX_SCOPE", "request"),
        ("DEPS_TIMEOUT_MS", "2500"),
        ("DEPS_URL", "http://127.0.0.1:9191"),
        ("HTTP_WORKERS", "2"),
        ("LEASE_MS", "40000"),
        ("MAX_IN_FLIGHT", "0"),
        ("MAX_LOOP_LAG_MS", "0"),
        ("PERSIST_BATCH_MAX", "3"),
        ("PERSIST_BATCH_WAIT_MS", "9"),
        ("PG_DURABILITY", "off"),
        ("PG_VIA", "tcp"),
        ("QUEUE_TIMEOUT_MS", "50"),
        ("RECONCILE_INTERVAL_MS", "700"),
        ("REQUEST_DEADLINE_MS", "3600000"),
    ];
    assert_eq!(lab.settings("reactive-api").unwrap(), map(reactive));
    let mut blocking = map(reactive);
    blocking.insert("BLOCKING_THREADS".to_owned(), "259".to_owned());
    blocking.insert("DEPS_CLIENT".to_owned(), "ureq".to_owned());
    blocking.insert(
        "BLOCKING_THREADS_RULE".to_owned(),
        "auto: Erlang B, 100/s peak × 2.200 s critical path = 220.0 threads busy, at most 0.1% \
         of arrivals finding all busy"
            .to_owned(),
    );
    assert_eq!(lab.settings("blocking-api").unwrap(), blocking);
    // Labels are API names too.
    assert_eq!(lab.settings("blocking").unwrap(), blocking);
}
