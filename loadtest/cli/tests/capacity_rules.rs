//! The capacity search's stopping-resource rule (`scenario::capacity::cause`) on the report's
//! recorded runs (`loadtest/report/tests/fixtures`), each changed only where a cause shows: an
//! OOM kill, another death, the harness flagged, RSS at the limit, the thread bound, the
//! admission cap, the CPU quota, the database pool, PostgreSQL's core, a burst of slow
//! transactions — and none of them.

use std::path::Path;

use lab_results::scenario::StoppedBy;
use lab_results::{ApiExit, OUTCOME_OVERLOADED, RunResults};
use loadtest::scenario::capacity::cause::{is_transient, stopped_by};

fn fixture(api: &str) -> RunResults {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../report/tests/fixtures/{api}-0.json"));
    RunResults::load(&path).expect("fixture loads")
}

/// The reactive fixture at a plateau of 120/s with nothing at its limit (its own 31 pool
/// errors and waits removed).
fn quiet() -> RunResults {
    let mut r = fixture("reactive-api");
    for s in &mut r.seconds {
        if let Some(m) = s.api_metrics.as_mut() {
            m.db_pool_waiting = Some(0.0);
            m.db_pool_acquire_timeouts = Some(0.0);
        }
    }
    steady_transactions(&mut r, |_| 1.0);
    r
}

/// Every second's transactions counted again: 150 a second, each taking `ms(t)` ms.
fn steady_transactions(r: &mut RunResults, ms: impl Fn(u32) -> f64) {
    let (mut sum, mut count) = (0.0, 0.0);
    for s in &mut r.seconds {
        if let Some(m) = s.api_metrics.as_mut() {
            count += 150.0;
            sum += 150.0 * ms(s.t) / 1000.0;
            m.db_tx_seconds_sum = Some(sum);
            m.db_tx_count = Some(count);
        }
    }
}

fn plateau_seconds(r: &mut RunResults, mut f: impl FnMut(&mut lab_results::SecondSample)) {
    for s in r.seconds.iter_mut().filter(|s| s.phase == "constant") {
        f(s);
    }
}

fn death(signal: i32, oom: bool) -> ApiExit {
    ApiExit {
        t_s: 43.2,
        oom_killed: oom,
        signal: Some(signal),
        exit_code: None,
        oom_kills: Some(u64::from(oom)),
        restarted_for_recovery: true,
    }
}

#[test]
fn an_oom_kill_is_memory_and_names_the_kill() {
    let mut r = fixture("blocking-api");
    r.api_exit = Some(death(9, true));
    r.harness_bound = Some("generator late".into());
    let c = stopped_by(&r);
    assert_eq!(
        c.stopped_by,
        StoppedBy::Memory,
        "the kill comes before the harness"
    );
    assert!(
        c.evidence.contains("memory limit") && c.evidence.contains("43.2"),
        "{c:?}"
    );
}

#[test]
fn another_death_is_a_crash_not_memory() {
    let mut r = fixture("blocking-api");
    r.api_exit = Some(death(11, false));
    assert_eq!(stopped_by(&r).stopped_by, StoppedBy::Crashed);
}

#[test]
fn a_harness_bound_run_is_the_harness() {
    let mut r = quiet();
    r.harness_bound = Some("generator late by 900 ms at p99".into());
    let c = stopped_by(&r);
    assert_eq!(c.stopped_by, StoppedBy::Harness);
    assert!(c.evidence.contains("generator late"), "{c:?}");
}

#[test]
fn rss_near_the_limit_is_memory() {
    let mut r = quiet();
    r.summary.peak_rss_bytes = Some(1000 << 20);
    let c = stopped_by(&r);
    assert_eq!(c.stopped_by, StoppedBy::Memory);
    assert!(c.evidence.contains("1000 MiB of its 1024 MiB"), "{c:?}");
}

