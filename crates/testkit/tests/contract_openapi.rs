//! `GET /openapi.json`: the same bytes from both APIs, equal to the committed `docs/openapi.json`,
//! and every route the APIs register is a path of the document (and routed by both).
//!
//! The document itself is built from order-core's types ([`order_core::plumbing::openapi`]); whether each
//! stable code sits under its status is checked there, against `ErrorCode`.

use std::collections::BTreeSet;
use std::path::Path;

use testkit::{Api, TestApp, contract_tests};

contract_tests!(every_path_refuses_an_undeclared_method_with_allow);

const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
const REGENERATE: &str = "regenerate it with `cargo run -p order-core --example openapi > docs/openapi.json` \
     (or run this test with UPDATE_OPENAPI=1)";

fn committed() -> String {
    std::fs::read_to_string(COMMITTED).unwrap_or_else(|e| panic!("{COMMITTED}: {e}; {REGENERATE}"))
}

/// The documented (path, method) pairs.
fn operations(document: &str) -> Vec<(String, String)> {
    let doc: serde_json::Value = serde_json::from_str(document).expect("the document is JSON");
    let paths = doc["paths"].as_object().expect("paths");
    paths
        .iter()
        .flat_map(|(path, item)| {
            let methods = item.as_object().expect("path item").keys();
            methods.map(move |method| (path.clone(), method.to_uppercase()))
        })
        .collect()
}

#[test]
fn the_committed_document_is_current() {
    let built = order_core::plumbing::openapi::json();
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(COMMITTED, built).expect("writing docs/openapi.json");
    }
    assert!(
        committed() == built,
        "docs/openapi.json differs from the document the code builds: {REGENERATE}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_apis_serve_the_committed_document_byte_for_byte() {
    let mut served = Vec::new();
    for api in [Api::Blocking, Api::Reactive] {
        let app = TestApp::spawn(api).await;
        let response = app.get("/openapi.json", None).await;
        assert_eq!(response.status(), 200, "{api:?}");
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(content_type, "application/json", "{api:?}");
        served.push(response.bytes().await.expect("the body"));
    }
    assert!(
        served[0] == served[1],
        "blocking-api and reactive-api serve different /openapi.json"
    );
    assert!(
        served[0] == committed().as_bytes(),
        "/openapi.json differs from docs/openapi.json: {REGENERATE}"
    );
}

/// The route paths registered in `file`: the literals opening `resource("…"` (`web::resource`,
/// `http::resource`) and `.route("…",`, rustfmt's line break after the parenthesis included.
fn registered_in(file: &str) -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut routes = BTreeSet::new();
    for opening in ["resource(", ".route("] {
        for (at, _) in text.match_indices(opening) {
            let rest = text[at + opening.len()..].trim_start();
            let Some(rest) = rest.strip_prefix('"') else {
                continue; // not a literal: `web::resource(path)` inside `http::resource`
            };
            let end = rest.find('"').expect("a closed string literal");
            routes.insert(rest[..end].to_owned());
        }
    }
    routes
}

/// Where the routes are registered: the shared route table and the shared `/health` and
/// `/openapi.json`; each API's `routes.rs` and `startup.rs` only pass their handlers to it.
const ROUTE_FILES: [&str; 2] = [
    "crates/order-core/src/plumbing/server.rs",
    "crates/order-core/src/plumbing/http.rs",
];
const API_FILES: [&str; 4] = [
    "blocking-api/src/routes.rs",
    "blocking-api/src/startup.rs",
    "reactive-api/src/routes.rs",
    "reactive-api/src/startup.rs",
];

#[test]
fn every_registered_route_is_a_documented_path() {
    let registered: BTreeSet<String> = ROUTE_FILES.iter().flat_map(|f| registered_in(f)).collect();
    assert!(registered.contains("/orders/{id}"), "{registered:?}");
    for file in API_FILES {
        let own = registered_in(file);
        assert!(
            own.is_empty(),
            "{file} registers routes of its own: {own:?}"
        );
    }
    let documented: BTreeSet<String> = operations(order_core::plumbing::openapi::json())
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    assert_eq!(registered, documented);
}

