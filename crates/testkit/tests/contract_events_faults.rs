//! The order event under a hostile broker and database: acknowledgements slower than the
//! database lets a transaction sit idle (the outbox must still drain, each event sent once),
//! a prepared transaction finished by someone else while its request waits for the broker (the
//! request answers what happened), and a PostgreSQL without prepared transactions (two-phase
//! refuses to start). The broker is slowed by a latency proxy between the API and its own
//! `nats-server`; the test's own NATS client is not slowed.

use std::collections::BTreeMap;
use std::time::Duration;

use order_core::plumbing::events::EventsMode;
use order_core::plumbing::settings::CommonSettings;
use testbed::pg::EphemeralPostgres;
use testkit::{Api, TOKEN, TestApp, contract_tests, eventually, valid_order};

contract_tests!(
    outbox_drains_a_backlog_whose_acks_outlast_the_statement_timeout,
    two_phase_answers_201_when_its_prepared_transaction_was_committed_elsewhere,
    two_phase_answers_503_when_its_prepared_transaction_was_rolled_back_elsewhere,
    two_phase_refuses_to_start_without_prepared_transactions,
);

/// A broker round trip (a publication's acknowledgement) three times `DB_STATEMENT_TIMEOUT_MS`,
/// well within `NATS_TIMEOUT_MS`.
const BROKER_RTT: Duration = Duration::from_millis(1500);

fn slow_broker(s: &mut CommonSettings) {
    testkit::fast_recovery(s);
    s.db_statement_timeout_ms = 500;
    s.events.nats_timeout_ms = 5000;
    s.events.outbox_poll_ms = 20;
}

async fn unsent(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM order_outbox WHERE sent_at IS NULL")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn one_event_per_order(app: &TestApp) -> bool {
    let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM orders")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    let expected: BTreeMap<String, u64> = ids
        .iter()
        .map(|id| (event_broker::subject_of(id), 1))
        .collect();
    !ids.is_empty() && app.broker().census().await.unwrap_or_default() == expected
}

/// A backlog built while the broker refused everything, then relayed through a broker whose
/// every acknowledgement outlasts `statement_timeout` and `idle_in_transaction_session_timeout`:
/// a relay that held its transaction across the publication would lose its session each pass,
/// mark nothing sent and publish the same events for ever.
async fn outbox_drains_a_backlog_whose_acks_outlast_the_statement_timeout(api: Api) {
    let app = TestApp::spawn_with_slow_broker(api, EventsMode::Outbox, slow_broker).await;
    app.broker().delete_stream().await.unwrap();
    for i in 0..5 {
        let r = app
            .post_order(TOKEN, &valid_order(&format!("slow-{i}")))
            .await;
        assert_eq!(r.status(), 201, "{:?}", r.text().await);
    }
    assert_eq!(
        unsent(&app).await,
        5,
        "kept until the broker acknowledges them"
    );
    app.set_broker_rtt(BROKER_RTT);
    app.broker().ensure_stream().await.unwrap();
    eventually(30, "the relay marking the backlog sent", || async {
        unsent(&app).await == 0
    })
    .await;
    eventually(10, "one event per order in the stream", || async {
        one_event_per_order(&app).await
    })
    .await;
    // Sent once each: JetStream saw no second copy of any of them.
    let published = |duplicate: &str| {
        format!("events_published_total{{duplicate=\"{duplicate}\",mode=\"outbox\"}}")
    };
    assert_eq!(app.metric(&published("false")).await, Some(5.0));
    assert_eq!(app.metric(&published("true")).await.unwrap_or(0.0), 0.0);
}

async fn prepared_gids(app: &TestApp) -> Vec<String> {
    sqlx::query_scalar("SELECT gid FROM pg_prepared_xacts WHERE database = current_database()")
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

/// Posts an order through a slow broker and, while the request waits for the acknowledgement,
/// finishes its prepared transaction with `finish` (as another instance's recovery would).
async fn race_the_prepared_transaction(app: &TestApp, finish: fn(&str) -> String) -> (u16, String) {
    app.set_broker_rtt(BROKER_RTT);
    let finisher = async {
        eventually(10, "the order's transaction prepared", || async {
            prepared_gids(app).await.len() == 1
        })
        .await;
        let gid = prepared_gids(app).await.remove(0);
        sqlx::raw_sql(sqlx::AssertSqlSafe(finish(&gid)))
            .execute(&app.pool)
            .await
            .unwrap();
    };
    let order = valid_order("2pc-elsewhere");
    let (r, ()) = tokio::join!(app.post_order(TOKEN, &order), finisher);
    let status = r.status().as_u16();
    (status, r.text().await.unwrap())
}

async fn two_phase_answers_201_when_its_prepared_transaction_was_committed_elsewhere(api: Api) {
    let app = TestApp::spawn_with_slow_broker(api, EventsMode::TwoPhase, slow_broker).await;
    let (status, body) =
        race_the_prepared_transaction(&app, order_core::plumbing::events::commit_prepared_sql)
            .await;
    assert_eq!(status, 201, "the order was made: {body}");
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM orders")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(ids, [doc["id"].as_str().unwrap()]);
    assert_eq!(app.deps.ledger_with_detail().keys_charged_more_than_once, 0);
}

async fn two_phase_answers_503_when_its_prepared_transaction_was_rolled_back_elsewhere(api: Api) {
    let app = TestApp::spawn_with_slow_broker(api, EventsMode::TwoPhase, slow_broker).await;
    let (status, body) =
        race_the_prepared_transaction(&app, order_core::plumbing::events::rollback_prepared_sql)
            .await;
    assert_eq!(status, 503, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"], "dependency_unavailable", "{body}");
    assert_eq!(error["dependency"], "broker", "{body}");
    assert_eq!(app.count("orders").await, 0);
    let state: String = sqlx::query_scalar("SELECT state FROM idempotency_keys")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(state, "CHARGING", "the charge is kept for the retry");
    // Recovery settles the kept charge (it may hold the key while it does): a retry then
    // replays the order.
    app.set_broker_rtt(Duration::ZERO);
    let retry = valid_order("2pc-elsewhere");
    eventually(20, "the order made and replayed", || async {
        app.post_order(TOKEN, &retry).await.status() == 201
    })
    .await;
    assert_eq!(app.count("orders").await, 1);
    assert_eq!(app.deps.ledger_with_detail().keys_charged_more_than_once, 0);
}

/// A PostgreSQL started with `max_prepared_transactions = 0` (every `PREPARE TRANSACTION`
/// fails there, after the charge): the API refuses to start, naming the setting.
async fn two_phase_refuses_to_start_without_prepared_transactions(api: Api) {
    let pg = tokio::task::spawn_blocking(|| {
        EphemeralPostgres::start_with_settings(&[("max_prepared_transactions", "0")])
    })
    .await
    .unwrap()
    .expect("starting a PostgreSQL without prepared transactions");
    let nats = testkit::start_nats().await;
    let settings = |mode: EventsMode| {
        let mut s = CommonSettings::new(pg.url(), "http://127.0.0.1:9");
        s.max_loop_lag_ms = 0;
        s.events.events_mode = mode;
        s.events.nats_url = nats.url();
        s
    };
    let refused = testkit::build(api, settings(EventsMode::TwoPhase)).await;
    let why = format!(
        "{:#}",
        refused.expect_err("two-phase started without PREPARE")
    );
    assert!(why.contains("max_prepared_transactions"), "{why}");
    // The other modes need no prepared transaction.
    testkit::build(api, settings(EventsMode::Outbox))
        .await
        .expect("outbox starts on the same server");
}