/// RSS counts pages the cgroup never charged (the binary's mapped pages, cached by whoever read
/// them first): where the lab read the cgroup's own peak, that decides.
#[test]
fn memory_is_judged_as_the_cgroup_counts_it_where_the_lab_read_that() {
    let mut r = quiet();
    r.summary.peak_rss_bytes = Some(1000 << 20);
    r.cgroup_memory_peak_bytes = Some(700 << 20);
    assert_ne!(stopped_by(&r).stopped_by, StoppedBy::Memory);
    r.cgroup_memory_peak_bytes = Some(950 << 20);
    let c = stopped_by(&r);
    assert_eq!(c.stopped_by, StoppedBy::Memory);
    assert!(
        c.evidence
            .contains("charged to its cgroup 950 MiB of its 1024 MiB"),
        "{c:?}"
    );
}

#[test]
fn a_plateau_at_the_thread_bound_is_threads() {
    let mut r = fixture("blocking-api");
    let l = r.littles_law.as_mut().unwrap();
    (l.measured_plateau_rps, l.note) = (Some(90.4), None);
    let c = stopped_by(&r);
    assert_eq!(c.stopped_by, StoppedBy::Threads, "{c:?}");
    assert!(c.evidence.contains("200 threads"), "{c:?}");
    // Below the bound's 95 %, the threads were not what held it.
    r.littles_law.as_mut().unwrap().measured_plateau_rps = Some(60.0);
    assert_ne!(stopped_by(&r).stopped_by, StoppedBy::Threads);
}

#[test]
fn refusals_at_a_full_admission_cap_are_the_in_flight_cap() {
    let mut r = quiet();
    r.config
        .api_settings
        .insert("MAX_IN_FLIGHT".into(), "200".into());
    r.plateau
        .as_mut()
        .unwrap()
        .errors_by_kind
        .insert(OUTCOME_OVERLOADED.into(), 500);
    plateau_seconds(&mut r, |s| {
        s.api_metrics.as_mut().unwrap().in_flight = Some(200.0);
    });
    let c = stopped_by(&r);
    assert_eq!(c.stopped_by, StoppedBy::InFlightCap, "{c:?}");
    // A cap whose bound (200 ÷ 2.2 s ≈ 91/s) is above the offered rate is not the cause.
    r.config
        .api_settings
        .insert("MAX_IN_FLIGHT".into(), "4096".into());
    assert_ne!(stopped_by(&r).stopped_by, StoppedBy::InFlightCap);
}

/// Where the API counted its refusals by reason, the evidence names them, and refusals that were
/// all the lag rule's are not put on the admission cap; a file without the count says so rather
/// than naming a rule.
#[test]
fn refusals_are_named_by_the_reason_the_api_counted_never_guessed() {
    let with_counts = |loop_lag: f64, overloaded: f64| {
        let mut r = quiet();
        r.config
            .api_settings
            .insert("MAX_IN_FLIGHT".into(), "200".into());
        r.plateau
            .as_mut()
            .unwrap()
            .errors_by_kind
            .insert(OUTCOME_OVERLOADED.into(), 500);
        let mut n = 0.0;
        plateau_seconds(&mut r, |s| {
            let m = s.api_metrics.as_mut().unwrap();
            m.in_flight = Some(200.0);
            m.refusals = Some(lab_results::Refusals {
                loop_lag: loop_lag * n,
                overloaded: overloaded * n,
                ..Default::default()
            });
            n += 1.0;
        });
        stopped_by(&r)
    };
    let plateau = quiet()
        .seconds
        .iter()
        .filter(|s| s.phase == "constant")
        .count() as f64
        - 1.0;
    let cap = with_counts(0.0, 25.0);
    assert_eq!(cap.stopped_by, StoppedBy::InFlightCap, "{cap:?}");
    assert!(
        cap.evidence.contains(&format!(
            "500 refused overloaded (0 by the event loop's lag rule, {:.0} for want of a place",
            25.0 * plateau
        )),
        "{cap:?}"
    );
    let lag = with_counts(25.0, 0.0);
    assert_ne!(lag.stopped_by, StoppedBy::InFlightCap, "{lag:?}");
    assert!(!lag.evidence.contains("i.e."), "{lag:?}");
    assert!(
        lag.evidence.contains("by the event loop's lag rule"),
        "{lag:?}"
    );

    let mut old = quiet();
    old.plateau
        .as_mut()
        .unwrap()
        .errors_by_kind
        .insert(OUTCOME_OVERLOADED.into(), 40);
    let c = stopped_by(&old);
    assert_eq!(c.stopped_by, StoppedBy::Unidentified, "{c:?}");
    assert!(
        c.evidence
            .contains("40 refused overloaded (by which rule, this file does not record)"),
        "{c:?}"
    );
}

