//! Unit tests of the ledger's bookkeeping; the HTTP shapes are covered by `tests/api`.

use super::*;

fn counters(snap: &Ledger) -> [u64; 4] {
    [
        snap.voids,
        snap.tombstones,
        snap.void_requests,
        snap.voided_pay_refusals,
    ]
}

#[test]
fn same_key_same_amount_replays_the_stored_answer() {
    let ledger = LedgerStore::default();
    let Outcome::Fresh(code, Verdict::Success) = ledger.record("k", 100, Verdict::Success) else {
        panic!("first request must be fresh");
    };
    // Even a different card verdict on replay returns the stored answer.
    assert_eq!(
        ledger.record("k", 100, Verdict::Declined),
        Outcome::Replay(code, Verdict::Success)
    );
    assert_eq!(ledger.record("k", 101, Verdict::Success), Outcome::Conflict);
    let snap = ledger.snapshot(true);
    assert_eq!(
        (
            snap.charges,
            snap.pay_requests,
            snap.replayed_requests,
            snap.conflicts
        ),
        (1, 3, 1, 1)
    );
    assert_eq!(snap.keys_charged_more_than_once, 0);
    assert_eq!(snap.charges_by_key.unwrap()["k"].charges, 1);
}

#[test]
fn declines_are_stored_but_not_charged() {
    let ledger = LedgerStore::default();
    ledger.record("d", 5, Verdict::Declined);
    let snap = ledger.snapshot(false);
    assert_eq!((snap.charges, snap.declined, snap.distinct_keys), (0, 1, 1));
    assert!(snap.charges_by_key.is_none());
    ledger.reset();
    assert_eq!(ledger.snapshot(false), Ledger::default());
}

#[test]
fn lookup_reports_the_stored_answer() {
    let ledger = LedgerStore::default();
    assert_eq!(ledger.lookup("k"), None);
    let Outcome::Fresh(code, _) = ledger.record("k", 100, Verdict::Success) else {
        panic!("fresh");
    };
    let expected = Payment {
        status: Status::Success,
        amount: 100,
        code: Some(code),
        charged: true,
    };
    assert_eq!(ledger.lookup("k"), Some(expected));
    ledger.record("d", 7, Verdict::Declined);
    let declined = ledger.lookup("d").unwrap();
    assert_eq!(
        (declined.status, declined.charged),
        (Status::Declined, false)
    );
    // Looking up changes nothing.
    assert_eq!(ledger.snapshot(false).pay_requests, 2);
}

#[test]
fn voiding_a_charge_gives_it_back_once() {
    let ledger = LedgerStore::default();
    let Outcome::Fresh(code, _) = ledger.record("k", 100, Verdict::Success) else {
        panic!("fresh");
    };
    let voided = Payment {
        status: Status::Voided,
        amount: 100,
        code: Some(code),
        charged: true,
    };
    assert_eq!(ledger.void("k"), voided);
    assert_eq!(ledger.void("k"), voided, "a second void answers the same");
    assert_eq!(ledger.lookup("k"), Some(voided));
    let snap = ledger.snapshot(true);
    assert_eq!(counters(&snap), [1, 0, 2, 0]);
    // The charge happened: it stays counted, as a charge and per key.
    assert_eq!((snap.charges, snap.distinct_keys), (1, 1));
    let detail = &snap.charges_by_key.unwrap()["k"];
    assert_eq!((detail.charges, detail.voided), (1, true));
    assert_eq!(detail.message, "SUCCESS");
}

#[test]
fn voiding_a_decline_closes_the_key_without_a_void() {
    let ledger = LedgerStore::default();
    ledger.record("d", 100, Verdict::Declined);
    let after = ledger.void("d");
    assert_eq!((after.status, after.charged), (Status::Voided, false));
    assert_eq!(after.amount, 100);
    assert_eq!(counters(&ledger.snapshot(false)), [0, 0, 1, 0]);
}

#[test]
fn a_tombstone_refuses_the_payment_it_raced_with() {
    let ledger = LedgerStore::default();
    let tombstone = Payment {
        status: Status::Voided,
        amount: 0,
        code: None,
        charged: false,
    };
    assert_eq!(ledger.void("late"), tombstone);
    assert_eq!(ledger.void("late"), tombstone);
    assert_eq!(ledger.lookup("late"), Some(tombstone));
    // Whatever the amount: a tombstone's 0 is no amount to conflict with.
    assert_eq!(
        ledger.record("late", 100, Verdict::Success),
        Outcome::Voided
    );
    assert_eq!(ledger.record("late", 0, Verdict::Success), Outcome::Voided);
    let snap = ledger.snapshot(true);
    assert_eq!(counters(&snap), [0, 1, 2, 2]);
    assert_eq!(
        (snap.charges, snap.pay_requests, snap.distinct_keys),
        (0, 2, 0)
    );
    let detail = snap.charges_by_key.unwrap();
    let expected = KeyCharges {
        charges: 0,
        amount: 0,
        message: "VOIDED".to_owned(),
        voided: true,
    };
    assert_eq!(detail["late"], expected);
}

#[test]
fn a_voided_charge_is_never_charged_again() {
    let ledger = LedgerStore::default();
    ledger.record("k", 100, Verdict::Success);
    ledger.void("k");
    // Same amount (a retry) and another amount alike: refused, not replayed nor conflicting.
    assert_eq!(ledger.record("k", 100, Verdict::Success), Outcome::Voided);
    assert_eq!(ledger.record("k", 999, Verdict::Success), Outcome::Voided);
    let snap = ledger.snapshot(false);
    assert_eq!(
        (snap.charges, snap.replayed_requests, snap.conflicts),
        (1, 0, 0)
    );
    assert_eq!(snap.voided_pay_refusals, 2);
    assert_eq!(snap.keys_charged_more_than_once, 0);
}

#[test]
fn pay_requests_split_into_exactly_one_outcome_each() {
    let ledger = LedgerStore::default();
    ledger.record("a", 1, Verdict::Success);
    ledger.record("a", 1, Verdict::Success);
    ledger.record("a", 2, Verdict::Success);
    ledger.record("b", 1, Verdict::Declined);
    ledger.void("c");
    ledger.record("c", 1, Verdict::Success);
    let s = ledger.snapshot(false);
    let parts = s.charges + s.declined + s.replayed_requests + s.conflicts + s.voided_pay_refusals;
    assert_eq!((s.pay_requests, parts), (5, 5));
    ledger.reset();
    assert_eq!(
        ledger.snapshot(true).charges_by_key,
        Some(Default::default())
    );
    assert_eq!(ledger.snapshot(false), Ledger::default());
}

#[test]
fn older_snapshots_still_parse() {
    let old = r#"{"charges":1,"declined":0,"distinct_keys":1,"pay_requests":1,
        "replayed_requests":0,"conflicts":0,"keys_charged_more_than_once":0,
        "charges_by_key":{"k":{"charges":1,"amount":5,"message":"SUCCESS"}}}"#;
    let parsed: Ledger = serde_json::from_str(old).unwrap();
    assert_eq!(counters(&parsed), [0, 0, 0, 0]);
    assert!(!parsed.charges_by_key.unwrap()["k"].voided);
}
