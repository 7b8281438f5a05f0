use super::*;
use crate::domain::request_hash::{StoredForm, stored_form};

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

fn key() -> RequestHashKey {
    RequestHashKey::new(b"test-key-0123456789")
}

fn check(body: &serde_json::Value) -> Result<ValidOrder, ApiError> {
    let order = CreateOrderRequest::parse(&serde_json::to_vec(body).unwrap())?.validate(&key())?;
    order.check_expiry(today())?;
    Ok(order)
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
fn hash_is_keyed_and_leaves_the_cvv_out() {
    let a = check(&valid()).unwrap().request_hash;
    let other_key = RequestHashKey::new(b"another-key-0123456");
    let body = serde_json::to_vec(&valid()).unwrap();
    let b = CreateOrderRequest::parse(&body)
        .unwrap()
        .validate(&other_key)
        .unwrap();
    assert_ne!(a, b.request_hash, "the key changes the hash");
    let mut cvv = valid();
    cvv["payment"]["payment_method"]["card"]["cvv"] = serde_json::json!("999");
    let with_other_cvv = check(&cvv).unwrap();
    assert_eq!(
        a, with_other_cvv.request_hash,
        "the cvv is not part of the hash"
    );
    assert_eq!(
        with_other_cvv.request.payment.payment_method.card.cvv,
        "999"
    );
}

#[test]
fn expiry_is_checked_apart_from_the_rest() {
    let mut body = valid();
    body["payment"]["payment_method"]["card"]["expiration_date"] = serde_json::json!("10-2026");
    let order = CreateOrderRequest::parse(&serde_json::to_vec(&body).unwrap())
        .unwrap()
        .validate(&key())
        .expect("an expired card is still a well-formed request");
    let err = order.check_expiry(today()).unwrap_err();
    assert_eq!(field_of(err), "payment.payment_method.card.expiration_date");
    body["payment"]["payment_method"]["card"]["expiration_date"] = serde_json::json!("13-2026");
    assert_eq!(
        field_of(check(&body).unwrap_err()),
        "payment.payment_method.card.expiration_date"
    );
}

#[test]
fn errors_never_echo_the_values_sent() {
    let cases = [
        ("number", serde_json::json!(4539578763621486_u64)),
        ("number", serde_json::json!(["4539578763621486"])),
        ("cvv", serde_json::json!(7319)),
        ("cvv", serde_json::json!({"x": "7319"})),
    ];
    for (field, value) in cases {
        let mut body = valid();
        body["payment"]["payment_method"]["card"][field] = value.clone();
        let err = check(&body).unwrap_err();
        let text = err.body();
        assert!(
            !text.contains("4539578763621486") && !text.contains("7319"),
            "{text}"
        );
        assert_eq!(err.code(), "invalid_request", "{value}");
    }
    let mut body = valid();
    body["payment"]["amount"] = serde_json::json!("4539578763621486");
    let text = check(&body).unwrap_err().body();
    assert!(!text.contains("4539578763621486"), "{text}");
    assert!(
        text.contains("expected i64"),
        "the type is still named: {text}"
    );
}

#[test]
fn redaction_keeps_names_and_positions() {
    assert_eq!(
        redact_values("missing field `reference_id` at line 1 column 1234"),
        "missing field `reference_id` at line 1 column 1234"
    );
    assert_eq!(
        redact_values("invalid type: integer `123`, expected a string"),
        "invalid type: integer `…`, expected a string"
    );
    assert_eq!(redact_values("bad \"4539 5787"), "bad \"…");
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
        if let Err(e) = CreateOrderRequest::parse(&bytes).and_then(|r| r.validate(&key())) {
            proptest::prop_assert_eq!(e.code(), "invalid_request");
        }
    }
}

/// A body whose unknown key holds card digits and whose value under it does not parse: the
/// error's `field` would otherwise be that key.
fn with_bad_value_under(key: &str) -> Vec<u8> {
    let text = valid().to_string();
    let open = &text[..text.len() - 1];
    format!(r#"{open},"{key}":[1,}}"#).into_bytes()
}

#[test]
fn a_key_holding_digits_is_never_named() {
    for key in ["4539578763621486", "card 4539 5787 6362 1486", "x1"] {
        let err = CreateOrderRequest::parse(&with_bad_value_under(key)).unwrap_err();
        let field = field_of(err);
        assert!(
            !field.bytes().any(|b| b.is_ascii_digit()),
            "{key:?} named as {field:?}"
        );
    }
    let field = field_of(CreateOrderRequest::parse(&with_bad_value_under("extra")).unwrap_err());
    assert_eq!(field, "extra", "a key without digits is still named");
}

#[test]
fn the_json_hash_of_an_earlier_version_is_the_same_request() {
    let order = check(&valid()).unwrap();
    let mut request = order.request.clone();
    request.payment.payment_method.card.cvv.clear();
    let legacy = key().json_hash(&request);
    assert_ne!(legacy, order.request_hash, "the canonical form changed");
    assert!(order.is_same_request(&order.request_hash, &key()));
    assert!(order.is_same_request(&legacy, &key()));
    let mut other = valid();
    other["customer"]["full_name"] = serde_json::json!("Bia");
    let other = check(&other).unwrap();
    assert!(!other.is_same_request(&legacy, &key()));
    assert!(!order.is_same_request(&other.request_hash, &key()));
    let other_key = RequestHashKey::new(b"another-key-0123456");
    assert!(!order.is_same_request(&legacy, &other_key));
}

/// The canonical form's hash of the sample under the test key. A change of this value is a new
/// form: it goes in over two releases (the first computes it and still writes the old one, the
/// second writes it tagged `<form>:<hex>`), see `request_hash`.
#[test]
fn the_canonical_form_is_pinned() {
    let order = check(&valid()).unwrap();
    assert_eq!(order.request_hash, PINNED_HASH);
    assert_eq!(stored_form(&order.request_hash), StoredForm::Known);
    assert_eq!(stored_form(&format!("3:{PINNED_HASH}")), StoredForm::Newer);
}

const PINNED_HASH: &str = "8e4f54f472b94aa8c101ecf33bde55dc38dc83ccf07845cc77a75e2274a5efad";

#[test]
fn a_failed_parse_still_names_the_field() {
    let mut body = valid();
    body["payment"]["amount"] = serde_json::json!("4111111111111111");
    let err = CreateOrderRequest::parse(&serde_json::to_vec(&body).unwrap()).unwrap_err();
    match err {
        ApiError::InvalidRequest { field, detail } => {
            assert_eq!(field, "payment.amount");
            assert!(!detail.contains("4111"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
}