#[test]
fn a_cpu_at_its_quota_is_cpu() {
    let mut r = quiet();
    plateau_seconds(&mut r, |s| {
        s.api_process.as_mut().unwrap().cpu_percent = 97.0
    });
    let c = stopped_by(&r);
    assert_eq!(c.stopped_by, StoppedBy::Cpu, "{c:?}");
    assert_eq!(c.threshold, Some(95.0));
}

#[test]
fn throttling_in_most_periods_is_cpu_too() {
    let mut r = quiet();
    let mut periods = 0.0;
    plateau_seconds(&mut r, |s| {
        periods += 8.0;
        s.api_metrics.as_mut().unwrap().cgroup_throttled_periods = Some(periods);
    });
    assert_eq!(stopped_by(&r).stopped_by, StoppedBy::Cpu);
}

/// A pod's CFS period is its own (10 ms for `--api-cpus`): 80 throttled periods a second are
/// 80 % of a 10 ms period's 100, and 8 a second only 8 % of them, not 80 %.
#[test]
fn throttling_is_a_share_of_the_pods_own_periods() {
    let throttled = |per_second: f64| {
        let mut r = quiet();
        r.config.limits.cpu_period_us = Some(10_000);
        let mut periods = 0.0;
        plateau_seconds(&mut r, |s| {
            periods += per_second;
            s.api_metrics.as_mut().unwrap().cgroup_throttled_periods = Some(periods);
        });
        stopped_by(&r)
    };
    let c = throttled(80.0);
    assert_eq!(c.stopped_by, StoppedBy::Cpu, "{c:?}");
    assert!(c.evidence.contains("throttled in 80 %"), "{c:?}");
    assert_ne!(throttled(8.0).stopped_by, StoppedBy::Cpu);
}

#[test]
fn threads_queued_for_the_core_are_cpu_at_a_mean_below_the_quota() {
    let mut r = quiet();
    plateau_seconds(&mut r, |s| {
        let p = s.api_process.as_mut().unwrap();
        (p.cpu_percent, p.cpu_wait_percent) = (59.0, Some(539.0));
    });
    let c = stopped_by(&r);
    assert_eq!(c.stopped_by, StoppedBy::Cpu, "{c:?}");
    assert!(c.evidence.contains("5.4 runnable"), "{c:?}");
}

#[test]
fn waits_for_a_connection_are_the_db_pool() {
    let mut r = quiet();
    plateau_seconds(&mut r, |s| {
        s.api_metrics.as_mut().unwrap().db_pool_waiting = Some(12.0);
    });
    assert_eq!(stopped_by(&r).stopped_by, StoppedBy::DbPool);
    // The fixture as recorded: its pool timed out acquires.
    assert_eq!(
        stopped_by(&fixture("reactive-api")).stopped_by,
        StoppedBy::DbPool
    );
}

#[test]
fn postgres_at_its_core_is_postgres() {
    let mut r = quiet();
    plateau_seconds(&mut r, |s| s.harness.postgres_cpu_percent = Some(96.0));
    assert_eq!(stopped_by(&r).stopped_by, StoppedBy::Postgres);
}