#[test]
fn the_route_scan_sees_a_route_added() {
    let text = "web::resource(\"/orders\") .route(\"/refunds\", web::post().to(refund)) \
        resource(\n    \"/returns\", Method::POST, r) web::resource(path)";
    let dir = std::env::temp_dir().join(format!("openapi-scan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("routes.rs"), text).unwrap();
    let scanned = registered_in(dir.join("routes.rs").to_str().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    let expected: BTreeSet<String> = ["/orders", "/refunds", "/returns"].map(String::from).into();
    assert_eq!(scanned, expected);
}

/// Each documented operation, asked of each API, reaches a registered route: the API's metrics
/// count it under the path's own pattern, not as `unmatched`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_apis_route_every_documented_operation() {
    let operations = operations(order_core::plumbing::openapi::json());
    for api in [Api::Blocking, Api::Reactive] {
        let app = TestApp::spawn(api).await;
        for (path, method) in &operations {
            let url = format!("{}{}", app.address, path.replace("{id}", "ORDER_NONE"));
            let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
            app.client
                .request(method, url)
                .header("Authorization", testkit::TOKEN)
                .header("Content-Type", "application/json")
                .body("{}")
                .send()
                .await
                .expect("the request");
        }
        let metrics = app.get("/metrics", None).await.text().await.unwrap();
        for (path, method) in &operations {
            let counted = metrics.lines().any(|line| {
                line.starts_with("http_requests_total{")
                    && line.contains(&format!("route=\"{path}\""))
                    && line.contains(&format!("method=\"{method}\""))
            });
            // `GET /metrics` counts itself after it renders: the one in the loop above is in
            // this scrape.
            assert!(counted, "{api:?}: {method} {path} was not routed to {path}");
        }
    }
}

/// Every schema `schema` leads to, `$ref`s resolved by oas3 (a dangling one fails).
fn resolve_all(schema: &oas3::spec::Schema, spec: &oas3::Spec, at: &str) -> usize {
    use oas3::spec::{ObjectOrReference, Schema};
    let resolved = schema.resolve(spec).unwrap_or_else(|e| panic!("{at}: {e}"));
    let Schema::Object(object) = resolved else {
        return 1;
    };
    let ObjectOrReference::Object(object) = object.as_ref() else {
        panic!("{at}: a reference resolved to a reference");
    };
    let nested = object.properties.values();
    let nested = nested.chain(&object.one_of).chain(&object.all_of);
    1 + nested
        .chain(object.items.as_deref())
        .map(|s| resolve_all(s, spec, at))
        .sum::<usize>()
}

#[test]
fn the_committed_document_is_openapi_3_1_with_every_reference_resolved() {
    let spec = oas3::from_json(committed()).expect("docs/openapi.json parses as OpenAPI 3.1");
    let version = spec
        .validate_version()
        .expect("a supported OpenAPI version");
    assert_eq!((version.major, version.minor), (3, 1));
    let mut schemas = 0;
    for (path, method, operation) in spec.operations() {
        let at = format!("{method} {path}");
        let bodies = operation.request_body.iter().map(|body| {
            let body = body.resolve(&spec).unwrap_or_else(|e| panic!("{at}: {e}"));
            body.content
        });
        let responses = operation
            .responses
            .iter()
            .flatten()
            .map(|(status, response)| {
                let response = response
                    .resolve(&spec)
                    .unwrap_or_else(|e| panic!("{at} {status}: {e}"));
                for (name, header) in &response.headers {
                    header
                        .resolve(&spec)
                        .unwrap_or_else(|e| panic!("{at} {status} {name}: {e}"));
                }
                response.content
            });
        for content in bodies.chain(responses).collect::<Vec<_>>() {
            for media in content.values() {
                let schema = media.schema.as_ref().expect("every content has a schema");
                schemas += resolve_all(schema, &spec, &at);
            }
        }
    }
    assert_eq!(spec.operations().count(), operations(&committed()).len());
    assert!(schemas > 50, "the walk reached {schemas} schemas");
}

/// Every documented path, asked with each method it does not document, answers 405
/// `method_not_allowed` with an `Allow` header listing exactly the documented methods.
async fn every_path_refuses_an_undeclared_method_with_allow(api: Api) {
    let app = TestApp::spawn(api).await;
    let mut documented: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for (path, method) in operations(&committed()) {
        documented.entry(path).or_default().insert(method);
    }
    let methods = [
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE",
    ];
    let mut asked = 0;
    for (path, allowed) in &documented {
        let url = format!("{}{}", app.address, path.replace("{id}", "ORDER_NONE"));
        for method in methods.iter().filter(|m| !allowed.contains(**m)) {
            let response = app
                .client
                .request(
                    reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                    &url,
                )
                .header("Authorization", testkit::TOKEN)
                .send()
                .await
                .expect("the request");
            assert_eq!(response.status(), 405, "{api:?}: {method} {path}");
            let allow = response.headers().get("allow").map(|v| v.to_str().unwrap());
            let allow: BTreeSet<String> = allow
                .unwrap_or_else(|| panic!("{api:?}: {method} {path}: 405 without Allow"))
                .split(',')
                .map(|m| m.trim().to_owned())
                .collect();
            assert_eq!(&allow, allowed, "{api:?}: {method} {path}");
            if *method != "HEAD" {
                let body: serde_json::Value = response.json().await.expect("a JSON body");
                assert_eq!(
                    body["error"], "method_not_allowed",
                    "{api:?}: {method} {path}"
                );
            }
            asked += 1;
        }
    }
    assert!(asked >= 6 * 6, "{asked} refusals asked");
}
