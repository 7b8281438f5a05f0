//! Money invariants, checked at the end of every lab run: every charge the gateway made ended as
//! exactly one order (same amount) or one void, and every order has exactly one live charge.
//!
//! [`reconcile`] is the pure comparison (unit-tested); [`count`] gathers its inputs once the API
//! is idle: it waits until no idempotency key is `CHARGING` (a charge whose fate the API's
//! recovery or a retry has yet to settle), then reads `orders` and mock-deps'
//! `GET /admin/ledger?detail=true`. The lab empties both between runs, so the ledger compared is
//! the one this run's API produced.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sqlx::Connection;

use lab_results::{InvariantCheck, MoneyRecord, RunResults};
use mock_deps::admin::{KeyCharges, Ledger};

/// Offending keys listed per kind in [`MoneyRecord::examples`].
const EXAMPLES_PER_KIND: usize = 3;

/// One row of `SELECT payment_key, amount FROM orders`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderRow {
    pub payment_key: Option<String>,
    pub amount: i64,
}

/// Compares the orders with the ledger (see [`MoneyRecord`] for each figure).
pub fn reconcile(orders: &[OrderRow], ledger: &Ledger) -> MoneyRecord {
    let no_keys = BTreeMap::new();
    let charges_by_key = ledger.charges_by_key.as_ref().unwrap_or(&no_keys);
    let mut by_key: HashMap<&str, Vec<i64>> = HashMap::new();
    for o in orders {
        if let Some(k) = &o.payment_key {
            by_key.entry(k.as_str()).or_default().push(o.amount);
        }
    }
    let mut m = MoneyRecord {
        charges: ledger.charges,
        voids: ledger.voids,
        orders: orders.len() as u64,
        ..MoneyRecord::default()
    };
    let mut examples: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut note = |kind: &'static str, key: &str| {
        let list = examples.entry(kind).or_default();
        if list.len() < EXAMPLES_PER_KIND {
            list.push(format!("{kind}: {key}"));
        }
    };
    for (key, k) in charges_by_key {
        if k.charges > 1 {
            m.double_charges += 1;
            note("charged twice", key);
        }
        if !k.live() {
            continue;
        }
        match by_key.get(key.as_str()) {
            None => {
                m.charges_without_order += 1;
                note("charge without order", key);
            }
            Some(amounts) => {
                let wrong = amounts.iter().filter(|&&a| a != k.amount).count() as u64;
                if wrong > 0 {
                    m.amount_mismatches += wrong;
                    note("amount mismatch", key);
                }
            }
        }
    }
    for o in orders {
        let charged = o
            .payment_key
            .as_deref()
            .and_then(|k| charges_by_key.get(k))
            .is_some_and(KeyCharges::live);
        if !charged {
            m.orders_without_charge += 1;
            note(
                "order without charge",
                o.payment_key.as_deref().unwrap_or("(no payment_key)"),
            );
        }
    }
    // Two orders on one key cannot both be the key's one order: the second has no charge of its
    // own (`orders.payment_key` is UNIQUE, so this only guards a schema change).
    for (key, amounts) in &by_key {
        let live = charges_by_key.get(*key).is_some_and(KeyCharges::live);
        if live && amounts.len() > 1 {
            m.orders_without_charge += amounts.len() as u64 - 1;
            note("two orders for one charge", key);
        }
    }
    m.examples = examples.into_values().flatten().collect();
    m
}

const WITHOUT_ORDER: &str = "money: every live charge has its order (charges without order = 0)";
const WITHOUT_CHARGE: &str = "money: every order has one live charge (orders without charge = 0)";
const AMOUNTS: &str = "money: each order's amount is its charged amount";
const SETTLED: &str =
    "money: no key left CHARGING (settled within LEASE_MS + 2 × RECONCILE_INTERVAL_MS)";

