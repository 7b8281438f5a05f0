//! The document against the code: every stable code is in it, each under its own status, with
//! `Retry-After` exactly where the server sends it.

use std::collections::BTreeSet;

use serde_json::Value;
use strum::IntoEnumIterator;

use super::*;
use crate::ApiError;

fn doc() -> Value {
    serde_json::from_str(json()).expect("the document is JSON")
}

/// Every response of every operation: (method, path, status, response).
fn responses(doc: &Value) -> Vec<(String, String, u16, Value)> {
    let mut all = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("path item") {
            for (status, response) in operation["responses"].as_object().expect("responses") {
                let status = status.parse().expect("numeric statuses only");
                all.push((method.clone(), path.clone(), status, response.clone()));
            }
        }
    }
    all
}

/// The stable codes a response's description names (words in backticks that are codes).
fn codes_named(response: &Value) -> BTreeSet<ErrorCode> {
    let description = response["description"].as_str().unwrap_or_default();
    description
        .split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|word| ErrorCode::iter().find(|code| code.as_str() == word))
        .collect()
}

fn body_schema(response: &Value) -> &str {
    response["content"]["application/json"]["schema"]["$ref"]
        .as_str()
        .unwrap_or_default()
}

fn has_header(response: &Value, name: &str) -> bool {
    response["headers"].get(name).is_some()
}

#[test]
fn serde_and_strum_spell_every_code_alike() {
    for code in ErrorCode::iter() {
        assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
    }
}

