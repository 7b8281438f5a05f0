//! Valid request bodies for the tests.

/// A token mock-deps resolves to seller `acme`.
pub const TOKEN: &str = "sk_acme";
/// Another seller's token.
pub const OTHER_TOKEN: &str = "sk_globex";

/// A valid order (amount 15000 = 1 × 10000 + 2 × 2500) with a distinctive card and CVV, so a
/// test can look for them in responses and rows.
pub fn valid_order(reference_id: &str) -> serde_json::Value {
    serde_json::json!({
        "reference_id": reference_id,
        "payment": {
            "amount": 15000,
            "payment_method": {
                "type": "CREDIT_CARD",
                "installments": 3,
                "card": {
                    "number": "4539578763621486",
                    "holder": "ANA SILVA",
                    "cvv": "7319",
                    "expiration_date": "12-2099"
                }
            }
        },
        "items": [
            {"name": "Keyboard", "quantity": 1, "value": 10000},
            {"name": "Mouse", "quantity": 2, "value": 2500}
        ],
        "customer": {
            "full_name": "Ana Silva",
            "tax_id": "12345678901",
            "address": {
                "street": "Rua A", "number": "10", "state": "SP", "city": "Sao Paulo",
                "locality": "Centro", "zip_code": "01000-000", "complement": "apto 1"
            }
        }
    })
}
