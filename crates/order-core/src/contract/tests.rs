use super::*;

fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 30).unwrap()
}

fn valid() -> serde_json::Value {
    serde_json::json!({
        "reference_id": "ref-1",
        "payment": {"amount": 15000, "payment_method": {"type": "CREDIT_CARD", "installments": 3,
            "card": {"number": "4111111111111111", "holder": "ANA", "cvv": "123", "expiration_date": "11-2026"}}},
        "items": [{"name": "Keyboard", "quantity": 1, "value": 10000}, {"name": "Mouse", "quantity": 2, "value": 2500}],
        "customer": {"full_name": "Ana Silva", "tax_id": "12345678901", "address": {"street": "Rua A",
            "number": "10", "state": "SP", "city": "Sao Paulo", "locality": "Centro", "zip_code": "01000-000"}}
    })
}

fn check(body: &serde_json::Value) -> Result<ValidOrder, ApiError> {
    CreateOrderRequest::parse(&serde_json::to_vec(body).unwrap())?.validate(today())
}

fn field_of(err: ApiError) -> String {
    match err {
        ApiError::InvalidRequest { field, .. } => field,
        other => panic!("expected invalid_request, got {other:?}"),
    }
}

#[test]
fn the_sample_is_valid_until_the_end_of_its_month() {
    check(&valid()).unwrap();
}

#[test]
fn hash_ignores_layout_and_unknown_fields_but_not_values() {
    let a = check(&valid()).unwrap().request_hash;
    let mut extra = valid();
    extra["unknown"] = serde_json::json!(true);
    assert_eq!(a, check(&extra).unwrap().request_hash);
    let mut other = valid();
    other["customer"]["full_name"] = serde_json::json!("Bia");
    assert_ne!(a, check(&other).unwrap().request_hash);
}

#[test]
fn type_errors_name_the_field() {
    let mut body = valid();
    body["payment"]["amount"] = serde_json::json!("ten");
    assert_eq!(field_of(check(&body).unwrap_err()), "payment.amount");
    let mut body = valid();
    body["items"][1].as_object_mut().unwrap().remove("value");
    assert_eq!(field_of(check(&body).unwrap_err()), "items[1]");
}

#[test]
fn luhn() {
    assert!(luhn_valid("4111111111111111"));
    assert!(luhn_valid("79927398713"));
    assert!(!luhn_valid("4111111111111112"));
}

#[test]
fn card_debug_hides_number_and_cvv() {
    let body = check(&valid()).unwrap();
    let shown = format!("{:?}", body.request);
    assert!(
        !shown.contains("4111111111111111") && !shown.contains("\"123\""),
        "{shown}"
    );
    assert!(shown.contains("1111"));
}

proptest::proptest! {
    /// Whatever bytes arrive, parsing and validation return a value or a 400, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
        if let Err(e) = CreateOrderRequest::parse(&bytes).and_then(|r| r.validate(today())) {
            proptest::prop_assert_eq!(e.code(), "invalid_request");
        }
    }
}