#[test]
fn a_burst_of_slow_transactions_is_postgres_and_transient() {
    let mut r = quiet();
    let burst = r.seconds.iter().find(|s| s.phase == "constant").unwrap().t + 3;
    steady_transactions(&mut r, |t| if t == burst { 4.2 } else { 1.0 });
    let c = stopped_by(&r);
    assert_eq!(c.stopped_by, StoppedBy::Postgres, "{c:?}");
    assert!(c.evidence.contains("4.2 ms each"), "{c:?}");
    assert!(c.evidence.contains("against 1.0 ms"), "{c:?}");
    assert!(c.evidence.contains("durable commits"), "{c:?}");
    assert!(is_transient(&c));
    // On a database that does not flush its commits, the flush is not named.
    let mut fsync_off = r.clone();
    fsync_off
        .config
        .api_settings
        .insert("PG_DURABILITY".into(), "off".into());
    let off = stopped_by(&fsync_off);
    assert!(!off.evidence.contains("durable commits"), "{off:?}");
    assert!(off.evidence.contains("not the disk's flush"), "{off:?}");
    // A second only a little slower is noise, and a run whose requests waited for a
    // connection is the pool's (rule 6), not this one.
    steady_transactions(&mut r, |t| if t == burst { 1.8 } else { 1.0 });
    assert_eq!(stopped_by(&r).stopped_by, StoppedBy::Unidentified);
    let mut pg_core = quiet();
    plateau_seconds(&mut pg_core, |s| {
        s.harness.postgres_cpu_percent = Some(96.0)
    });
    assert!(!is_transient(&stopped_by(&pg_core)));
}

/// The same burst of slow transactions in a pod whose cgroup was throttled in that very second
/// (12 of its 100 periods, against 2 in the others): the API's quota stalled the transactions it
/// held, not PostgreSQL; not transient. Throttled in 9 of its periods, it stays PostgreSQL's.
#[test]
fn slow_transactions_in_a_second_the_quota_throttled_are_the_cpu() {
    let run = |periods_in_burst: f64| {
        let mut r = quiet();
        r.config.limits.cpu_period_us = Some(10_000);
        let burst = r.seconds.iter().find(|s| s.phase == "constant").unwrap().t + 3;
        steady_transactions(&mut r, |t| if t == burst { 4.2 } else { 1.0 });
        let mut periods = 0.0;
        plateau_seconds(&mut r, |s| {
            periods += if s.t == burst { periods_in_burst } else { 2.0 };
            s.api_metrics.as_mut().unwrap().cgroup_throttled_periods = Some(periods);
        });
        stopped_by(&r)
    };
    let throttled = run(12.0);
    assert_eq!(throttled.stopped_by, StoppedBy::Cpu, "{throttled:?}");
    assert_eq!(throttled.measured, Some(12.0), "{throttled:?}");
    assert!(
        throttled.evidence.contains(
            "4.2 ms throttled in 12 %; the median second 1.0 ms, the other seconds throttled in 2 %"
        ),
        "{throttled:?}"
    );
    assert!(!is_transient(&throttled));
    let database = run(9.0);
    assert_eq!(database.stopped_by, StoppedBy::Postgres, "{database:?}");
    assert!(is_transient(&database));
}