#[test]
fn the_error_code_schema_lists_every_code() {
    let doc = doc();
    let listed: BTreeSet<&str> = doc["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .expect("ErrorCode is an enum schema")
        .iter()
        .map(|v| v.as_str().expect("string codes"))
        .collect();
    let codes: BTreeSet<&str> = ErrorCode::iter().map(ErrorCode::as_str).collect();
    assert_eq!(listed, codes);
    assert_eq!(
        doc["components"]["schemas"]["ErrorBody"]["properties"]["error"]["$ref"],
        "#/components/schemas/ErrorCode"
    );
}

/// What is wrong with where the document puts each code: not named at all, or named under a
/// status other than the one it is sent with.
fn misplaced_codes(doc: &Value) -> Vec<String> {
    let all = responses(doc);
    let mut problems = Vec::new();
    for code in ErrorCode::iter() {
        let status = code.status().as_u16();
        let under = all
            .iter()
            .filter(|(.., response)| codes_named(response).contains(&code))
            .collect::<Vec<_>>();
        if under.is_empty() {
            problems.push(format!("no response names `{code}` ({status})"));
        }
        for (method, path, documented, _) in under {
            if *documented != status {
                problems.push(format!(
                    "{method} {path}: `{code}` is sent with {status}, documented under {documented}"
                ));
            }
        }
    }
    problems
}

#[test]
fn every_code_is_documented_under_its_status() {
    let problems = misplaced_codes(&doc());
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn error_responses_carry_the_error_body_and_retry_after_where_sent() {
    for (method, path, status, response) in responses(&doc()) {
        let codes = codes_named(&response);
        if body_schema(&response) != "#/components/schemas/ErrorBody" {
            // /ready's 503 names its codes in a `Probe`, which never carries Retry-After.
            assert!(status < 400 || path == "/ready", "{method} {path} {status}");
            continue;
        }
        assert!(!codes.is_empty(), "{method} {path} {status} names no code");
        let retry = codes.iter().any(|c| c.retry_after().is_some());
        assert!(
            codes.iter().all(|c| c.retry_after().is_some() == retry),
            "{method} {path} {status}: codes with and without Retry-After share a response"
        );
        assert_eq!(
            has_header(&response, "Retry-After"),
            retry,
            "{method} {path} {status}: Retry-After documented iff the server sends it"
        );
    }
}

/// Every path answers a method it does not route with 405 and an `Allow` naming the one it does
/// (RFC 9110 §15.5.6; `http::resource` sends it).
#[test]
fn every_path_documents_its_405_with_allow() {
    let doc = doc();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("path item") {
            let refused = &operation["responses"]["405"];
            assert_eq!(
                body_schema(refused),
                "#/components/schemas/ErrorBody",
                "{path}"
            );
            let allow = refused["headers"]["Allow"]["description"].as_str();
            let named = format!("`{}`", method.to_uppercase());
            assert!(
                allow.is_some_and(|d| d.starts_with(&named)),
                "{method} {path}: 405 without an `Allow` naming {named}"
            );
        }
    }
}

#[test]
fn a_created_order_documents_its_location_and_replay_headers() {
    let doc = doc();
    let created = &doc["paths"]["/orders"]["post"]["responses"]["201"];
    assert!(has_header(created, "Location"));
    assert!(has_header(created, "Idempotent-Replayed"));
    assert_eq!(
        body_schema(created),
        "#/components/schemas/OrderDocument",
        "{created}"
    );
    assert_eq!(
        doc["paths"]["/orders"]["post"]["security"][0][SELLER_TOKEN],
        serde_json::json!([])
    );
}

#[test]
fn the_check_sees_a_code_under_the_wrong_status() {
    let mut doc = doc();
    let responses = &mut doc["paths"]["/orders"]["post"]["responses"];
    responses["401"]["description"] = Value::from("`payment_declined`, wrongly");
    let misplaced = misplaced_codes(&doc);
    assert!(
        misplaced
            .iter()
            .any(|p| p.contains("`payment_declined` is sent with 402")),
        "{misplaced:#?}"
    );
}

#[test]
fn the_document_is_openapi_3_1_and_identical_each_time() {
    assert_eq!(doc()["openapi"], "3.1.0");
    assert_eq!(document().to_pretty_json().unwrap() + "\n", json());
}

/// The outcome of validating the committed sample order with the value at `pointer` replaced.
/// An amount comes with one item of that value, so that it still equals the items' sum.
fn sample_with(pointer: &str, value: Value) -> Result<(), ApiError> {
    let mut sample: Value =
        serde_json::from_str(include_str!("../../../../../docs/sample-order.json")).unwrap();
    if pointer == "/payment/amount" {
        sample["items"] = serde_json::json!([{"name": "a", "quantity": 1, "value": value}]);
    }
    *sample
        .pointer_mut(pointer)
        .expect("the sample has the field") = value;
    let key = crate::domain::request_hash::RequestHashKey::new(b"openapi-bounds-key");
    CreateOrderRequest::parse(&serde_json::to_vec(&sample).unwrap())?.validate(&key)?;
    Ok(())
}

/// A value as a failure names it: an array or a string by its length.
fn shown(value: &Value) -> String {
    match value {
        Value::Array(items) => format!("{} items", items.len()),
        Value::String(text) => format!("{} characters", text.chars().count()),
        other => other.to_string(),
    }
}

fn field_refused(result: Result<(), ApiError>) -> Option<String> {
    match result {
        Err(ApiError::InvalidRequest { field, .. }) => Some(field),
        _ => None,
    }
}

/// Every bound (`minimum`, `maximum`, `minLength`, `maxLength`, `minItems`, `maxItems`) the
/// request's schema documents, as (JSON pointer in the sample, field as an error names it,
/// property schema), reached from `schema` through references, first array items included.
fn bounded_fields(
    doc: &Value,
    schema: &Value,
    pointer: &str,
    field: &str,
) -> Vec<(String, String, Value)> {
    let mut found = Vec::new();
    for (name, property) in schema["properties"].as_object().expect("properties") {
        let (pointer, field) = (
            format!("{pointer}/{name}"),
            if field.is_empty() {
                name.clone()
            } else {
                format!("{field}.{name}")
            },
        );
        let bounded = [
            "minimum",
            "maximum",
            "minLength",
            "maxLength",
            "minItems",
            "maxItems",
        ];
        if bounded.iter().any(|b| property.get(b).is_some()) {
            found.push((pointer.clone(), field.clone(), property.clone()));
        }
        let nested = property["items"]["$ref"].as_str().map(|r| (r, "/0", "[0]"));
        let nested = nested.or(property["$ref"].as_str().map(|r| (r, "", "")));
        if let Some((reference, index_pointer, index_field)) = nested {
            let name = reference.rsplit('/').next().unwrap();
            let target = &doc["components"]["schemas"][name];
            let (pointer, field) = (pointer + index_pointer, field + index_field);
            found.extend(bounded_fields(doc, target, &pointer, &field));
        }
    }
    found
}

#[test]
fn the_documented_bounds_are_the_ones_validation_enforces() {
    let doc = doc();
    let request = &doc["components"]["schemas"]["CreateOrderRequest"];
    let fields = bounded_fields(&doc, request, "", "");
    assert!(fields.len() >= 15, "{fields:#?}");
    for (pointer, field, schema) in fields {
        let bound = |name: &str| schema[name].as_i64();
        let text = |n: i64| Value::from("a".repeat(usize::try_from(n).unwrap()));
        let items = |n: i64| {
            Value::from(vec![
                serde_json::json!({"name": "a", "quantity": 1, "value": 1});
                usize::try_from(n).unwrap()
            ])
        };
        let outside = [
            bound("minimum").map(|n| Value::from(n - 1)),
            bound("maximum").map(|n| Value::from(n + 1)),
            bound("minLength").filter(|n| *n > 0).map(|n| text(n - 1)),
            bound("maxLength").map(|n| text(n + 1)),
            bound("minItems").filter(|n| *n > 0).map(|n| items(n - 1)),
            bound("maxItems").map(|n| items(n + 1)),
        ];
        for value in outside.into_iter().flatten() {
            let refused = field_refused(sample_with(&pointer, value.clone()));
            assert_eq!(
                refused.as_deref(),
                Some(field.as_str()),
                "{field} = {}: accepted past its documented bound",
                shown(&value)
            );
        }
        // At the bound itself the field passes (another rule may still refuse the request: an
        // item's value or quantity at its bound makes the amount differ from the items' sum).
        let at = [
            bound("minimum").map(Value::from),
            bound("maximum").map(Value::from),
            bound("minLength").map(text),
            bound("maxLength").map(text),
            bound("minItems").map(items),
            bound("maxItems").map(items),
        ];
        for value in at.into_iter().flatten() {
            let refused = field_refused(sample_with(&pointer, value.clone()));
            assert_ne!(
                refused.as_deref(),
                Some(field.as_str()),
                "{field} = {}: refused at its documented bound",
                shown(&value)
            );
        }
    }
}
