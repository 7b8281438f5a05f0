//! N shards together are the one-generator schedule: same instants, bodies and keys.

use std::collections::HashSet;

use super::*;
use crate::body::BodyGen;

#[test]
fn the_union_of_n_shards_is_the_one_generator_schedule() {
    let profile = Profile::parse("ramp-40", 0.5).unwrap();
    // Duplicates on, so the re-sent orders must come out the same too.
    let bodies = BodyGen::new("u1", 8, 0.1, 99);
    let whole: Vec<_> = Shard::WHOLE
        .arrivals(&profile)
        .map(|a| (a, bodies.request(a.index)))
        .collect();
    assert_eq!(whole.len() as u64, profile.planned_requests());
    for n in [1u32, 2, 3, 7] {
        let mut union = Vec::new();
        let mut tally = Tally::default();
        let mut fresh_keys = HashSet::new();
        for i in 0..n {
            let shard = Shard { index: i, count: n };
            let mine: Vec<_> = shard.arrivals(&profile).collect();
            let share = profile.planned_requests() as f64 / f64::from(n);
            assert!(
                (mine.len() as f64 - share).abs() <= 1.0,
                "shard {shard} has {} of {share}",
                mine.len()
            );
            for a in mine {
                let r = bodies.request(a.index);
                if !r.duplicate {
                    assert!(
                        fresh_keys.insert(r.reference_id.clone()),
                        "two shards sent one key"
                    );
                }
                union.push((a, r));
            }
            tally = tally.plus(shard.expected(&profile));
        }
        union.sort_by_key(|(a, _)| a.index);
        assert_eq!(union.len(), whole.len(), "N = {n}");
        for ((a, r), (wa, wr)) in union.iter().zip(&whole) {
            assert_eq!(a, wa, "N = {n}: the same instant and phase");
            assert_eq!(
                (&r.reference_id, &r.token, &r.body, r.duplicate),
                (&wr.reference_id, &wr.token, &wr.body, wr.duplicate),
                "N = {n}, arrival {}",
                a.index
            );
        }
        assert_eq!(tally, Shard::WHOLE.expected(&profile), "N = {n}");
    }
}

#[test]
fn a_missing_or_doubled_arrival_changes_the_fingerprint() {
    let profile = Profile::parse("constant-10-3", 1.0).unwrap();
    let whole = Shard::WHOLE.expected(&profile);
    let mut missing = Tally::default();
    let mut doubled = Tally::default();
    for a in profile.arrivals() {
        if a.index != 7 {
            missing.add(a.index);
        }
        doubled.add(if a.index == 7 { 8 } else { a.index });
    }
    assert_eq!(whole.arrivals, 30);
    assert_ne!(missing, whole);
    assert_eq!(doubled.arrivals, whole.arrivals, "same count…");
    assert_ne!(doubled.fingerprint, whole.fingerprint, "…another set");
}

#[test]
fn shards_parse_as_i_of_n() {
    assert_eq!(Shard::parse("1/3").unwrap(), Shard { index: 1, count: 3 });
    assert!(Shard::parse("0/1").unwrap().is_whole());
    for bad in ["3/3", "1/0", "1", "a/b", "-1/2"] {
        assert!(Shard::parse(bad).is_err(), "{bad}");
    }
    assert_eq!(Shard { index: 2, count: 7 }.to_string(), "2/7");
}
