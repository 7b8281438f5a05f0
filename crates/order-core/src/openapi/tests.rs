//! The document against the code: every stable code is in it, each under its own status, with
//! `Retry-After` exactly where the server sends it.

use std::collections::BTreeSet;

use serde_json::Value;
use strum::IntoEnumIterator;

use super::*;

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