/// In a pod of 0.125 CPU (10 ms periods), three plateau seconds throttled in 95–99 of their 100
/// periods, with the transactions of the first slow and the event loop's lag rule refusing
/// orders in them: the quota in bursts, not PostgreSQL. The same refusals outside the throttled
/// seconds are not put on the quota's bursts.
#[test]
fn refusals_in_seconds_throttled_in_most_periods_are_the_cpu_quota_in_bursts() {
    let run = |refused_in_burst: bool| {
        let mut r = quiet();
        r.config.limits.cpu_period_us = Some(10_000);
        let first = r.seconds.iter().find(|s| s.phase == "constant").unwrap().t;
        let burst = first + 5..first + 8;
        steady_transactions(&mut r, |t| if t == first + 5 { 6.0 } else { 1.0 });
        let mut periods = 0.0;
        plateau_seconds(&mut r, |s| {
            let in_burst = burst.contains(&s.t);
            periods += if in_burst {
                95.0 + f64::from(s.t - first - 5) * 2.0
            } else {
                2.0
            };
            s.api_metrics.as_mut().unwrap().cgroup_throttled_periods = Some(periods);
            s.outcomes.remove(OUTCOME_OVERLOADED);
            if in_burst == refused_in_burst {
                s.outcomes.insert(OUTCOME_OVERLOADED.into(), 30);
            }
        });
        let refused = 30 * if refused_in_burst { 3 } else { 17 };
        r.plateau
            .as_mut()
            .unwrap()
            .errors_by_kind
            .insert(OUTCOME_OVERLOADED.into(), refused);
        stopped_by(&r)
    };
    let c = run(true);
    assert_eq!(c.stopped_by, StoppedBy::Cpu, "{c:?}");
    assert!(
        c.evidence
            .contains("in 3 plateau seconds its cgroup was throttled in 95–99 %"),
        "{c:?}"
    );
    assert!(
        c.evidence
            .contains("90 of the plateau's orders refused overloaded were refused in them"),
        "{c:?}"
    );
    assert!(!is_transient(&c));
    // Refused outside the throttled seconds, the refusals are not put on the quota's bursts;
    // the slow transactions of the burst's first second still are the quota's.
    let elsewhere = run(false);
    assert!(!elsewhere.evidence.contains("in bursts"), "{elsewhere:?}");
    assert_eq!(
        elsewhere.unit, "% of CFS periods, in each slow second",
        "{elsewhere:?}"
    );
}

/// blocking-api with 7 threads sized for a 22 ms critical path: every sample finds the whole
/// pool busy while orders are refused — the threads ran out, each order holding one longer than
/// the critical path. A pool with room in its samples is not the limit.
#[test]
fn a_pool_busy_in_every_sample_with_refusals_is_threads_with_the_hold_time() {
    let run = |busy: f64| {
        let mut r = quiet();
        r.config
            .api_settings
            .insert("BLOCKING_THREADS".into(), "7".into());
        plateau_seconds(&mut r, |s| {
            s.api_metrics.as_mut().unwrap().blocking_pool_busy = Some(busy);
            s.api_process.as_mut().unwrap().cpu_wait_percent = Some(36.0);
        });
        let p = r.plateau.as_mut().unwrap();
        p.errors_by_kind.insert(OUTCOME_OVERLOADED.into(), 263);
        p.ok_throughput_rps = 240.0;
        stopped_by(&r)
    };
    let c = run(7.0);
    assert_eq!(c.stopped_by, StoppedBy::Threads, "{c:?}");
    assert!(c.evidence.contains("all 7 threads busy in"), "{c:?}");
    assert!(c.evidence.contains("held its thread 29 ms"), "{c:?}");
    assert!(c.evidence.contains("1.5 ms per order"), "{c:?}");
    assert_ne!(run(6.0).stopped_by, StoppedBy::Threads);
}

