//! End-of-run checks that make the counts trustworthy: every arrival is accounted for, the
//! database holds an order for every fresh 201 and none nobody asked for, and the payment ledger
//! never charged a key twice. A check that cannot be made (no database URL, no mock-deps) says so
//! instead of passing.

use anyhow::{Context, Result};
use sqlx::Connection;

use lab_results::{
    InvariantCheck, OUTCOME_CONNECT_ERROR, OUTCOME_GAVE_UP, OUTCOME_IO_ERROR, OUTCOME_TIMEOUT,
    RunResults,
};

/// The statement the lab uses between runs (docs/lab-interfaces.md), from the one file that
/// scripts/k8s-local.sh reads too.
pub const TRUNCATE: &str = include_str!("truncate.sql");

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

/// Every fresh 201 is a row (nothing lost), and every other row belongs to a request whose client
/// gave up (timeout, broken connection) while the server carried on — a thread-per-request server
/// finishes the work it queued even when nobody waits for it any more — or that was answered 503
/// after its charge and settled by recovery, never to a request nobody sent. Counted once the API is idle, so late finishers are in. With retrying clients each
/// client has its own key, so a client whose last answer was a replayed 201 (its order made by an
/// earlier attempt or by recovery) counts as one order too.
pub async fn database(
    r: &RunResults,
    database_url: Option<&str>,
    metrics_url: Option<&str>,
) -> Vec<InvariantCheck> {
    const LOST: &str = "no 201 lost: orders in the database ≥ fresh 201s";
    const EXTRA: &str = "no order nobody asked for: orders ≤ 201s + requests whose client gave up \
                         + 503s that may have come after the charge";
    let Some(url) = database_url else {
        let why = "no database URL given".to_owned();
        return vec![unchecked(LOST, why.clone()), unchecked(EXTRA, why)];
    };
    let waited = match metrics_url {
        Some(m) => wait_until_idle(m).await,
        None => "API not observed: counted at once".to_owned(),
    };
    let n = match count_orders(url).await {
        Ok(n) => n,
        Err(e) => {
            return vec![
                unchecked(LOST, format!("{e:#}")),
                unchecked(EXTRA, format!("{e:#}")),
            ];
        }
    };
    let s = &r.summary;
    let kind = |k: &str| s.errors_by_kind.get(k).copied().unwrap_or(0);
    let gave_up = kind(OUTCOME_TIMEOUT)
        + kind(OUTCOME_IO_ERROR)
        + kind(OUTCOME_CONNECT_ERROR)
        + kind(OUTCOME_GAVE_UP);
    let (created, what) = if r.retries.is_some() {
        (
            s.ok + s.replayed,
            "clients answered 201 (fresh or replayed)",
        )
    } else {
        (s.ok, "fresh 201s")
    };
    // A 503 for the database or a dependency may come after the charge: the key then stays
    // CHARGING and recovery (or the client's retry) makes the order the client was not told of.
    let after_charge = kind("database_unavailable") + kind("dependency_unavailable");
    let late = n.saturating_sub(created);
    vec![
        check(
            LOST,
            n >= created,
            format!("{n} rows in orders, {created} {what} ({waited})"),
        ),
        check(
            EXTRA,
            n <= created + gave_up + after_charge,
            format!(
                "{n} rows = {created} {what} + {late} made for clients that gave up or got a 503 \
                 (of {gave_up} timeouts / connection errors / clients out of time and \
                 {after_charge} database / dependency 503s)"
            ),
        ),
    ]
}

/// The longest wait for the API to go idle before the orders are counted.
const IDLE_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// Polls the API's `/metrics` until nothing is in flight or queued, for at most [`IDLE_WAIT`].
async fn wait_until_idle(metrics_url: &str) -> String {
    // One scrape may take the whole wait, as long as the API answers it.
    let client = loadgen::sampler::metrics_client(IDLE_WAIT).unwrap_or_default();
    let start = std::time::Instant::now();
    while start.elapsed() < IDLE_WAIT {
        let busy = match loadgen::sampler::scrape_metrics(&client, metrics_url).await {
            Some(m) => {
                let g = |k: &str| m.get(k).copied().unwrap_or(0.0);
                // The scrape itself is one request in flight.
                g("http_requests_in_flight") - 1.0
                    + g("blocking_pool_busy")
                    + g("blocking_pool_queued")
            }
            None => return "API unreachable: counted at once".to_owned(),
        };
        if busy <= 0.0 {
            return format!(
                "counted after the API went idle, {:.1} s after the run",
                start.elapsed().as_secs_f64()
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    "the API was still busy 120 s after the run: counted then".to_owned()
}

/// The payment ledger never charged a key twice.
pub async fn ledger(deps_url: Option<&str>) -> InvariantCheck {
    const NAME: &str = "no idempotency key charged twice (mock-deps ledger)";
    let Some(url) = deps_url else {
        return unchecked(NAME, "no mock-deps URL given".to_owned());
    };
    match crate::run::ledger(url).await {
        Ok(l) => check(
            NAME,
            l.keys_charged_more_than_once == 0,
            format!(
                "keys_charged_more_than_once = {}, charges = {}",
                l.keys_charged_more_than_once, l.charges
            ),
        ),
        Err(e) => unchecked(NAME, format!("{e:#}")),
    }
}

/// All checks for one run.
pub async fn all(
    r: &RunResults,
    database_url: Option<&str>,
    deps_url: Option<&str>,
    metrics_url: Option<&str>,
) -> Vec<InvariantCheck> {
    let mut checks = counts(r);
    checks.extend(database(r, database_url, metrics_url).await);
    checks.push(ledger(deps_url).await);
    checks
}
