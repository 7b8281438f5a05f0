//! What the money tests share: settings under which recovery happens within a test, and the
//! check that every charge ended as exactly one order.

use order_core::plumbing::settings::CommonSettings;

use crate::TestApp;

/// A lease of 2.5 s (the floor for these timeouts) and a recovery pass every 200 ms.
pub fn fast_recovery(s: &mut CommonSettings) {
    s.deps_timeout_ms = 1000;
    s.db_pool_timeout_ms = 500;
    s.lease_ms = 2500;
    s.reconcile_interval_ms = 200;
}

/// No background work on the pool after start-up: no retention sweep and no recovery pass
/// but the one at start (see [`TestApp::after_the_start_up_pass`]), for a test that counts
/// the pool's connections or its acquire timeouts.
pub fn quiet_background(s: &mut CommonSettings) {
    s.key_retention_days = 0;
    s.events.outbox_retention_hours = 0;
    s.reconcile_interval_ms = 3_600_000;
}

/// Every order's charge is live in mock-deps' ledger under the order's payment key, with its
/// amount, every live charge has its order, and no key was charged twice.
pub async fn assert_money_balances(app: &TestApp) {
    let ledger = app.deps.ledger_with_detail();
    assert_eq!(ledger.keys_charged_more_than_once, 0);
    // The ledger's keys come sorted (a BTreeMap), as do the orders.
    let live: Vec<(String, i64)> = ledger
        .charges_by_key
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, c)| c.charges > 0 && !c.voided)
        .map(|(key, c)| (key, c.amount))
        .collect();
    let orders: Vec<(String, i64)> =
        sqlx::query_as("SELECT payment_key, amount FROM orders ORDER BY payment_key")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(orders, live, "orders (payment key, amount) = live charges");
}
