//! The order contract's refusals and failures, run against both APIs.

use std::time::{Duration, Instant};

use mock_deps::MockConfig;
use sqlx::Connection;
use testkit::{Api, TOKEN, TestApp, contract_tests, reqwest_blocking_tests, valid_order};

contract_tests!(
    every_validation_rule_is_a_400_naming_the_field,
    malformed_json_oversized_and_wrong_type_bodies,
    risk_rejection_is_422_without_a_charge_and_is_replayed,
    declined_payment_is_402_without_an_order_and_is_replayed,
    failing_dependency_is_503_and_a_retry_charges_once,
    hanging_dependency_times_out_as_503,
    exhausted_pool_is_503_within_the_pool_timeout,
    no_card_number_or_cvv_anywhere,
    database_down_is_503_and_ready_stays_ready,
    lost_connections_are_replaced,
);
reqwest_blocking_tests!(hanging_dependency_times_out_as_503);

/// (JSON pointer, replacement, field named in the error). `null` replacement removes the field.
fn validation_cases() -> Vec<(&'static str, serde_json::Value, &'static str)> {
    use serde_json::json;
    vec![
        ("/reference_id", json!(""), "reference_id"),
        ("/reference_id", json!("a".repeat(65)), "reference_id"),
        ("/reference_id", json!("has space"), "reference_id"),
        ("/payment/amount", json!(0), "payment.amount"),
        ("/payment/amount", json!(-5), "payment.amount"),
        ("/payment/amount", json!(14999), "payment.amount"),
        ("/payment/amount", json!("15000"), "payment.amount"),
        (
            "/payment/payment_method/type",
            json!("PIX"),
            "payment.payment_method.type",
        ),
        (
            "/payment/payment_method/installments",
            json!(0),
            "payment.payment_method.installments",
        ),
        (
            "/payment/payment_method/installments",
            json!(13),
            "payment.payment_method.installments",
        ),
        (
            "/payment/payment_method/card/number",
            json!("4539578763621487"),
            "payment.payment_method.card.number",
        ),
        (
            "/payment/payment_method/card/number",
            json!("453957876362"),
            "payment.payment_method.card.number",
        ),
        (
            "/payment/payment_method/card/number",
            json!("4539-5787-6362-1486"),
            "payment.payment_method.card.number",
        ),
        (
            "/payment/payment_method/card/cvv",
            json!("12"),
            "payment.payment_method.card.cvv",
        ),
        (
            "/payment/payment_method/card/cvv",
            json!("12a"),
            "payment.payment_method.card.cvv",
        ),
        (
            "/payment/payment_method/card/expiration_date",
            json!("01-2020"),
            "payment.payment_method.card.expiration_date",
        ),
        (
            "/payment/payment_method/card/expiration_date",
            json!("13-2099"),
            "payment.payment_method.card.expiration_date",
        ),
        (
            "/payment/payment_method/card/expiration_date",
            json!("2099-12"),
            "payment.payment_method.card.expiration_date",
        ),
        (
            "/payment/payment_method/card/holder",
            json!(""),
            "payment.payment_method.card.holder",
        ),
        ("/items", json!([]), "items"),
        ("/items/0/quantity", json!(0), "items[0].quantity"),
        ("/items/1/value", json!(0), "items[1].value"),
        ("/items/0/name", json!("x".repeat(201)), "items[0].name"),
        ("/customer/tax_id", json!("123"), "customer.tax_id"),
        ("/customer/tax_id", json!("1234567890a"), "customer.tax_id"),
        ("/customer/full_name", json!("   "), "customer.full_name"),
        (
            "/customer/address/zip_code",
            json!("1".repeat(21)),
            "customer.address.zip_code",
        ),
        (
            "/customer/address/city",
            serde_json::Value::Null,
            "customer.address",
        ),
        ("/customer", serde_json::Value::Null, "."),
    ]
}

