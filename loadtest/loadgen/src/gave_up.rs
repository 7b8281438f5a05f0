//! Requests whose client gave up, by key, and the orders the API made for them anyway.
//!
//! A thread-per-request server that queues without bound keeps working on requests whose client
//! has long timed out: it reserves, charges and creates orders nobody will ever see answered.
//! Counting the extra rows (`orders − 201s`) says how many; matching keys says which, so the lab
//! records, per run, every key whose client gave up (timeout, broken or refused connection) and
//! never got a 201 for it from another request (a duplicate), and asks `orders` for those keys once
//! the API is idle and before the lab empties the tables. This module keeps the keys; the lab
//! counts their orders (`loadtest/cli/src/gave_up.rs`).

use std::collections::HashSet;
use std::sync::Arc;

use crate::body::OrderRequest;
use lab_results::{
    OUTCOME_CONNECT_ERROR, OUTCOME_CREATED, OUTCOME_IO_ERROR, OUTCOME_REPLAYED, OUTCOME_TIMEOUT,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn request(seller: &str, reference: &str) -> OrderRequest {
        OrderRequest {
            token: format!("sk_{seller}").into(),
            reference_id: reference.into(),
            body: Arc::from(&b"{}"[..]),
            duplicate: false,
            jitter_seed: 0,
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
