//! The recorder's counts, percentiles and windows.

use super::*;

#[test]
fn counts_reconcile_and_percentiles_come_from_every_value() {
    let mut r = Recorder::new(2);
    for i in 0..1000u64 {
        let t = i as f64 / 500.0;
        r.offered(t, 0);
        if i % 100 == 0 {
            r.not_sent(t, 0);
            continue;
        }
        r.sent(t, Duration::from_micros(100), 0);
        let outcome = if i % 50 == 1 {
            "timeout"
        } else {
            OUTCOME_CREATED
        };
        r.completed(t, t + 0.5, Duration::from_millis(i + 1), 0, outcome);
    }
    let t = &r.total;
    assert_eq!(t.offered, 1000);
    assert_eq!(t.offered, t.sent + t.not_sent);
    assert_eq!(t.sent, t.completed);
    assert_eq!(t.errors(), 20);
    assert_eq!(t.ok(), 970);
    assert_eq!(r.seconds.len(), 3);
    assert_eq!(r.seconds[0].offered, 500);
    let p = percentiles(&t.latency).unwrap();
    assert!((p.p50 - 501.0).abs() < 2.0, "{p:?}");
    assert!((p.max - 1000.0).abs() < 1.0, "{p:?}");
    assert!(t.step_failed(), "2 % errors fail a stress step");
}

/// Arrivals at 10/s for 4 s; each answered `delay(j)` after its intended time, or never (`None`).
fn recorded(delay: impl Fn(u64) -> Option<f64>) -> Recorder {
    let mut r = Recorder::new(1);
    for j in 0..40u64 {
        let t = j as f64 / 10.0;
        r.offered(t, 0);
        r.sent(t, Duration::ZERO, 0);
        if let Some(d) = delay(j) {
            r.completed(t, t + d, Duration::from_secs_f64(d), 0, OUTCOME_CREATED);
        }
    }
    r
}

#[test]
fn a_window_knows_which_of_its_arrivals_were_answered_after_it_or_never() {
    // Second 1's arrivals (j = 10..20): 0.3 s each, except j = 15 (2.5 s: answered in second
    // 4), j = 16 (0.95 s: due 1.6, answered 2.55) and j = 17 (never).
    let r = recorded(|j| match j {
        15 => Some(2.5),
        16 => Some(0.95),
        17 => None,
        _ => Some(0.3),
    });
    let w = r.window(1, 2);
    assert_eq!(
        (w.arrivals, w.answered_within, w.answered_late, w.unanswered),
        (10, 5, 4, 1),
        "late: j = 15, 16, and 18, 19 (1.8 and 1.9 + 0.3 s land in second 2)"
    );
    // Two seconds long: of second 1's, only the 2.5 s answer is late; second 2 adds j = 27..29
    // (2.7–2.9 + 0.3 s, in second 3).
    let w = r.window(1, 3);
    assert_eq!(
        (w.arrivals, w.answered_within, w.answered_late, w.unanswered),
        (20, 15, 4, 1)
    );
    // Counted by arrival: the whole run's window has no late answers, one unanswered.
    let w = r.window(0, 10);
    assert_eq!((w.arrivals, w.answered_late, w.unanswered), (40, 0, 1));
    assert_eq!(
        w.arrivals,
        w.not_sent + w.answered_within + w.answered_late + w.unanswered
    );
    // Late answers' latencies are in the window's histogram: the phase (by arrival) holds
    // every answer, the 2.5 s one its max.
    assert_eq!(r.phases[0].completed, 39);
    assert!((percentiles(&r.phases[0].latency).unwrap().max - 2500.0).abs() < 5.0);
}

#[test]
fn two_shards_late_answers_add_up_to_one_runs() {
    let delay = |j: u64| (j % 7 != 3).then_some(0.2 + (j % 5) as f64 * 0.4);
    let whole = recorded(delay);
    let (mut even, mut odd) = (Recorder::new(1), Recorder::new(1));
    for j in 0..40u64 {
        let t = j as f64 / 10.0;
        let shard = if j % 2 == 0 { &mut even } else { &mut odd };
        shard.offered(t, 0);
        shard.sent(t, Duration::ZERO, 0);
        if let Some(d) = delay(j) {
            shard.completed(t, t + d, Duration::from_secs_f64(d), 0, OUTCOME_CREATED);
        }
    }
    // Each through the results file's encoding, as `loadtest merge` reads them.
    let mut merged = Recorder::new(1);
    for shard in [&even, &odd] {
        merged.add(
            &crate::histograms::decode(&crate::histograms::encode(shard)).unwrap(),
            0,
        );
    }
    for (from, to) in [(0, 1), (1, 2), (1, 3), (2, 4), (0, 6)] {
        let (a, b, c) = (
            whole.window(from, to),
            even.window(from, to),
            odd.window(from, to),
        );
        assert_eq!(merged.window(from, to), a, "[{from}, {to})");
        assert_eq!(a.answered_late, b.answered_late + c.answered_late);
        assert_eq!(a.unanswered, b.unanswered + c.unanswered);
    }
    assert!(
        whole.window(1, 2).answered_late > 0,
        "the test has late answers to add"
    );
}