async fn every_validation_rule_is_a_400_naming_the_field(api: Api) {
    let app = TestApp::spawn(api).await;
    for (pointer, value, field) in validation_cases() {
        let mut body = valid_order("invalid-1");
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let target = body
            .pointer_mut(if parent.is_empty() { "" } else { parent })
            .unwrap();
        if value.is_null() {
            target.as_object_mut().unwrap().remove(key);
        } else if let Ok(i) = key.parse::<usize>() {
            target[i] = value;
        } else {
            target[key] = value;
        }
        let response = app.post_order(TOKEN, &body).await;
        assert_eq!(response.status(), 400, "{pointer}");
        let json: serde_json::Value = response.json().await.unwrap();
        assert_eq!(json["error"], "invalid_request", "{pointer}");
        let named = json["field"].as_str().unwrap();
        let expected = if field == "." { "body" } else { field };
        assert_eq!(named, expected, "{pointer}: {json}");
        assert!(
            json["detail"].as_str().unwrap().starts_with(expected),
            "{json}"
        );
    }
    // Debit cards take one installment only.
    let mut debit = valid_order("debit-1");
    debit["payment"]["payment_method"]["type"] = "DEBIT_CARD".into();
    assert_eq!(app.post_order(TOKEN, &debit).await.status(), 400);
    debit["payment"]["payment_method"]["installments"] = 1.into();
    assert_eq!(app.post_order(TOKEN, &debit).await.status(), 201);
    assert_eq!(app.count("orders").await, 1);
}

async fn malformed_json_oversized_and_wrong_type_bodies(api: Api) {
    let app = TestApp::spawn(api).await;
    let json = Some("application/json");
    let cases: Vec<(Option<&str>, Vec<u8>, u16, &str)> = vec![
        (
            json,
            b"{\"reference_id\": ".to_vec(),
            400,
            "invalid_request",
        ),
        (json, b"[1,2,3]".to_vec(), 400, "invalid_request"),
        (json, Vec::new(), 400, "invalid_request"),
        (json, vec![b' '; 64 * 1024 + 1], 413, "payload_too_large"),
        (
            Some("text/plain"),
            b"{}".to_vec(),
            415,
            "unsupported_media_type",
        ),
        (None, b"{}".to_vec(), 415, "unsupported_media_type"),
        (
            Some("application/json; charset=utf-8"),
            b"{".to_vec(),
            400,
            "invalid_request",
        ),
    ];
    for (content_type, body, status, code) in cases {
        let response = app.post_raw(Some(TOKEN), content_type, body).await;
        assert_eq!(response.status(), status, "{content_type:?} {code}");
        let json: serde_json::Value = response.json().await.unwrap();
        assert_eq!(json["error"], code);
        assert!(json["detail"].as_str().is_some_and(|d| !d.is_empty()));
    }
    assert_eq!(app.count("idempotency_keys").await, 0);
}

async fn risk_rejection_is_422_without_a_charge_and_is_replayed(api: Api) {
    let app = TestApp::spawn(api).await;
    let mut body = valid_order("risky-1");
    body["customer"]["tax_id"] = "00000000000".into();
    let first = app.post_order(TOKEN, &body).await;
    assert_eq!(first.status(), 422);
    let first_body = first.bytes().await.unwrap();
    let json: serde_json::Value = serde_json::from_slice(&first_body).unwrap();
    assert_eq!(json["error"], "risk_rejected");
    let replay = app.post_order(TOKEN, &body).await;
    assert_eq!(
        (
            replay.status().as_u16(),
            &replay.headers()["idempotent-replayed"]
        ),
        (422, &"true".parse().unwrap())
    );
    assert_eq!(replay.bytes().await.unwrap(), first_body);
    assert_eq!(app.deps.ledger().pay_requests, 0);
    assert_eq!(app.count("orders").await, 0);
}

async fn declined_payment_is_402_without_an_order_and_is_replayed(api: Api) {
    let app = TestApp::spawn(api).await;
    let mut body = valid_order("declined-1");
    body["payment"]["payment_method"]["card"]["cvv"] = "000".into();
    let first = app.post_order(TOKEN, &body).await;
    assert_eq!(first.status(), 402);
    let first_body = first.bytes().await.unwrap();
    let json: serde_json::Value = serde_json::from_slice(&first_body).unwrap();
    assert_eq!(json["error"], "payment_declined");
    let replay = app.post_order(TOKEN, &body).await;
    assert_eq!(replay.status(), 402);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    assert_eq!(replay.bytes().await.unwrap(), first_body);
    assert_eq!(app.count("orders").await, 0);
    assert_eq!(app.count("customers").await, 0);
    assert_eq!(
        app.deps.ledger().pay_requests,
        1,
        "the replay did not charge again"
    );
}

