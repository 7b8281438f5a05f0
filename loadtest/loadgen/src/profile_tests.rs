//! Arithmetic of the profiles: arrivals per phase, schedule times, scaling.

use super::*;

fn per_second(p: &Profile) -> Vec<u64> {
    let mut counts = vec![0u64; p.duration_s().ceil() as usize + 1];
    for a in p.arrivals() {
        counts[a.at_s.floor() as usize] += 1;
    }
    counts
}

#[test]
fn ramp_300_has_the_article_shape() {
    let p = Profile::parse("ramp-300", 1.0).unwrap();
    let counts: Vec<u64> = p.phases.iter().map(Phase::arrivals).collect();
    assert_eq!(counts, [4500, 9000, 4500]);
    assert_eq!(p.planned_requests(), 18_000);
    assert_eq!(p.duration_s(), 90.0);
    assert_eq!(p.plateau(), Some(1));
    let s = per_second(&p);
    // The plateau puts exactly 300 arrivals in every second.
    assert!(s[30..60].iter().all(|&c| c == 300), "{:?}", &s[30..60]);
    // The ramp-up's first 10 s hold N(10) = 300/30 · 10²/2 = 500 arrivals.
    assert_eq!(s[..10].iter().sum::<u64>(), 500);
    // Second 29 of the ramp-up: N(30) − N(29) = 5 · (900 − 841) = 295.
    assert!((s[29] as i64 - 295).abs() <= 1, "{}", s[29]);
    // Ramp-down mirrors the ramp-up.
    assert!((s[89] as i64 - 5).abs() <= 1, "{}", s[89]);
}

#[test]
fn schedule_is_sorted_and_inside_its_phases() {
    for name in ["ramp-150", "ramp-750", "seed-gatling", "ramp-7"] {
        let p = Profile::parse(name, 1.0).unwrap();
        let arrivals: Vec<Arrival> = p.arrivals().collect();
        assert_eq!(arrivals.len() as u64, p.planned_requests());
        for w in arrivals.windows(2) {
            assert!(w[0].at_s <= w[1].at_s, "{name}: {:?}", w);
        }
        for a in &arrivals {
            let ph = &p.phases[a.phase];
            assert!(
                a.at_s >= ph.start_s && a.at_s <= ph.start_s + ph.duration_s,
                "{name}: {a:?}"
            );
        }
    }
}

#[test]
fn seed_gatling_is_the_repository_injection() {
    let p = Profile::parse("seed-gatling", 1.0).unwrap();
    let counts: Vec<u64> = p.phases.iter().map(Phase::arrivals).collect();
    assert_eq!(counts, [750, 22_500, 0]);
    assert_eq!(p.duration_s(), 90.0);
    let first: Vec<f64> = p.arrivals().take(3).map(|a| a.at_s).collect();
    // 750 users evenly over 30 s: one every 40 ms, mid-slot.
    assert!(
        (first[0] - 0.02).abs() < 1e-9 && (first[1] - 0.06).abs() < 1e-9,
        "{first:?}"
    );
}

#[test]
fn duration_scale_shortens_phases_and_keeps_rates() {
    let p = Profile::parse("ramp-300", 0.1).unwrap();
    let counts: Vec<u64> = p.phases.iter().map(Phase::arrivals).collect();
    assert_eq!(counts, [450, 900, 450]);
    assert!((p.duration_s() - 9.0).abs() < 1e-9);
    assert_eq!(p.phases[1].rate_at(4.0), 300.0);
    assert!(Profile::parse("ramp-300", 0.0).is_err());
}

#[test]
fn stress_steps_climb_by_50() {
    let p = Profile::parse("stress", 1.0).unwrap();
    assert_eq!(p.phases.len(), STRESS_MAX_STEPS);
    assert_eq!(p.phases[0].name, "step-50");
    assert_eq!(p.phases[2].arrivals(), 150 * 20);
    assert_eq!(p.phases[3].start_s, 60.0);
    assert!(p.describe().contains("p99 > 10 s"));
}

#[test]
fn constant_is_one_plateau_at_a_fixed_rate() {
    let p = Profile::parse("constant-30-60", 0.5).unwrap();
    assert_eq!(p.phases.len(), 1);
    assert_eq!(p.plateau(), Some(0));
    assert_eq!(p.duration_s(), 30.0);
    assert_eq!(p.planned_requests(), 900);
    let secs = per_second(&p);
    assert!(secs[..30].iter().all(|&n| n == 30), "{secs:?}");
    assert!(Profile::parse("constant-30", 1.0).is_err());
    assert!(Profile::parse("constant-0-60", 1.0).is_err());
}

#[test]
fn closed_profiles_and_errors() {
    let p = Profile::parse("closed-30-300", 1.0).unwrap();
    assert_eq!(
        p.model,
        Model::Closed {
            clients: 30,
            requests: 300
        }
    );
    assert_eq!(p.planned_requests(), 300);
    assert_eq!(p.info().model, "closed");
    assert!(Profile::parse("closed-30", 1.0).is_err());
    let timed = Profile::parse("closed-64-for-15", 2.0).unwrap();
    assert_eq!(
        timed.model,
        Model::ClosedFor {
            clients: 64,
            seconds: 30.0
        }
    );
    assert_eq!(
        (timed.planned_requests(), timed.info().model.as_str()),
        (0, "closed")
    );
    assert!(Profile::parse("closed-64-for-0", 1.0).is_err());
    assert!(Profile::parse("closed-64-for-x", 1.0).is_err());
    assert!(Profile::parse("ramp-0", 1.0).is_err());
    assert!(Profile::parse("ramp-x", 1.0).is_err());
    assert!(Profile::parse("burst", 1.0).is_err());
}

#[test]
fn phase_lookup() {
    let p = Profile::parse("ramp-10", 1.0).unwrap();
    assert_eq!(p.phase_at(0.0), Some(0));
    assert_eq!(p.phase_at(45.0), Some(1));
    assert_eq!(p.phase_at(89.9), Some(2));
    assert_eq!(p.phase_at(90.0), None);
}

#[test]
fn a_hold_settles_at_its_rate_before_the_judged_plateau_whatever_the_scale() {
    let p = Profile::parse("hold-100-23", 0.5).unwrap();
    let names: Vec<&str> = p.phases.iter().map(|ph| ph.name.as_str()).collect();
    assert_eq!(names, ["ramp-up", SETTLE, "constant"]);
    // The ramp and the plateau are halved, the settling is not: it is the critical path's.
    assert_eq!(p.phases[1].start_s, 5.0);
    assert_eq!(p.phases[1].duration_s, 23.0);
    assert_eq!(p.plateau(), Some(2));
    assert_eq!(p.plateau_seconds(), Some((28, 38)));
    let secs = per_second(&p);
    assert!(secs[5..38].iter().all(|&n| n == 100), "{secs:?}");
    let plain = Profile::parse("hold-100", 1.0).unwrap();
    assert_eq!(plain.phases.len(), 2, "no settling asked, none added");
    assert!(Profile::parse("hold-100-0", 1.0).is_err());
}