/// In a pod of 0.125 CPU (10 ms periods) at 8 % mean CPU, throttled in 4–12 of every second's
/// 100 periods, the seconds throttled most the slowest: each throttled period stops every thread
/// for up to 8.75 ms, the quota in stalls. Throttled in only half the seconds, at a mean far
/// below the quota, or with a tail that does not follow the throttling (the disk's), it is not.
#[test]
fn throttled_in_most_seconds_with_the_tail_following_is_the_cpu_in_stalls() {
    let run = |cpu: f64, every: u32, follows: bool| {
        let mut r = quiet();
        r.config.limits.cpu_period_us = Some(10_000);
        r.config.limits.cpu_cores = Some(0.125);
        let mut periods = 0.0;
        plateau_seconds(&mut r, |s| {
            let rise = if s.t % every != 0 {
                0.0
            } else if s.t % 3 == 0 {
                12.0
            } else {
                4.0
            };
            periods += rise;
            s.api_metrics.as_mut().unwrap().cgroup_throttled_periods = Some(periods);
            s.api_process.as_mut().unwrap().cpu_percent = cpu;
            let l = s.latency_ms.as_mut().unwrap();
            l.p99 = 240.0 + 5.0 * if follows { rise } else { 12.0 - rise };
        });
        stopped_by(&r)
    };
    let c = run(8.0, 1, true);
    assert_eq!(c.stopped_by, StoppedBy::Cpu, "{c:?}");
    assert!(c.evidence.contains("in stalls"), "{c:?}");
    assert!(
        c.evidence.contains("up to 8.75 ms of a 10 ms period"),
        "{c:?}"
    );
    assert!(c.evidence.contains("of a 12.5 % quota"), "{c:?}");
    assert!(c.evidence.contains("(r = 1.00)"), "{c:?}");
    assert_eq!(run(4.0, 1, true).stopped_by, StoppedBy::Unidentified);
    assert_eq!(run(8.0, 2, true).stopped_by, StoppedBy::Unidentified);
    assert_eq!(run(8.0, 1, false).stopped_by, StoppedBy::Unidentified);
}

/// A step flagged harness-bound is measured again, as a miss nothing explains is; a step whose
/// API died is not (the miss is its own), nor a miss with its cause found.
#[test]
fn a_harness_bound_or_unexplained_step_is_measured_again() {
    use loadtest::scenario::capacity::points::step_point;
    use loadtest::scenario::capacity::worth_measuring_again;
    let mut r = quiet();
    assert!(worth_measuring_again(&step_point(&r, 120.0, false)));
    assert!(!worth_measuring_again(&step_point(&r, 120.0, true)));
    r.harness_bound = Some("generator fell behind its schedule".into());
    assert!(worth_measuring_again(&step_point(&r, 120.0, true)));
    assert!(worth_measuring_again(&step_point(&r, 120.0, false)));
    r.api_exit = Some(death(9, true));
    assert!(!worth_measuring_again(&step_point(&r, 120.0, false)));
    let mut pool = quiet();
    plateau_seconds(&mut pool, |s| {
        s.api_metrics.as_mut().unwrap().db_pool_waiting = Some(12.0);
    });
    assert!(!worth_measuring_again(&step_point(&pool, 120.0, false)));
}

/// An API killed for its memory limit is a miss of the API's, even when the generator fell
/// behind once its connections failed; a live API with the rig at its limit is harness-bound.
#[test]
fn a_step_whose_api_died_is_the_api_s_miss_not_the_harness() {
    use loadtest::scenario::capacity::outcome;
    use loadtest::scenario::capacity::search::Step;
    let mut r = quiet();
    r.harness_bound = Some("generator fell behind its schedule".into());
    assert_eq!(outcome(false, &r), Step::HarnessBound);
    r.api_exit = Some(death(9, true));
    assert_eq!(outcome(false, &r), Step::Missed);
    assert_eq!(stopped_by(&r).stopped_by, StoppedBy::Memory);
    assert_eq!(outcome(true, &r), Step::Met);
}

#[test]
fn nothing_at_its_limit_is_said_as_such() {
    let c = stopped_by(&quiet());
    assert_eq!(c.stopped_by, StoppedBy::Unidentified, "{c:?}");
    assert!(c.evidence.starts_with("no resource at its limit"), "{c:?}");
}