async fn failing_dependency_is_503_and_a_retry_charges_once(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.payment.error_rate = 1.0;
    let app = TestApp::spawn_with(api, mocks, |_| {}).await;
    let body = valid_order("flaky-1");
    let failed = app.post_order(TOKEN, &body).await;
    assert_eq!(failed.status(), 503);
    let json: serde_json::Value = failed.json().await.unwrap();
    assert_eq!(
        (json["error"].as_str(), json["dependency"].as_str()),
        (Some("dependency_unavailable"), Some("payment"))
    );
    // The key was marked CHARGING before the gateway call: it stays, its lease ended at once.
    let (state, expired): (String, bool) =
        sqlx::query_as("SELECT state, lease_expires_at <= now() FROM idempotency_keys")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((state.as_str(), expired), ("CHARGING", true));
    assert_eq!(app.deps.ledger().charges, 0);

    mocks.payment.error_rate = 0.0;
    app.deps.set_config(mocks);
    assert_eq!(app.post_order(TOKEN, &body).await.status(), 201);
    assert_eq!(app.count("orders").await, 1);
    let ledger = app.deps.ledger();
    assert_eq!((ledger.charges, ledger.keys_charged_more_than_once), (1, 0));
}

async fn hanging_dependency_times_out_as_503(api: Api) {
    let mut mocks = MockConfig::instant();
    mocks.risk.hang_rate = 1.0;
    let app = TestApp::spawn_with(api, mocks, |s| s.deps_timeout_ms = 300).await;
    let start = Instant::now();
    let response = app.post_order(TOKEN, &valid_order("hang-1")).await;
    assert_eq!(response.status(), 503);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "bounded by DEPS_TIMEOUT_MS"
    );
    let json: serde_json::Value = response.json().await.unwrap();
    assert_eq!(json["dependency"], "risk");
    assert_eq!(app.deps.ledger().pay_requests, 0);
}

