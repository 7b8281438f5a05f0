//! Round trips to the database per order: the normal path is three autocommit statements — the
//! reservation, the `CHARGING` mark, and one statement that completes the key and writes
//! customer, order and items — with no BEGIN/COMMIT around them. Counted by PostgreSQL itself
//! (pg_stat_statements, preloaded by testbed::pg: the lab and scripts/test.sh), for both APIs.

use mock_deps::MockConfig;
use testkit::{Api, TOKEN, TestApp, contract_tests, valid_order};

contract_tests!(an_order_costs_three_statements);

const ORDERS: i64 = 5;

/// What diesel sends once when it opens a connection: a session's set-up, not an order's cost. A
/// lazy pool may open a second connection inside the counted window (an order that arrives
/// before the previous one's connection is back in the pool: seen on a loaded machine).
const SESSION_SET_UP: [&str; 2] = ["SET CLIENT_ENCODING TO 'UTF8'", "SET TIME ZONE 'UTC'"];

/// Every statement this database ran since the reset, with its calls, but the test's own and a
/// new connection's set-up.
async fn statements(app: &TestApp) -> Vec<(String, i64)> {
    sqlx::query_as(
        "SELECT s.query, s.calls FROM pg_stat_statements s
           JOIN pg_database d ON d.oid = s.dbid
          WHERE d.datname = current_database() AND s.query NOT ILIKE '%pg_stat_statements%'
            AND s.query <> ALL($1)
          ORDER BY s.calls DESC",
    )
    .bind(SESSION_SET_UP)
    .fetch_all(&app.pool)
    .await
    .expect("reading pg_stat_statements")
}

async fn an_order_costs_three_statements(api: Api) {
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        // No recovery pass in the counted window.
        s.reconcile_interval_ms = 3_600_000;
    })
    .await;
    sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .execute(&app.pool)
        .await
        .expect("pg_stat_statements must be preloaded (shared_preload_libraries): scripts/test.sh does it");
    // The first order opens the pool's connection (its session set-up is not the order's cost).
    assert_eq!(
        app.post_order(TOKEN, &valid_order("warm")).await.status(),
        201
    );
    sqlx::query(
        "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database
                                              WHERE datname = current_database()), 0)",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    for i in 0..ORDERS {
        let response = app
            .post_order(TOKEN, &valid_order(&format!("count-{i}")))
            .await;
        assert_eq!(response.status(), 201);
    }
    let ran = statements(&app).await;
    let total: i64 = ran.iter().map(|(_, calls)| calls).sum();
    assert_eq!(
        total,
        3 * ORDERS,
        "statements per order: {}; ran: {ran:#?}",
        total as f64 / ORDERS as f64
    );
    assert!(
        ran.iter()
            .all(|(q, _)| !q.trim().eq_ignore_ascii_case("begin")),
        "no BEGIN on the normal path: {ran:#?}"
    );
    assert_eq!(app.count("orders").await, ORDERS + 1);
    assert_eq!(app.count("order_items").await, 2 * (ORDERS + 1));
}
