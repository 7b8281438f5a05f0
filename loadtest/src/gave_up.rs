//! Requests whose client gave up, by key, and the orders the API made for them anyway.
//!
//! A thread-per-request server that queues without bound keeps working on requests whose client
//! has long timed out: it reserves, charges and creates orders nobody will ever see answered.
//! Counting the extra rows (`orders − 201s`) says how many; matching keys says which, so the lab
//! records, per run, every key whose client gave up (timeout, broken or refused connection) and
//! never got a 201 for it from another request (a duplicate), and asks `orders` for those keys once
//! the API is idle and before the lab empties the tables.

use std::collections::HashSet;
use std::sync::Arc;

use anyhow::{Context, Result};
use sqlx::Connection;

use crate::body::OrderRequest;
use lab_results::{
    AfterGiveUp, OUTCOME_CONNECT_ERROR, OUTCOME_CREATED, OUTCOME_IO_ERROR, OUTCOME_REPLAYED,
    OUTCOME_TIMEOUT,
};

/// The outcomes after which the client stopped waiting without an answer.
pub const GAVE_UP: &[&str] = &[OUTCOME_TIMEOUT, OUTCOME_IO_ERROR, OUTCOME_CONNECT_ERROR];

/// An order's identity in the database: `orders (seller_id, reference_id)` is unique.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OrderKey {
    pub seller_id: String,
    pub reference_id: String,
}

/// (token, reference_id) as sent; the seller id is derived only when the keys are read.
type Sent = (Arc<str>, Arc<str>);

/// The keys of a run, by what their client saw.
#[derive(Debug, Clone, Default)]
pub struct ClientKeys {
    gave_up: HashSet<Sent>,
    answered: HashSet<Sent>,
}

impl ClientKeys {
    /// Notes how a request for `request`'s key ended.
    pub fn note(&mut self, request: &OrderRequest, outcome: &str) {
        let key = (request.token.clone(), request.reference_id.clone());
        if outcome == OUTCOME_CREATED || outcome == OUTCOME_REPLAYED {
            self.answered.insert(key);
        } else if GAVE_UP.contains(&outcome) {
            self.gave_up.insert(key);
        }
    }

    /// Keys whose client gave up and that no request of the run got a 201 for, sorted.
    pub fn abandoned(&self) -> Vec<OrderKey> {
        let mut keys: Vec<OrderKey> = self
            .gave_up
            .difference(&self.answered)
            .map(|(token, reference_id)| OrderKey {
                seller_id: seller_id(token).to_owned(),
                reference_id: reference_id.to_string(),
            })
            .collect();
        keys.sort();
        keys
    }
}

/// `sk_<seller_id>` (optionally after `Bearer `) → `<seller_id>`, as the APIs resolve it.
fn seller_id(token: &str) -> &str {
    let token = token.strip_prefix("Bearer ").unwrap_or(token);
    token.strip_prefix("sk_").unwrap_or(token)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn request(seller: &str, reference: &str) -> OrderRequest {
        OrderRequest {
            token: format!("sk_{seller}").into(),
            reference_id: reference.into(),
            body: Arc::from(&b"{}"[..]),
            duplicate: false,
        }
    }

    #[test]
    fn a_key_answered_by_any_request_is_not_abandoned() {
        let mut keys = ClientKeys::default();
        keys.note(&request("seller-01", "r-1"), OUTCOME_TIMEOUT);
        keys.note(&request("seller-02", "r-2"), OUTCOME_TIMEOUT);
        keys.note(&request("seller-02", "r-2"), OUTCOME_REPLAYED); // a duplicate got the answer
        keys.note(&request("seller-03", "r-3"), OUTCOME_CREATED);
        keys.note(&request("seller-04", "r-4"), "overloaded"); // answered: refused, not given up
        keys.note(&request("seller-05", "r-5"), OUTCOME_IO_ERROR);
        let abandoned = keys.abandoned();
        assert_eq!(
            abandoned,
            [
                OrderKey {
                    seller_id: "seller-01".into(),
                    reference_id: "r-1".into()
                },
                OrderKey {
                    seller_id: "seller-05".into(),
                    reference_id: "r-5".into()
                },
            ]
        );
        assert_eq!(seller_id("Bearer sk_acme"), "acme");
    }
}
