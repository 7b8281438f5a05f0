//! The orders the API made for requests whose client gave up (see [`loadgen::gave_up`], which
//! collects the keys during the run): counted in the database once the API is idle and before the
//! lab empties the tables.

use anyhow::{Context, Result};
use lab_results::AfterGiveUp;
use loadgen::gave_up::OrderKey;
use sqlx::Connection;

/// Counts the orders made for `keys`. Call it once the API is idle (the lab calls it after the
/// consistency checks, which wait for that) and before the tables are emptied.
pub async fn orders_after_give_up(database_url: Option<&str>, keys: &[OrderKey]) -> AfterGiveUp {
    let gave_up = keys.len() as u64;
    let Some(url) = database_url else {
        return AfterGiveUp {
            gave_up,
            orders: None,
            detail: "no database URL given".to_owned(),
        };
    };
    match count(url, keys).await {
        Ok(n) => AfterGiveUp {
            gave_up,
            orders: Some(n),
            detail: format!(
                "{n} of the {gave_up} keys whose client gave up have an order, counted by key \
                 after the consistency checks (once the API was idle, or 120 s after the run)"
            ),
        },
        Err(e) => AfterGiveUp {
            gave_up,
            orders: None,
            detail: format!("{e:#}"),
        },
    }
}

async fn count(url: &str, keys: &[OrderKey]) -> Result<u64> {
    if keys.is_empty() {
        return Ok(0);
    }
    let (sellers, references): (Vec<String>, Vec<String>) = keys
        .iter()
        .map(|k| (k.seller_id.clone(), k.reference_id.clone()))
        .unzip();
    let mut conn = sqlx::PgConnection::connect(url)
        .await
        .context("connecting to PostgreSQL")?;
    let (n,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM orders o \
         JOIN unnest($1::text[], $2::text[]) AS k(seller_id, reference_id) \
         ON o.seller_id = k.seller_id AND o.reference_id = k.reference_id",
    )
    .bind(&sellers)
    .bind(&references)
    .fetch_one(&mut conn)
    .await
    .context("counting the orders of requests whose client gave up")?;
    conn.close().await.ok();
    Ok(u64::try_from(n).unwrap_or(0))
}
