//! The gateway's reconciliation API: lookup and void by idempotency key.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestMock, expect_json, pay_body};

#[tokio::test]
async fn lookup_after_pay_reports_success_and_decline() {
    let app = TestMock::instant().await;
    let key = "acme:order-1:1";
    let paid = expect_json(
        app.pay(Some(key), &pay_body(15_000, "123")).await,
        StatusCode::OK,
    )
    .await;
    let found = expect_json(app.lookup(key).await, StatusCode::OK).await;
    assert_eq!(
        found,
        json!({"idempotency_key": key, "status": "SUCCESS", "amount": 15_000,
               "code": paid["code"], "charged": true})
    );

    let declined = app.pay(Some("acme:order-2:1"), &pay_body(700, "000")).await;
    let declined = expect_json(declined, StatusCode::OK).await;
    let found = expect_json(app.lookup("acme:order-2:1").await, StatusCode::OK).await;
    assert_eq!(
        found,
        json!({"idempotency_key": "acme:order-2:1", "status": "DECLINED", "amount": 700,
               "code": declined["code"], "charged": false})
    );
    // A lookup is not a pay request.
    let ledger = app.ledger().await;
    assert_eq!((ledger.pay_requests, ledger.charges), (2, 1));
    assert_eq!(app.stats().await.payment.lookups, 2);
}

#[tokio::test]
async fn unknown_key_is_404_and_counted() {
    let app = TestMock::instant().await;
    let body = expect_json(app.lookup("acme:nobody:1").await, StatusCode::NOT_FOUND).await;
    assert_eq!(body, json!({"error": "not_found"}));
    let stats = app.stats().await.payment;
    assert_eq!((stats.lookups, stats.lookups_not_found), (1, 1));
    assert_eq!(
        app.ledger().await,
        mock_deps::Ledger::default(),
        "nothing recorded"
    );
}

#[tokio::test]
async fn voiding_a_charge_gives_it_back_once() {
    let app = TestMock::instant().await;
    let key = "acme:order-3:1";
    let paid = expect_json(
        app.pay(Some(key), &pay_body(15_000, "123")).await,
        StatusCode::OK,
    )
    .await;
    let voided = expect_json(app.void(key).await, StatusCode::OK).await;
    let expected = json!({"idempotency_key": key, "status": "VOIDED", "amount": 15_000,
                          "code": paid["code"], "charged": true});
    assert_eq!(voided, expected);
    assert_eq!(
        expect_json(app.lookup(key).await, StatusCode::OK).await,
        expected
    );
    let again = expect_json(app.void(key).await, StatusCode::OK).await;
    assert_eq!(again, expected, "a second void answers the same");

    let ledger = app.ledger().await;
    assert_eq!((ledger.voids, ledger.void_requests), (1, 2));
    // The charge did happen: it stays in `charges`, and never counts twice.
    assert_eq!((ledger.charges, ledger.keys_charged_more_than_once), (1, 0));

    // A retried pay on the voided key is refused, not replayed.
    let retry = app.pay(Some(key), &pay_body(15_000, "123")).await;
    let body = expect_json(retry, StatusCode::CONFLICT).await;
    assert_eq!(body, json!({"error": "payment_voided"}));
    let ledger = app.ledger().await;
    assert_eq!((ledger.charges, ledger.voided_pay_refusals), (1, 1));
}

#[tokio::test]
async fn voiding_a_decline_closes_the_key_without_a_refund() {
    let app = TestMock::instant().await;
    app.pay(Some("d"), &pay_body(700, "000")).await;
    let voided = expect_json(app.void("d").await, StatusCode::OK).await;
    assert_eq!(
        (&voided["status"], &voided["charged"]),
        (&json!("VOIDED"), &json!(false))
    );
    let ledger = app.ledger().await;
    assert_eq!(
        (ledger.voids, ledger.tombstones, ledger.void_requests),
        (0, 0, 1)
    );
}

