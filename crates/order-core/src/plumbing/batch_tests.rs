use super::*;
use crate::domain::contract::{Address, Customer, Item};
use crate::domain::deps::{PayStatus, Recommendation};
use crate::domain::order::{PaymentSummary, RiskSummary};

fn doc(id: &str, items: usize, complement: Option<&str>) -> OrderDocument {
    OrderDocument {
        id: id.into(),
        reference_id: format!("ref-{id}"),
        status: "CONFIRMED".into(),
        seller_id: "acme".into(),
        amount: 100 * items as i64,
        installments: 2,
        payment: PaymentSummary {
            method: "CREDIT_CARD".into(),
            code: "c-1".into(),
            status: PayStatus::Success,
            card_last4: "1111".into(),
        },
        risk: RiskSummary {
            recommendation: Recommendation::Approve,
        },
        items: (0..items)
            .map(|i| Item {
                name: format!("item-{i}"),
                quantity: 1,
                value: 100,
            })
            .collect(),
        customer: Customer {
            full_name: "Ana".into(),
            tax_id: "12345678901".into(),
            address: Address {
                street: "A".into(),
                number: "1".into(),
                state: "SP".into(),
                city: "X".into(),
                locality: "Y".into(),
                zip_code: "1".into(),
                complement: complement.map(str::to_owned),
            },
        },
        created_at: chrono::Utc::now(),
    }
}

fn row(id: &str, items: usize, complement: Option<&str>) -> PersistRow {
    let d = doc(id, items, complement);
    let outcome = Outcome::created(&d);
    let key = KeyRef {
        seller_id: "acme",
        reference_id: &d.reference_id,
        attempt: 3,
    };
    let placed = Placed {
        doc: &d,
        payment_key: "acme:r:3",
    };
    PersistRow::new(key, &outcome, placed)
}

#[test]
fn columns_have_one_element_per_order_and_items_name_their_order() {
    let rows = [
        row("A", 2, Some("apt 1")),
        row("B", 1, None),
        row("C", 3, None),
    ];
    let c = PersistColumns::of(&rows);
    for len in [
        c.seller_id.len(),
        c.attempt.len(),
        c.order_id.len(),
        c.complement.len(),
        c.created_at.len(),
        c.payment_key.len(),
    ] {
        assert_eq!(len, 3);
    }
    assert_eq!(c.order_id, ["A", "B", "C"]);
    assert_eq!(c.attempt, [3, 3, 3]);
    assert_eq!(c.response_status, [201, 201, 201]);
    assert_eq!(c.complement, [Some("apt 1".to_owned()), None, None]);
    assert_eq!(c.payment_status, ["SUCCESS"; 3]);
    assert_eq!(c.risk_recommendation, ["APPROVE"; 3]);
    assert_eq!(c.item_order, [1, 1, 2, 3, 3, 3]);
    assert_eq!(c.item_position, [1, 2, 1, 1, 2, 3]);
    assert_eq!(c.item_name.len(), 6);
    assert_eq!(c.item_value.len(), 6);
}

#[test]
fn written_maps_returned_positions_back_to_orders() {
    assert_eq!(written(4, &[3, 1]), [true, false, true, false]);
    assert_eq!(written(2, &[]), [false, false]);
}

#[test]
fn a_refused_batch_is_retried_one_by_one_but_an_unavailable_database_is_not() {
    let internal = ApiError::Internal(anyhow::anyhow!("check constraint"));
    let down = ApiError::DatabaseUnavailable(anyhow::anyhow!("connection reset"));
    assert_eq!(on_batch_error(&internal, 5), OnBatchError::OneByOne);
    assert_eq!(on_batch_error(&internal, 1), OnBatchError::FailEach);
    assert_eq!(on_batch_error(&down, 5), OnBatchError::FailEach);
    assert!(matches!(
        failure_for_each(&down),
        ApiError::DatabaseUnavailable(_)
    ));
    assert!(matches!(failure_for_each(&internal), ApiError::Internal(_)));
    // A refusal stays a refusal for each order, so recovery voids what it would without batching.
    assert!(!crate::domain::db_failure::is_refusal(&failure_for_each(
        &internal
    )));
    let refused =
        crate::domain::db_failure::DbFailure::Refused.into_api_error(anyhow::anyhow!("23514"));
    assert!(crate::domain::db_failure::is_refusal(&failure_for_each(
        &refused
    )));
}

#[test]
fn batching_is_off_at_one_and_in_request_scope() {
    let mut s = CommonSettings::new("postgres://x/y", "http://z");
    assert_eq!(BatchConfig::from_settings(&s), None, "off by default");
    s.persist_batch_max = 10;
    s.persist_batch_wait_ms = 7;
    let on = BatchConfig::from_settings(&s).unwrap();
    assert_eq!((on.max, on.wait.as_millis()), (10, 7));
    assert!(on.capacity >= on.max);
    s.db_tx_scope = TxScope::Request;
    assert_eq!(BatchConfig::from_settings(&s), None);
}

#[test]
fn batching_is_refused_with_a_request_scope_or_order_events() {
    use crate::plumbing::events::EventsMode;
    let mut s = CommonSettings::new("postgres://x/y", "http://z");
    s.request_hash_key = Some("0123456789abcdef0123".to_owned());
    s.persist_batch_max = 10;
    s.check()
        .expect("short scope, events off: batching allowed");
    s.db_tx_scope = TxScope::Request;
    let err = s.check().unwrap_err().to_string();
    assert!(
        err.contains("PERSIST_BATCH_MAX=10 needs DB_TX_SCOPE=short"),
        "{err}"
    );
    s.db_tx_scope = TxScope::Short;
    s.events.events_mode = EventsMode::Outbox;
    let err = s.check().unwrap_err().to_string();
    assert!(err.contains("needs EVENTS_MODE=off"), "{err}");
    s.persist_batch_max = 1;
    s.check().expect("events without batching");
}