/// blocking-api with 4 threads at 22 ms, 3 busy on average, refusing orders for want of a thread
/// (its own count by reason): random arrivals found all 4 busy for longer than they may wait —
/// the threads, not "no resource at its limit". The same refusals counted by the loop-lag rule
/// are not the pool's, and without the API's count by reason nothing is guessed.
#[test]
fn refusals_for_want_of_a_thread_below_a_full_pool_are_erlangs_loss() {
    let run = |loop_lag: f64, overloaded: f64, by_reason: bool| {
        let mut r = quiet();
        r.config
            .api_settings
            .insert("BLOCKING_THREADS".into(), "4".into());
        let mut n = 0.0;
        plateau_seconds(&mut r, |s| {
            let m = s.api_metrics.as_mut().unwrap();
            m.blocking_pool_busy = Some(3.0);
            m.refusals = by_reason.then(|| lab_results::Refusals {
                loop_lag: loop_lag * n,
                overloaded: overloaded * n,
                ..Default::default()
            });
            n += 1.0;
        });
        let p = r.plateau.as_mut().unwrap();
        p.errors_by_kind.insert(OUTCOME_OVERLOADED.into(), 95);
        stopped_by(&r)
    };
    let c = run(0.0, 5.0, true);
    assert_eq!(c.stopped_by, StoppedBy::Threads, "{c:?}");
    assert!(
        c.evidence.contains("its 4 threads, by random arrivals")
            && c.evidence.contains("while 3.0 were busy on average"),
        "{c:?}"
    );
    assert_ne!(run(5.0, 0.0, true).stopped_by, StoppedBy::Threads);
    assert_ne!(run(0.0, 5.0, false).stopped_by, StoppedBy::Threads);
}

/// The rules are tried in their list's order: a run flagged harness-bound whose memory also
/// reached the limit is the harness's (it comes before the memory peak), and one killed for its
/// memory is memory's whatever else it shows.
#[test]
fn the_rules_are_tried_in_the_order_of_their_list() {
    use loadtest::scenario::capacity::cause::RULES;
    let names: Vec<&str> = RULES.iter().map(|(name, _)| *name).collect();
    let at = |name: &str| names.iter().position(|n| *n == name).unwrap();
    assert!(at("harness") < at("memory (peak)"), "{names:?}");
    let mut r = quiet();
    r.summary.peak_rss_bytes = Some(1000 << 20);
    r.harness_bound = Some("generator late by 900 ms at p99".into());
    assert_eq!(stopped_by(&r).stopped_by, StoppedBy::Harness);
    r.api_exit = Some(death(9, true));
    assert_eq!(stopped_by(&r).stopped_by, StoppedBy::Memory);
}

/// The pool's acquire timeouts are the pool's even with no second of waiting in most of the
/// plateau, and so are 503 `database_unavailable` answers while requests waited; the same
/// answers with no request waiting are not put on the pool.
#[test]
fn an_acquire_timeout_or_unavailable_answers_while_waiting_are_the_db_pool() {
    let mut r = quiet();
    let mut timeouts = 0.0;
    plateau_seconds(&mut r, |s| {
        timeouts += 1.0;
        s.api_metrics.as_mut().unwrap().db_pool_acquire_timeouts = Some(timeouts);
    });
    let c = stopped_by(&r);
    assert_eq!(c.stopped_by, StoppedBy::DbPool, "{c:?}");
    assert!(c.evidence.contains("acquire timeouts"), "{c:?}");

    let unavailable = |waiting: f64| {
        let mut r = quiet();
        r.plateau
            .as_mut()
            .unwrap()
            .errors_by_kind
            .insert("database_unavailable".into(), 7);
        let mut first = true;
        plateau_seconds(&mut r, |s| {
            if std::mem::take(&mut first) {
                s.api_metrics.as_mut().unwrap().db_pool_waiting = Some(waiting);
            }
        });
        stopped_by(&r)
    };
    let c = unavailable(3.0);
    assert_eq!(c.stopped_by, StoppedBy::DbPool, "{c:?}");
    assert!(
        c.evidence.contains("7 answered database_unavailable"),
        "{c:?}"
    );
    assert_ne!(unavailable(0.0).stopped_by, StoppedBy::DbPool);
}
