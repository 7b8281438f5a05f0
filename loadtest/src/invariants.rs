//! End-of-run checks that make the counts trustworthy: every arrival is accounted for, the
//! database holds exactly one order per fresh 201, and the payment ledger never charged a key
//! twice. A check that cannot be made (no database URL, no mock-deps) says so instead of passing.

use anyhow::{Context, Result};
use sqlx::Connection;

use crate::results::{InvariantCheck, RunResults};

/// The statement the lab uses between runs (docs/lab-interfaces.md).
pub const TRUNCATE: &str =
    "TRUNCATE idempotency_keys, order_items, orders, customers RESTART IDENTITY";

/// Empties the order tables.
pub async fn truncate(database_url: &str) -> Result<()> {
    let mut conn = sqlx::PgConnection::connect(database_url)
        .await
        .context("connecting to PostgreSQL")?;
    sqlx::query(TRUNCATE)
        .execute(&mut conn)
        .await
        .context("truncating the order tables")?;
    conn.close().await.ok();
    Ok(())
}

/// `SELECT count(*) FROM orders`.
pub async fn count_orders(database_url: &str) -> Result<u64> {
    let mut conn = sqlx::PgConnection::connect(database_url)
        .await
        .context("connecting to PostgreSQL")?;
    let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM orders")
        .fetch_one(&mut conn)
        .await
        .context("counting orders")?;
    conn.close().await.ok();
    Ok(u64::try_from(n).unwrap_or(0))
}

fn check(name: &str, ok: bool, detail: String) -> InvariantCheck {
    InvariantCheck {
        name: name.to_owned(),
        ok: Some(ok),
        detail,
    }
}

fn unchecked(name: &str, why: String) -> InvariantCheck {
    InvariantCheck {
        name: name.to_owned(),
        ok: None,
        detail: why,
    }
}

/// The counting invariants, from the results alone.
pub fn counts(r: &RunResults) -> Vec<InvariantCheck> {
    let s = &r.summary;
    let per_second: u64 = r.seconds.iter().map(|x| x.completed).sum();
    vec![
        check(
            "offered = sent + not_sent",
            s.offered == s.sent + s.not_sent,
            format!("{} = {} + {}", s.offered, s.sent, s.not_sent),
        ),
        check(
            "sent = completed (201 + replayed + errors), nothing left open",
            s.sent == s.completed && s.completed == s.ok + s.replayed + s.errors,
            format!(
                "{} sent, {} completed = {} + {} + {}",
                s.sent, s.completed, s.ok, s.replayed, s.errors
            ),
        ),
        check(
            "per-second series adds up to the summary",
            per_second == s.completed,
            format!(
                "Σ seconds.completed = {per_second}, summary {}",
                s.completed
            ),
        ),
    ]
}

/// Orders in the database = fresh 201s.
pub async fn database(r: &RunResults, database_url: Option<&str>) -> InvariantCheck {
    const NAME: &str = "orders in the database = 201 responses";
    let Some(url) = database_url else {
        return unchecked(NAME, "no database URL given".to_owned());
    };
    match count_orders(url).await {
        Ok(n) => check(
            NAME,
            n == r.summary.ok,
            format!("{n} rows in orders, {} fresh 201s", r.summary.ok),
        ),
        Err(e) => unchecked(NAME, format!("{e:#}")),
    }
}

/// The payment ledger never charged a key twice.
pub async fn ledger(deps_url: Option<&str>) -> InvariantCheck {
    const NAME: &str = "no idempotency key charged twice (mock-deps ledger)";
    let Some(url) = deps_url else {
        return unchecked(NAME, "no mock-deps URL given".to_owned());
    };
    match crate::run::ledger(url).await {
        Ok(v) => match v["keys_charged_more_than_once"].as_u64() {
            Some(n) => check(
                NAME,
                n == 0,
                format!(
                    "keys_charged_more_than_once = {n}, charges = {}",
                    v["charges"]
                ),
            ),
            None => unchecked(
                NAME,
                format!("ledger has no keys_charged_more_than_once: {v}"),
            ),
        },
        Err(e) => unchecked(NAME, format!("{e:#}")),
    }
}

/// All checks for one run.
pub async fn all(
    r: &RunResults,
    database_url: Option<&str>,
    deps_url: Option<&str>,
) -> Vec<InvariantCheck> {
    let mut checks = counts(r);
    checks.push(database(r, database_url).await);
    checks.push(ledger(deps_url).await);
    checks
}
