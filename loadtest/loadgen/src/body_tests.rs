//! The generated orders are valid, unique and consistent.

use super::*;
use std::collections::HashSet;

fn parse(r: &OrderRequest) -> serde_json::Value {
    serde_json::from_slice(&r.body).unwrap()
}

#[test]
fn luhn() {
    assert!(luhn_valid("4111111111111111"));
    assert!(!luhn_valid("4111111111111112"));
    assert_eq!(luhn_check_digit(&[7, 9, 9, 2, 7, 3, 9, 8, 7, 1]), 3);
}

#[test]
fn orders_are_valid_and_unique() {
    let g = BodyGen::new("t1", 8, 0.0, 42);
    let mut keys = HashSet::new();
    let mut sellers = HashSet::new();
    for j in 0..2000 {
        let r = g.request(j);
        let v = parse(&r);
        assert!(!r.duplicate);
        assert_eq!(v["reference_id"], &*r.reference_id);
        assert!(keys.insert(r.reference_id.clone()), "duplicate key");
        assert!(r.reference_id.len() <= 64);
        sellers.insert(r.token.clone());
        let items = v["items"].as_array().unwrap();
        assert!((1..=3).contains(&items.len()));
        let sum: u64 = items
            .iter()
            .map(|i| i["quantity"].as_u64().unwrap() * i["value"].as_u64().unwrap())
            .sum();
        assert_eq!(v["payment"]["amount"].as_u64().unwrap(), sum);
        assert!(sum <= 5_000_000);
        let card = &v["payment"]["payment_method"]["card"];
        assert!(luhn_valid(card["number"].as_str().unwrap()));
        assert_ne!(card["cvv"], "000");
        assert!(
            v["customer"]["tax_id"]
                .as_str()
                .unwrap()
                .chars()
                .any(|c| c != '0')
        );
        assert_eq!(v["customer"]["tax_id"].as_str().unwrap().len(), 11);
    }
    assert_eq!(sellers.len(), 8);
    assert!(sellers.contains("sk_seller-01") && sellers.contains("sk_seller-08"));
}

#[test]
fn duplicates_resend_earlier_orders_byte_for_byte() {
    let g = BodyGen::new("t2", 4, 0.2, 7);
    let mut seen = std::collections::HashMap::new();
    let mut dups = 0;
    for j in 0..5000 {
        let r = g.request(j);
        if r.duplicate {
            dups += 1;
            let (token, body) = &seen[&r.reference_id];
            assert_eq!(token, &r.token);
            assert_eq!(body, &r.body);
        } else {
            seen.insert(r.reference_id.clone(), (r.token.clone(), r.body.clone()));
        }
    }
    assert!((800..1200).contains(&dups), "{dups}");
}

/// Every generated order passes the APIs' own validation (order-core's `validate`), the rule the
/// body generator promises: each request the lab sends is one the APIs must accept.
#[test]
fn orders_pass_the_contracts_validation() {
    let key = order_core::domain::request_hash::RequestHashKey::development();
    let today = chrono::Utc::now().date_naive();
    let g = BodyGen::new("t-valid", 4, 0.0, 7);
    for j in 0..500 {
        let r = g.request(j);
        let parsed = CreateOrderRequest::parse(&r.body).expect("the body parses");
        let valid = parsed.validate(&key).expect("a valid order");
        valid.check_expiry(today).expect("an unexpired card");
        assert_eq!(valid.request.reference_id, &*r.reference_id);
    }
}

#[test]
fn an_arrivals_request_depends_on_the_seed_and_its_index_only() {
    let g = BodyGen::new("t3", 4, 0.3, 11);
    let forwards: Vec<OrderRequest> = (0..300).map(|j| g.request(j)).collect();
    for j in (0..300).rev() {
        let again = g.request(j);
        let first = &forwards[j as usize];
        assert_eq!(
            (&again.reference_id, &again.body, &again.token),
            (&first.reference_id, &first.body, &first.token)
        );
        assert_eq!(again.jitter_seed, first.jitter_seed);
    }
    let other_seed = BodyGen::new("t3", 4, 0.3, 12).request(5);
    assert_ne!(
        other_seed.body, forwards[5].body,
        "the seed shapes the bodies"
    );
}
