//! Shards add up exactly: a recorder added up from shards — each through the results file's
//! encoding — holds the same counts and the same histograms as one recorder of all the requests.

use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::*;

/// Records arrival `j` of a made-up run: 400/s, two phases, latencies spread over four decades,
/// one in 13 a timeout, one in 50 not sent.
fn record(rec: &mut Recorder, j: u64, rng: &mut SmallRng) {
    let t = j as f64 / 400.0;
    let phase = usize::from(t >= 6.0);
    rec.offered(t, phase);
    if j.is_multiple_of(50) {
        rec.not_sent(t, phase);
        return;
    }
    let late = Duration::from_micros(rng.random_range(1..5_000));
    rec.sent(t, late, phase);
    let latency = Duration::from_micros(rng.random_range(100..10_000_000));
    let outcome = if j.is_multiple_of(13) {
        "timeout"
    } else {
        "201"
    };
    rec.completed(t, t + latency.as_secs_f64(), latency, phase, outcome);
}

fn assert_same(a: &Acc, b: &Acc, what: &str) {
    assert_eq!(
        (a.offered, a.sent, a.not_sent, a.completed, a.slow),
        (b.offered, b.sent, b.not_sent, b.completed, b.slow),
        "{what}: counts"
    );
    assert_eq!(a.outcomes, b.outcomes, "{what}: outcomes");
    assert_eq!(a.latency, b.latency, "{what}: latency");
    assert_eq!(a.lateness, b.lateness, "{what}: lateness");
    assert_eq!(
        a.answered_after, b.answered_after,
        "{what}: answers by when they came"
    );
    assert_eq!(
        a.by_outcome.keys().collect::<Vec<_>>(),
        b.by_outcome.keys().collect::<Vec<_>>(),
        "{what}: outcome kinds"
    );
    for (kind, h) in &a.by_outcome {
        assert_eq!(h, &b.by_outcome[kind], "{what}: latency of {kind}");
    }
}

#[test]
fn a_histogram_added_up_from_shards_equals_the_histogram_of_all_their_values() {
    for n in [1u64, 2, 3, 7] {
        let mut rng = SmallRng::seed_from_u64(n);
        let mut whole = Recorder::new(2);
        let mut shards = vec![Recorder::new(2); n as usize];
        for j in 0..5000 {
            let mut again = rng.clone();
            record(&mut whole, j, &mut rng);
            record(&mut shards[(j % n) as usize], j, &mut again);
        }
        let mut merged = Recorder::new(2);
        for shard in &shards {
            let through_the_file = decode(&encode(shard)).unwrap();
            merged.add(&through_the_file, 0);
        }
        assert_same(&merged.total, &whole.total, &format!("N = {n}, run"));
        assert_eq!(merged.seconds.len(), whole.seconds.len());
        for (t, (m, w)) in merged.seconds.iter().zip(&whole.seconds).enumerate() {
            assert_same(m, w, &format!("N = {n}, second {t}"));
        }
        for (i, (m, w)) in merged.phases.iter().zip(&whole.phases).enumerate() {
            assert_same(m, w, &format!("N = {n}, phase {i}"));
        }
        let p99 = |r: &Recorder| r.total.latency.value_at_quantile(0.99);
        assert_eq!(p99(&merged), p99(&whole));
    }
}

#[test]
fn a_shard_that_started_later_lands_on_its_own_seconds() {
    let mut rng = SmallRng::seed_from_u64(1);
    let mut early = Recorder::new(1);
    let mut late = Recorder::new(1);
    for j in 0..800 {
        record(&mut early, j, &mut rng);
        record(&mut late, j, &mut rng);
    }
    let mut merged = Recorder::new(1);
    merged.add(&early, 0);
    merged.add(&late, 3);
    assert_eq!(merged.seconds[0].offered, early.seconds[0].offered);
    assert_eq!(
        merged.seconds[3].offered,
        early.seconds[3].offered + late.seconds[0].offered
    );
    assert_eq!(merged.total.offered, 1600);
}

#[test]
fn histograms_in_another_encoding_are_refused() {
    let mut set = encode(&Recorder::new(1));
    set.encoding = "csv".into();
    assert!(decode(&set).is_err());
}
