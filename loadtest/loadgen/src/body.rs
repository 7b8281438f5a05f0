//! Request bodies: valid, seed-shaped, randomised orders.
//!
//! Every order is one the APIs must accept (201): 1–3 items with `amount = Σ quantity × value`,
//! a Luhn-valid card whose CVV is never `000` (declined), a tax id that is never all zeros (risk
//! rejection), an amount far below the risk limit. Each gets a unique `reference_id`
//! (`<run id>-<arrival index + 1>`), and tokens are spread over `sk_seller-01 … sk_seller-NN`. With
//! `--duplicate-ratio`, that share of arrivals re-sends an earlier arrival's order byte for byte (same key,
//! same body, same seller), which the APIs must answer as a replay — or 409 while the first copy is
//! still in flight.
//!
//! The body is order-core's own `CreateOrderRequest`, the type both APIs parse, so the generator
//! cannot drift from the contract; the Luhn rule is order-core's too.

use std::sync::Arc;

use order_core::domain::contract::{
    Address, Card, CreateOrderRequest, Customer, Item, Payment, PaymentMethod, luhn_valid,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::shard::arrival_seed;

/// How far back (in arrivals) a duplicate may reach for the order it re-sends.
const REPLAY_WINDOW: u64 = 1024;

/// [`crate::shard::arrival_seed`] streams: independent draws of one arrival.
const STREAM_BODY: u64 = 1;
const STREAM_DUPLICATE: u64 = 2;
const STREAM_JITTER: u64 = 3;

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
    /// Seed of this arrival's retry jitter (drawn from the run's seed and the arrival's index, like
    /// everything else about it).
    pub jitter_seed: u64,
}

/// The order stream of one run: arrival `j`'s request is a pure function of `(seed, j)`, so any
/// shard of the schedule can make its own arrivals without the others (see [`crate::shard`]).
#[derive(Debug, Clone)]
pub struct BodyGen {
    run_id: String,
    sellers: u32,
    duplicate_ratio: f64,
    seed: u64,
}

impl BodyGen {
    /// `run_id` must be short `[A-Za-z0-9_-]` (it prefixes every key); `sellers` ≥ 1.
    pub fn new(run_id: &str, sellers: u32, duplicate_ratio: f64, seed: u64) -> Self {
        BodyGen {
            run_id: run_id.to_owned(),
            sellers: sellers.max(1),
            duplicate_ratio: duplicate_ratio.clamp(0.0, 1.0),
            seed,
        }
    }

    /// Arrival `j`'s request: a fresh order keyed `<run id>-<j + 1>`, or (with the duplicate
    /// ratio) an earlier arrival's fresh order again, byte for byte.
    pub fn request(&self, j: u64) -> OrderRequest {
        let source = self.source(j);
        let mut request = self.fresh(source);
        request.duplicate = source != j;
        request.jitter_seed = arrival_seed(self.seed, j, STREAM_JITTER);
        request
    }

    /// The arrival whose fresh order `j` sends: itself, or — a duplicate — one of the
    /// [`REPLAY_WINDOW`] arrivals before it, followed back until an arrival that was fresh.
    fn source(&self, j: u64) -> u64 {
        let mut j = j;
        while j > 0 && self.duplicate_ratio > 0.0 {
            let mut rng = self.rng(j, STREAM_DUPLICATE);
            if !rng.random_bool(self.duplicate_ratio) {
                break;
            }
            j = rng.random_range(j.saturating_sub(REPLAY_WINDOW)..j);
        }
        j
    }

    fn fresh(&self, j: u64) -> OrderRequest {
        let mut rng = self.rng(j, STREAM_BODY);
        let reference_id = format!("{}-{:07}", self.run_id, j + 1);
        let seller = rng.random_range(1..=self.sellers);
        let order = random_order(&mut rng, &reference_id);
        OrderRequest {
            token: format!("sk_seller-{seller:02}").into(),
            reference_id: reference_id.into(),
            body: serde_json::to_vec(&order).expect("orders serialise").into(),
            duplicate: false,
            jitter_seed: 0,
        }
    }

    fn rng(&self, j: u64, stream: u64) -> SmallRng {
        SmallRng::seed_from_u64(arrival_seed(self.seed, j, stream))
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
