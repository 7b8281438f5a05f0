//! Property: whatever body arrives, neither API answers 5xx (a 5xx other than 503 is a bug).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;
use testkit::{Api, TOKEN, TestApp, valid_order};

/// Every path to a value in the valid body, as JSON pointers.
fn leaf_pointers(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => map
            .iter()
            .for_each(|(k, v)| leaf_pointers(v, format!("{at}/{k}"), out)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, v)| leaf_pointers(v, format!("{at}/{i}"), out)),
        _ => {}
    }
    out.push(at);
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,80}".prop_map(Value::from),
        "[0-9]{0,25}".prop_map(Value::from),
        (0usize..5000).prop_map(|n| Value::from("é".repeat(n))),
    ];
    leaf.prop_recursive(2, 8, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map("[a-z_]{1,12}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A valid body with one value replaced or removed, or plain random bytes.
fn mutated_body() -> impl Strategy<Value = Vec<u8>> {
    let mut pointers = Vec::new();
    leaf_pointers(&valid_order("fuzz"), String::new(), &mut pointers);
    let mutation = (
        proptest::sample::select(pointers),
        any_json(),
        any::<bool>(),
        "[A-Za-z0-9_-]{1,64}",
    )
        .prop_map(|(pointer, replacement, remove, reference)| {
            let mut body = valid_order(&reference);
            if pointer.is_empty() {
                return serde_json::to_vec(&replacement).unwrap();
            }
            let (parent, key) = pointer.rsplit_once('/').unwrap();
            if let Some(target) = body.pointer_mut(parent) {
                match (target, key.parse::<usize>()) {
                    (Value::Array(items), Ok(i)) if remove => {
                        items.remove(i);
                    }
                    (Value::Array(items), Ok(i)) => items[i] = replacement,
                    (Value::Object(map), _) if remove => {
                        map.remove(key);
                    }
                    (Value::Object(map), _) => {
                        map.insert(key.to_owned(), replacement);
                    }
                    _ => {}
                }
            }
            serde_json::to_vec(&body).unwrap()
        });
    prop_oneof![
        4 => mutation,
        1 => proptest::collection::vec(any::<u8>(), 0..300),
    ]
}

fn never_5xx(api: Api) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let app = rt.block_on(TestApp::spawn(api));
    let mut runner = TestRunner::new(Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&mutated_body(), |body| {
            let response = rt.block_on(app.post_raw(Some(TOKEN), Some("application/json"), body));
            let status = response.status().as_u16();
            let text = rt.block_on(response.text()).unwrap();
            prop_assert!(status < 500, "{api:?} answered {status}: {text}");
            let json: Value = serde_json::from_str(&text).unwrap();
            prop_assert!(status == 201 || json["error"].is_string(), "{text}");
            Ok(())
        })
        .unwrap();
    rt.block_on(async { drop(app) });
}

#[test]
fn blocking_random_bodies_never_5xx() {
    never_5xx(Api::Blocking);
}

#[test]
fn reactive_random_bodies_never_5xx() {
    never_5xx(Api::Reactive);
}