/// The invariant checks of a money record (`None`: why it could not be counted).
pub fn checks(money: std::result::Result<&MoneyRecord, &str>) -> Vec<InvariantCheck> {
    let names = [WITHOUT_ORDER, WITHOUT_CHARGE, AMOUNTS, SETTLED];
    let m = match money {
        Ok(m) => m,
        Err(why) => {
            return names
                .iter()
                .map(|n| InvariantCheck {
                    name: (*n).to_owned(),
                    ok: None,
                    detail: why.to_owned(),
                })
                .collect();
        }
    };
    let line = format!(
        "{} charges, {} voids, {} orders",
        m.charges, m.voids, m.orders
    );
    let examples = if m.examples.is_empty() {
        String::new()
    } else {
        format!("; e.g. {}", m.examples.join(", "))
    };
    let check = |name: &str, ok: bool, detail: String| InvariantCheck {
        name: name.to_owned(),
        ok: Some(ok),
        detail,
    };
    vec![
        check(
            WITHOUT_ORDER,
            m.charges_without_order == 0,
            format!(
                "{} charges without order ({line}){examples}",
                m.charges_without_order
            ),
        ),
        check(
            WITHOUT_CHARGE,
            m.orders_without_charge == 0,
            format!("{} orders without charge ({line})", m.orders_without_charge),
        ),
        check(
            AMOUNTS,
            m.amount_mismatches == 0,
            format!("{} amount mismatches", m.amount_mismatches),
        ),
        check(
            SETTLED,
            m.charging_left == 0,
            format!(
                "{} keys still CHARGING after {:.1} s",
                m.charging_left, m.settle_wait_s
            ),
        ),
    ]
}

/// Waits (at most `settle`) until no key is `CHARGING`, then reconciles; returns the record and
/// its checks. Without a database or mock-deps URL the checks say why they were not made.
pub async fn count(
    database_url: Option<&str>,
    deps_url: Option<&str>,
    settle: Duration,
) -> (Option<MoneyRecord>, Vec<InvariantCheck>) {
    let (Some(db), Some(deps)) = (database_url, deps_url) else {
        return (
            None,
            checks(Err("no database or mock-deps URL given: money not counted")),
        );
    };
    match gather(db, deps, settle).await {
        Ok(m) => {
            let c = checks(Ok(&m));
            (Some(m), c)
        }
        Err(e) => (None, checks(Err(&format!("{e:#}")))),
    }
}

async fn gather(database_url: &str, deps_url: &str, settle: Duration) -> Result<MoneyRecord> {
    let mut conn = sqlx::PgConnection::connect(database_url)
        .await
        .context("connecting to PostgreSQL")?;
    let start = Instant::now();
    let charging = loop {
        let (n,): (i64,) =
            sqlx::query_as("SELECT count(*) FROM idempotency_keys WHERE state = 'CHARGING'")
                .fetch_one(&mut conn)
                .await
                .context("counting CHARGING keys")?;
        if n == 0 || start.elapsed() >= settle {
            break u64::try_from(n).unwrap_or(0);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let settle_wait_s = start.elapsed().as_secs_f64();
    let rows: Vec<(Option<String>, i64)> = sqlx::query_as("SELECT payment_key, amount FROM orders")
        .fetch_all(&mut conn)
        .await
        .context("reading orders")?;
    conn.close().await.ok();
    let ledger = crate::run::ledger_detail(deps_url).await?;
    let orders: Vec<OrderRow> = rows
        .into_iter()
        .map(|(payment_key, amount)| OrderRow {
            payment_key,
            amount,
        })
        .collect();
    let mut m = reconcile(&orders, &ledger);
    m.charging_left = charging;
    m.settle_wait_s = settle_wait_s;
    Ok(m)
}

/// The APIs' default `LEASE_MS` and `RECONCILE_INTERVAL_MS` (order-core's settings), for a run
/// whose target's own are not known here.
const DEFAULT_LEASE_MS: u64 = 30_000;
const DEFAULT_RECONCILE_INTERVAL_MS: u64 = 5000;

/// [`count`] for a run against a target whose `LEASE_MS` and `RECONCILE_INTERVAL_MS` are not
/// known here (`loadtest run`, `loadtest merge`): waits as long as the APIs' defaults need, and
/// records the money and its checks on the run.
pub async fn count_into(run: &mut RunResults, database_url: Option<&str>, deps_url: Option<&str>) {
    let settle = settle_bound(DEFAULT_LEASE_MS, DEFAULT_RECONCILE_INTERVAL_MS);
    let (money, checks) = count(database_url, deps_url, settle).await;
    run.money = money;
    run.invariants.extend(checks);
}

/// The longest the lab waits for `CHARGING` keys: one lease (an attempt's own time) plus two
/// recovery passes.
pub fn settle_bound(lease_ms: u64, reconcile_interval_ms: u64) -> Duration {
    Duration::from_millis(lease_ms + 2 * reconcile_interval_ms)
}

#[cfg(test)]
#[path = "money_tests.rs"]
mod tests;
