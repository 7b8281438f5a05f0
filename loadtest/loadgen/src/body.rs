//! Request bodies: valid, seed-shaped, randomised orders.
//!
//! Every order is one the APIs must accept (201): 1–3 items with `amount = Σ quantity × value`,
//! a Luhn-valid card whose CVV is never `000` (declined), a tax id that is never all zeros (risk
//! rejection), an amount far below the risk limit. Each gets a unique `reference_id`
//! (`<run id>-<sequence>`), and tokens are spread over `sk_seller-01 … sk_seller-NN`. With
//! `--duplicate-ratio`, that share of requests re-sends an earlier order byte for byte (same key,
//! same body, same seller), which the APIs must answer as a replay — or 409 while the first copy is
//! still in flight.
//!
//! The body is order-core's own `CreateOrderRequest`, the type both APIs parse, so the generator
//! cannot drift from the contract; the Luhn rule is order-core's too.

use std::sync::Arc;

use order_core::contract::{
    Address, Card, CreateOrderRequest, Customer, Item, Payment, PaymentMethod, luhn_valid,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// How many earlier orders are kept for re-sending.
const REPLAY_WINDOW: usize = 1024;

/// One request ready to send.
#[derive(Debug, Clone)]
pub struct OrderRequest {
    /// `Authorization` header value.
    pub token: Arc<str>,
    /// The idempotency key in the body.
    pub reference_id: Arc<str>,
    /// The JSON body.
    pub body: Arc<[u8]>,
    /// `true` when this re-sends an earlier order.
    pub duplicate: bool,
}

/// Generates the order stream of one run.
#[derive(Debug)]
pub struct BodyGen {
    run_id: String,
    sellers: u32,
    duplicate_ratio: f64,
    rng: SmallRng,
    seq: u64,
    recent: Vec<OrderRequest>,
}

impl BodyGen {
    /// `run_id` must be short `[A-Za-z0-9_-]` (it prefixes every key); `sellers` ≥ 1.
    pub fn new(run_id: &str, sellers: u32, duplicate_ratio: f64, seed: u64) -> Self {
        BodyGen {
            run_id: run_id.to_owned(),
            sellers: sellers.max(1),
            duplicate_ratio: duplicate_ratio.clamp(0.0, 1.0),
            rng: SmallRng::seed_from_u64(seed),
            seq: 0,
            recent: Vec::new(),
        }
    }

    /// The next request: a fresh order, or (with the duplicate ratio) an earlier one again.
    pub fn next_request(&mut self) -> OrderRequest {
        if !self.recent.is_empty() && self.rng.random_bool(self.duplicate_ratio) {
            let i = self.rng.random_range(0..self.recent.len());
            let mut again = self.recent[i].clone();
            again.duplicate = true;
            return again;
        }
        self.seq += 1;
        let reference_id = format!("{}-{:07}", self.run_id, self.seq);
        let seller = self.rng.random_range(1..=self.sellers);
        let order = random_order(&mut self.rng, &reference_id);
        let body: Arc<[u8]> = serde_json::to_vec(&order).expect("orders serialise").into();
        let request = OrderRequest {
            token: format!("sk_seller-{seller:02}").into(),
            reference_id: reference_id.into(),
            body,
            duplicate: false,
        };
        if self.duplicate_ratio > 0.0 {
            if self.recent.len() < REPLAY_WINDOW {
                self.recent.push(request.clone());
            } else {
                let slot = (self.seq as usize) % REPLAY_WINDOW;
                self.recent[slot] = request.clone();
            }
        }
        request
    }
}

const PRODUCTS: &[&str] = &[
    "Keyboard", "Mouse", "Monitor", "Headset", "Webcam", "Dock", "Cable",
];
const FIRST: &[&str] = &[
    "Ana", "Bruno", "Carla", "Diego", "Elisa", "Fabio", "Gabriela", "Hugo",
];
const LAST: &[&str] = &[
    "Silva", "Souza", "Costa", "Oliveira", "Pereira", "Lima", "Alves",
];
const CITIES: &[(&str, &str)] = &[
    ("Sao Paulo", "SP"),
    ("Rio de Janeiro", "RJ"),
    ("Curitiba", "PR"),
];

fn random_order(rng: &mut SmallRng, reference_id: &str) -> CreateOrderRequest {
    // The ranges keep their original integer types (u64, u32): the same seed draws the same
    // orders as before the body used order-core's types.
    let items: Vec<Item> = (0..rng.random_range(1..=3))
        .map(|_| Item {
            name: PRODUCTS[rng.random_range(0..PRODUCTS.len())].to_owned(),
            quantity: cents(rng.random_range(1..=3u64)),
            value: cents(rng.random_range(500..=50_000u64)),
        })
        .collect();
    let amount = items.iter().map(|i| i.quantity * i.value).sum();
    let first = FIRST[rng.random_range(0..FIRST.len())];
    let last = LAST[rng.random_range(0..LAST.len())];
    let (city, state) = CITIES[rng.random_range(0..CITIES.len())];
    CreateOrderRequest {
        reference_id: reference_id.to_owned(),
        payment: Payment {
            amount,
            payment_method: PaymentMethod {
                kind: "CREDIT_CARD".to_owned(),
                installments: i64::from(rng.random_range(1..=12u32)),
                card: Card {
                    number: luhn_card(rng),
                    holder: format!("{} {}", first, last).to_uppercase(),
                    cvv: format!("{:03}", rng.random_range(1..=999)),
                    expiration_date: format!(
                        "{:02}-{}",
                        rng.random_range(1..=12),
                        rng.random_range(2030..=2035)
                    ),
                },
            },
        },
        items,
        customer: Customer {
            full_name: format!("{first} {last}"),
            // First digit 1–9: never all zeros.
            tax_id: format!(
                "{}{:010}",
                rng.random_range(1..=9),
                rng.random_range(0..10_000_000_000u64)
            ),
            address: Address {
                street: "Rua A".to_owned(),
                number: rng.random_range(1..=2000).to_string(),
                state: state.to_owned(),
                city: city.to_owned(),
                locality: "Centro".to_owned(),
                zip_code: format!(
                    "{:05}-{:03}",
                    rng.random_range(1000..=99_999),
                    rng.random_range(0..1000)
                ),
                complement: Some("apto 1".to_owned()),
            },
        },
    }
}

/// A generated count or amount as the contract's integer (the generator's ranges are far below
/// `i64::MAX`).
fn cents(v: u64) -> i64 {
    i64::try_from(v).expect("generated amounts fit in i64")
}

/// A 16-digit Visa-like number with a valid Luhn check digit.
fn luhn_card(rng: &mut SmallRng) -> String {
    let mut digits: Vec<u32> = vec![4];
    digits.extend((0..14).map(|_| rng.random_range(0..10)));
    digits.push(luhn_check_digit(&digits));
    digits
        .iter()
        .map(|d| char::from_digit(*d, 10).expect("digit"))
        .collect()
}

/// The digit that makes `payload ++ [digit]` pass the Luhn check, found with order-core's
/// [`luhn_valid`] (the APIs' own rule) rather than a second implementation of it.
pub fn luhn_check_digit(payload: &[u32]) -> u32 {
    let prefix: String = payload
        .iter()
        .map(|d| char::from_digit(*d, 10).expect("digit"))
        .collect();
    (0..10)
        .find(|d| luhn_valid(&format!("{prefix}{d}")))
        .expect("one of ten digits completes a Luhn number")
}

#[cfg(test)]
#[path = "body_tests.rs"]
mod tests;
