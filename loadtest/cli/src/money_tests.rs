use super::*;

fn charged(charges: u32, amount: i64, voided: bool) -> KeyCharges {
    KeyCharges {
        charges,
        amount,
        message: "SUCCESS".to_owned(),
        voided,
    }
}

fn order(key: &str, amount: i64) -> OrderRow {
    OrderRow {
        payment_key: Some(key.to_owned()),
        amount,
    }
}

fn ledger(keys: &[(&str, KeyCharges)]) -> Ledger {
    Ledger {
        charges: keys.iter().map(|(_, k)| u64::from(k.charges)).sum(),
        voids: keys
            .iter()
            .filter(|(_, k)| k.voided && k.charges > 0)
            .count() as u64,
        charges_by_key: Some(
            keys.iter()
                .map(|(n, k)| ((*n).to_owned(), k.clone()))
                .collect(),
        ),
        ..Ledger::default()
    }
}

#[test]
fn balanced() {
    let l = ledger(&[
        ("s:a:1", charged(1, 100, false)),
        ("s:b:1", charged(1, 250, false)),
    ]);
    let m = reconcile(&[order("s:a:1", 100), order("s:b:1", 250)], &l);
    assert_eq!((m.charges, m.voids, m.orders), (2, 0, 2));
    assert!(m.balanced(), "{m:?}");
    assert!(m.examples.is_empty());
    assert!(checks(Ok(&m)).iter().all(|c| c.ok == Some(true)));
}

#[test]
fn a_charge_without_order_is_counted_and_named() {
    let l = ledger(&[
        ("s:a:1", charged(1, 100, false)),
        ("s:b:1", charged(1, 250, false)),
    ]);
    let m = reconcile(&[order("s:a:1", 100)], &l);
    assert_eq!(m.charges_without_order, 1);
    assert_eq!(m.orders_without_charge, 0);
    assert!(!m.balanced());
    assert_eq!(m.examples, ["charge without order: s:b:1"]);
    let c = checks(Ok(&m));
    assert_eq!(c[0].ok, Some(false), "{:?}", c[0]);
    assert!(c[0].detail.contains("s:b:1"), "{}", c[0].detail);
}

#[test]
fn an_order_without_charge_is_counted() {
    // No ledger entry at all, a declined key, a tombstone and a voided charge: none is a live charge.
    let declined = KeyCharges {
        charges: 0,
        amount: 100,
        message: "DECLINED".to_owned(),
        voided: false,
    };
    let tombstone = KeyCharges {
        charges: 0,
        amount: 0,
        message: "VOIDED".to_owned(),
        voided: true,
    };
    let l = ledger(&[
        ("s:b:1", declined),
        ("s:c:1", tombstone),
        ("s:d:1", charged(1, 100, true)),
    ]);
    let orders = [
        order("s:a:1", 100),
        order("s:b:1", 100),
        order("s:c:1", 100),
        order("s:d:1", 100),
        OrderRow {
            payment_key: None,
            amount: 100,
        },
    ];
    let m = reconcile(&orders, &l);
    assert_eq!(m.orders_without_charge, 5);
    assert_eq!(m.charges_without_order, 0);
    assert_eq!(checks(Ok(&m))[1].ok, Some(false));
}

#[test]
fn a_voided_charge_without_order_is_fine() {
    let l = ledger(&[
        ("s:a:1", charged(1, 100, true)),
        ("s:b:1", charged(1, 250, false)),
    ]);
    let m = reconcile(&[order("s:b:1", 250)], &l);
    assert_eq!((m.charges, m.voids, m.orders), (2, 1, 1));
    assert!(m.balanced(), "{m:?}");
}

#[test]
fn a_double_charge_and_a_wrong_amount_are_caught() {
    let l = ledger(&[
        ("s:a:1", charged(2, 100, false)),
        ("s:b:1", charged(1, 250, false)),
    ]);
    let m = reconcile(&[order("s:a:1", 100), order("s:b:1", 999)], &l);
    assert_eq!(m.double_charges, 1);
    assert_eq!(m.amount_mismatches, 1);
    assert_eq!(m.charges_without_order, 0);
    assert!(!m.balanced());
    assert!(m.examples.contains(&"charged twice: s:a:1".to_owned()));
    assert_eq!(checks(Ok(&m))[2].ok, Some(false));
}

#[test]
fn keys_left_charging_fail_and_an_uncountable_run_says_why() {
    let m = MoneyRecord {
        charging_left: 2,
        settle_wait_s: 19.0,
        ..MoneyRecord::default()
    };
    let c = checks(Ok(&m));
    assert_eq!(c[3].ok, Some(false));
    assert!(c[3].detail.contains("2 keys still CHARGING after 19.0 s"));
    let c = checks(Err("no database"));
    assert_eq!(c.len(), 4);
    assert!(
        c.iter()
            .all(|c| c.ok.is_none() && c.detail == "no database")
    );
}

#[test]
fn a_voided_charge_is_not_live_and_the_settle_bound_is_one_lease_and_two_passes() {
    assert!(charged(1, 100, false).live() && !charged(1, 100, true).live());
    assert_eq!(settle_bound(15_000, 2000), Duration::from_secs(19));
}