async fn exhausted_pool_is_503_within_the_pool_timeout(api: Api) {
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| {
        s.db_pool_size = 1;
        s.db_pool_timeout_ms = 500;
        // The one connection is the test's alone (the start-up pass waited out below).
        testkit::quiet_background(s);
    })
    .await;
    app.after_the_start_up_pass().await;
    // The test locks `customers`: the first request blocks in its insert, holding the only
    // connection; the second cannot get one.
    let mut locker = sqlx::PgConnection::connect(&app.db.url).await.unwrap();
    let mut lock = locker.begin().await.unwrap();
    sqlx::query("LOCK TABLE customers IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *lock)
        .await
        .unwrap();
    let first = tokio::spawn({
        let (client, url) = (app.client.clone(), format!("{}/orders", app.address));
        async move {
            client
                .post(url)
                .header("Authorization", TOKEN)
                .json(&valid_order("pool-1"))
                .send()
                .await
                .unwrap()
                .status()
        }
    });
    // Wait until the first request really waits on the lock.
    let waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()";
    let deadline = Instant::now() + Duration::from_secs(20);
    while sqlx::query_scalar::<_, i64>(waiting)
        .fetch_one(&app.pool)
        .await
        .unwrap()
        == 0
    {
        assert!(
            Instant::now() < deadline,
            "the first request never reached its insert"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let start = Instant::now();
    let second = app.post_order(TOKEN, &valid_order("pool-2")).await;
    let waited = start.elapsed();
    assert_eq!(second.status(), 503);
    assert_eq!(second.headers()["retry-after"], "1");
    let json: serde_json::Value = second.json().await.unwrap();
    assert_eq!(json["error"], "database_unavailable");
    assert!(
        waited >= Duration::from_millis(450),
        "gave up before the pool timeout: {waited:?}"
    );
    assert!(
        waited < Duration::from_millis(500 + 3000),
        "waited far past the pool timeout: {waited:?}"
    );
    let metrics = app.get("/metrics", None).await.text().await.unwrap();
    assert!(
        metrics.contains("db_pool_acquire_timeouts_total 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"db_transaction_duration_seconds_count{kind="recovery"} 2"#),
        "no recovery pass took a connection meanwhile: {metrics}"
    );

    lock.rollback().await.unwrap();
    assert_eq!(first.await.unwrap(), 201);
    assert_eq!(
        app.post_order(TOKEN, &valid_order("pool-2")).await.status(),
        201
    );
}

async fn no_card_number_or_cvv_anywhere(api: Api) {
    let app = TestApp::spawn(api).await;
    let body = valid_order("pci-1");
    let created = app.post_order(TOKEN, &body).await.text().await.unwrap();
    let mut declined = valid_order("pci-2");
    declined["payment"]["payment_method"]["card"]["cvv"] = "000".into();
    let refused = app.post_order(TOKEN, &declined).await.text().await.unwrap();
    let id = serde_json::from_str::<serde_json::Value>(&created).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let fetched = app
        .get(&format!("/orders/{id}"), Some(TOKEN))
        .await
        .text()
        .await
        .unwrap();
    let mut texts = vec![created, refused, fetched];
    texts.extend(app.dump_rows().await);
    assert!(texts.len() > 5, "rows were dumped");
    for text in texts {
        assert!(!text.contains("4539578763621486"), "card number in {text}");
        assert!(!text.contains("cvv"), "cvv field in {text}");
        let tokens = text.split(|c: char| !c.is_ascii_alphanumeric());
        assert!(tokens.clone().all(|t| t != "7319"), "cvv in {text}");
    }
}

/// The database refuses connections: orders get 503 `database_unavailable` and recover once it is
/// back, while `/ready` stays 200 (ready means this process can serve: a database shared by every
/// replica must not take them all out of the Service at once; see docs/contract.md).
async fn database_down_is_503_and_ready_stays_ready(api: Api) {
    let app = TestApp::spawn_with(api, MockConfig::instant(), |s| s.db_pool_timeout_ms = 500).await;
    assert_eq!(app.get("/ready", None).await.status(), 200);
    let name = app.db.name().to_owned();
    let switch = |allow: bool| {
        let name = name.clone();
        async move {
            let mut admin = sqlx::PgConnection::connect(&testkit::admin_url())
                .await
                .unwrap();
            let sql = format!(r#"ALTER DATABASE "{name}" ALLOW_CONNECTIONS {allow}"#);
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .execute(&mut admin)
                .await
                .unwrap();
            if !allow {
                let kill = format!(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
                );
                sqlx::query(sqlx::AssertSqlSafe(kill))
                    .execute(&mut admin)
                    .await
                    .unwrap();
            }
        }
    };
    switch(false).await;
    let response = app.post_order(TOKEN, &valid_order("down-1")).await;
    assert_eq!(response.status(), 503);
    let json: serde_json::Value = response.json().await.unwrap();
    assert_eq!(json["error"], "database_unavailable");
    assert_eq!(app.get("/ready", None).await.status(), 200);
    switch(true).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while app.post_order(TOKEN, &valid_order("down-1")).await.status() != 201 {
        assert!(Instant::now() < deadline, "never served orders again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// PostgreSQL ends every session of the API (a restart, a failover, a proxy's reset): an order
/// that meets a dead pooled connection gets 503 `database_unavailable` — never more of them than
/// the pool had connections open — and the pool replaces them: the next orders succeed.
async fn lost_connections_are_replaced(api: Api) {
    let app = TestApp::spawn(api).await;
    // Concurrent orders open several pooled connections.
    let bodies: Vec<_> = (0..4)
        .map(|i| valid_order(&format!("lost-warm-{i}")))
        .collect();
    let warm =
        futures_util::future::join_all(bodies.iter().map(|b| app.post_order(TOKEN, b))).await;
    assert!(warm.iter().all(|r| r.status() == 201));
    let mut open = 0;
    for name in ["db_pool_connections_in_use", "db_pool_connections_idle"] {
        open += app
            .metric(name)
            .await
            .unwrap_or_else(|| panic!("{name} missing")) as usize;
    }
    assert!(open >= 1, "no pooled connection after four orders");
    let mut admin = sqlx::PgConnection::connect(&testkit::admin_url())
        .await
        .unwrap();
    let kill = format!(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '{}'",
        app.db.name()
    );
    let killed: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(kill))
        .fetch_one(&mut admin)
        .await
        .unwrap();
    assert!(killed >= open as i64, "killed {killed} of {open}");
    let mut statuses = Vec::new();
    for i in 0..(open + 4) {
        let response = app
            .post_order(TOKEN, &valid_order(&format!("lost-{i}")))
            .await;
        let status = response.status().as_u16();
        if status != 201 {
            let json: serde_json::Value = response.json().await.unwrap();
            assert_eq!(
                (status, json["error"].as_str()),
                (503, Some("database_unavailable"))
            );
        }
        statuses.push(status);
    }
    let failed = statuses.iter().filter(|&&s| s != 201).count();
    assert!(
        failed <= open,
        "{failed} of {statuses:?} failed; {open} were open"
    );
    let recovered = statuses.iter().position(|&s| s == 201);
    assert!(
        recovered.is_some_and(|first| statuses[first..].iter().all(|&s| s == 201)),
        "the pool did not recover: {statuses:?}"
    );
    assert_eq!(app.count("orders").await, 4 + (open + 4 - failed) as i64);
}
