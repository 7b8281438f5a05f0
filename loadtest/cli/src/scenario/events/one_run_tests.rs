use super::*;

#[test]
fn an_events_run_gives_its_api_the_originals_pool_and_no_shedding() {
    let env = api_env(
        "postgres://lab@127.0.0.1:5999/orders",
        "http://127.0.0.1:9191",
        "nats://127.0.0.1:4333",
        "outbox",
    )
    .unwrap();
    let expected: BTreeMap<String, String> = [
        ("BLOCKING_THREADS", "200"),
        ("DATABASE_URL", "postgres://lab@127.0.0.1:5999/orders"),
        ("DB_POOL_SIZE", "10"),
        ("DB_POOL_TIMEOUT_MS", "5000"),
        ("DEPS_TIMEOUT_MS", "2000"),
        ("DEPS_URL", "http://127.0.0.1:9191"),
        ("EVENTS_MODE", "outbox"),
        ("HTTP_WORKERS", "1"),
        ("LEASE_MS", "9000"),
        ("MAX_IN_FLIGHT", "0"),
        ("MAX_LOOP_LAG_MS", "0"),
        ("NATS_TIMEOUT_MS", "5000"),
        ("NATS_URL", "nats://127.0.0.1:4333"),
        ("RECONCILE_INTERVAL_MS", "1000"),
        ("REQUEST_HASH_KEY", "order-lab-load-test-request-hash-key"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(env, expected);
}

#[test]
fn the_census_tells_lost_duplicated_and_orphaned_apart() {
    let ids: Vec<String> = ["A", "B", "C"].map(String::from).to_vec();
    let subjects: BTreeMap<String, u64> = [
        (event_broker::subject_of("A"), 1),
        (event_broker::subject_of("B"), 3),
        (event_broker::subject_of("Z"), 1),
    ]
    .into_iter()
    .collect();
    assert_eq!(
        Census::of(&ids, &subjects),
        Census {
            orders: 3,
            messages: 5,
            lost: 1,
            duplicated: 2,
            orphaned: 1
        }
    );
}

#[test]
fn errors_read_as_status_and_code_or_transport() {
    for (kind, label) in [
        ("database_unavailable", "503 database_unavailable"),
        ("payment_declined", "402 payment_declined"),
        ("http_502", "502 unknown"),
        ("timeout", "timeout"),
        ("connect_error", "connection"),
        ("io_error", "connection"),
    ] {
        assert_eq!(error_label(kind), label, "{kind}");
    }
}