#[tokio::test]
async fn a_tombstone_refuses_a_later_pay() {
    let app = TestMock::instant().await;
    let key = "acme:order-4:1";
    let tombstone = expect_json(app.void(key).await, StatusCode::OK).await;
    assert_eq!(
        tombstone,
        json!({"idempotency_key": key, "status": "VOIDED", "amount": 0, "code": "",
               "charged": false})
    );
    let late = app.pay(Some(key), &pay_body(15_000, "123")).await;
    assert_eq!(
        expect_json(late, StatusCode::CONFLICT).await,
        json!({"error": "payment_voided"})
    );
    let lookup = expect_json(app.lookup(key).await, StatusCode::OK).await;
    assert_eq!(lookup, tombstone, "the refused pay left no charge behind");

    let ledger = app.ledger().await;
    assert_eq!((ledger.charges, ledger.distinct_keys), (0, 0));
    assert_eq!((ledger.tombstones, ledger.voided_pay_refusals), (1, 1));
    assert_eq!(app.stats().await.payment.voided_refusals, 1);
    let detail = app.get("/admin/ledger?detail=true").await;
    let detail: serde_json::Value = detail.json().await.unwrap();
    assert_eq!(
        detail["charges_by_key"][key],
        json!({"charges": 0, "amount": 0, "message": "VOIDED", "voided": true})
    );
}

#[tokio::test]
async fn keys_are_percent_decoded_from_the_path() {
    let app = TestMock::instant().await;
    // `/`, space, `%` and `+` must survive the round trip: header in, path segment out.
    let key = "odd/key with%and+plus";
    app.pay(Some(key), &pay_body(5, "123")).await;
    let found = expect_json(app.lookup(key).await, StatusCode::OK).await;
    assert_eq!(found["idempotency_key"], key);
    assert_eq!(found["status"], "SUCCESS");
    // `:` needs no encoding in a path segment; sent raw it is the same key.
    app.pay(Some("acme:o:1"), &pay_body(5, "123")).await;
    let raw = app.get("/gateway/payments/acme:o:1").await;
    assert_eq!(expect_json(raw, StatusCode::OK).await["amount"], 5);
}

#[tokio::test]
async fn an_unreachable_gateway_answers_no_pay_lookup_or_void_and_records_nothing() {
    let app = TestMock::instant().await;
    let key = "acme:order-down:1";
    expect_json(
        app.pay(Some(key), &pay_body(900, "123")).await,
        StatusCode::OK,
    )
    .await;
    expect_json(
        app.put_config(&json!({"gateway_unreachable": true})).await,
        StatusCode::OK,
    )
    .await;
    let within = std::time::Duration::from_millis(300);
    let payments = format!("{}/gateway/payments/{key}", app.url);
    let attempts = [
        app.client
            .post(format!("{}/gateway/pay", app.url))
            .header("Idempotency-Key", "acme:order-down:2")
            .json(&pay_body(900, "123")),
        app.client.get(&payments),
        app.client.post(format!("{payments}/void")),
    ];
    for attempt in attempts {
        let err = attempt
            .timeout(within)
            .send()
            .await
            .expect_err("an unreachable gateway answered");
        assert!(err.is_timeout(), "{err}");
    }
    expect_json(
        app.put_config(&json!({"gateway_unreachable": false})).await,
        StatusCode::OK,
    )
    .await;
    // Nothing was charged or voided while it was down; the charge before it stands.
    let ledger = app.ledger().await;
    assert_eq!(
        (ledger.charges, ledger.voids, ledger.pay_requests),
        (1, 0, 1)
    );
    let found = expect_json(app.lookup(key).await, StatusCode::OK).await;
    assert_eq!(found["charged"], true);
    expect_json(
        app.pay(Some("acme:order-down:2"), &pay_body(900, "123"))
            .await,
        StatusCode::OK,
    )
    .await;
}
