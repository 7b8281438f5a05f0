//! How one lab run of `--scenario capacity` or `--scenario threads` becomes a row of its
//! `scenario.json` (`lab_results::scenario::StepPoint`): what the runner (`mod.rs`) records
//! and the page (`lab_report::scenario::capacity_table`) reads.

use lab_results::RunResults;
use lab_results::numbers::MIB;
use lab_results::scenario::StepPoint;

use super::cause::stopped_by;

/// The figures of one run, over its plateau.
pub fn step_point(r: &RunResults, rate: f64, met: bool) -> StepPoint {
    let s = r.plateau.as_ref().unwrap_or(&r.summary);
    let ok_share_pct = if s.offered > 0 {
        100.0 * (s.ok + s.replayed) as f64 / s.offered as f64
    } else {
        0.0
    };
    let settings = r.config.settings();
    let (peak_in_flight, rss_per_in_flight_kib) = in_flight(r);
    let (refused, refused_per_second) = super::refusals::refusals(r);
    StepPoint {
        api: r.api.clone(),
        blocking_threads: settings.blocking_threads.and_then(|t| t.try_into().ok()),
        allocator: settings.allocator,
        rate_rps: rate,
        met_objective: met,
        harness_bound: r.harness_bound.clone(),
        orders_rps: s.ok_throughput_rps,
        ok_share_pct,
        p99_ms: s.latency_ms.p99,
        peak_rss_mib: r.summary.peak_rss_bytes.map(|b| b as f64 / MIB),
        peak_threads: r.summary.peak_threads,
        rss_per_thread_kib: rss_per_thread_kib(r),
        // The plateau's, as every other figure of the step (before 2026-12-07 the whole run's,
        // start-up, ramp and settling included: 2–10 % more per order).
        cpu_s_per_1000: s.cpu_seconds_per_1000_ok,
        money_balanced: r.money.as_ref().map(|m| m.balanced()),
        died: r.api_exit.as_ref().map(|e| e.describe()),
        cause: (!met).then(|| stopped_by(r)),
        cpu_by_role: r.cpu_by_role.clone(),
        plateau_orders: r.plateau.as_ref().map(|p| p.ok),
        peak_in_flight,
        rss_per_in_flight_kib,
        refused,
        refused_per_second,
        in_flight_rise_pct: in_flight_rise_pct(r),
        thread_hold_ms: thread_hold_ms(r, s.ok_throughput_rps),
        cgroup_peak_mib: r.cgroup_memory_peak_bytes.map(|b| b as f64 / MIB),
        // The runner's, after the run (`Runner::step`).
        probe_ms: None,
    }
}

/// The settings of `r` that set its search apart from another of the same pod and critical
/// path (`CapacityFile::cell_settings`), added to `into` where it has none of them yet: the
/// database's durability, the loop-lag rule, and blocking-api's pool — `auto` where the lab
/// sized it (it records the rule), else its count.
pub fn add_cell_settings(into: &mut std::collections::BTreeMap<String, String>, r: &RunResults) {
    let settings = &r.config.api_settings;
    for key in ["PG_DURABILITY", "MAX_LOOP_LAG_MS"] {
        if let Some(v) = settings.get(key) {
            into.entry(key.to_owned()).or_insert_with(|| v.clone());
        }
    }
    let pool = match (
        settings.get("BLOCKING_THREADS_RULE"),
        settings.get("BLOCKING_THREADS"),
    ) {
        (Some(_), _) => Some("auto".to_owned()),
        (None, Some(count)) => Some(count.clone()),
        (None, None) => None,
    };
    if let Some(pool) = pool {
        into.entry("BLOCKING_THREADS".to_owned()).or_insert(pool);
    }
}

/// Little's law on blocking-api's pool over the plateau: its mean busy threads ÷ the orders
/// served per second, ms; `None` for an API without a pool or a plateau that served nothing.
pub fn thread_hold_ms(r: &RunResults, served_rps: f64) -> Option<f64> {
    let busy: Vec<f64> = r
        .seconds
        .iter()
        .filter(|s| s.phase == "constant")
        .filter_map(|s| s.api_metrics.and_then(|m| m.blocking_pool_busy))
        .collect();
    (!busy.is_empty() && served_rps > 0.0)
        .then(|| 1000.0 * busy.iter().sum::<f64>() / busy.len() as f64 / served_rps)
}

/// The plateau's second half's mean orders in flight against its first half's, % (`None`
/// under 4 plateau seconds or with none in flight).
pub fn in_flight_rise_pct(r: &RunResults) -> Option<f64> {
    let counts: Vec<f64> = r
        .seconds
        .iter()
        .filter(|s| s.phase == "constant")
        .map(|s| s.in_flight as f64)
        .collect();
    let half = counts.len() / 2;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (first, second) = (mean(&counts[..half]), mean(&counts[half..]));
    (half >= 2 && first > 0.0).then(|| 100.0 * (second - first) / first)
}

/// The most orders in flight (the generator's open requests) in any second before the drain,
/// and RSS per order in flight, KiB (`bench --memory`'s estimator, [`crate::bench::memory::figure`]).
pub fn in_flight(r: &RunResults) -> (Option<u64>, Option<f64>) {
    let peak = r
        .seconds
        .iter()
        .filter(|s| s.phase != "drain")
        .map(|s| s.in_flight)
        .max();
    let rss = crate::bench::memory::figure(r).map(|f| f.rss_per_in_flight_kib);
    (peak, rss)
}

/// What each thread the load added cost, KiB: the least-squares slope of RSS on the thread count
/// over every sampled second before the drain — the estimator `bench --memory` gates
/// ([`crate::bench::memory::slope`]), steadier than two points, whose RSS lags the count by up to a
/// second. `None` when the load added fewer than 10 threads.
pub fn rss_per_thread_kib(r: &RunResults) -> Option<f64> {
    let points: Vec<(f64, f64)> = r
        .seconds
        .iter()
        .filter(|s| s.phase != "drain")
        .filter_map(|s| s.api_process)
        .map(|p| (p.threads as f64, p.rss_bytes as f64))
        .collect();
    let (least, most) = points
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    (most - least >= 10.0)
        .then(|| crate::bench::memory::slope(&points))
        .flatten()
        .map(|b| b / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab_results::{ProcessSample, SecondSample};

    fn run(points: &[(u64, u64)]) -> RunResults {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../report/tests/fixtures/blocking-api-0.json");
        let mut r = RunResults::load(&path).expect("fixture loads");
        r.seconds = points
            .iter()
            .map(|&(threads, rss_bytes)| SecondSample {
                phase: "constant".to_owned(),
                api_process: Some(ProcessSample {
                    threads,
                    rss_bytes,
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect();
        r
    }

    #[test]
    fn rss_per_thread_is_the_least_squares_slope_not_two_points() {
        // 120 KiB a thread, and a peak second whose RSS ran 2 MiB ahead of its thread count: two
        // points (first to peak) would read 120 + 2048 / 400 ≈ 125.1 KiB, the slope ≈ 122.7.
        let mut points: Vec<(u64, u64)> = (0..=8)
            .map(|i| 200 + 50 * i)
            .map(|t| (t, (40 << 20) + (t - 200) * 120 * 1024))
            .collect();
        points.last_mut().unwrap().1 += 2 << 20;
        let kib = rss_per_thread_kib(&run(&points)).unwrap();
        assert!(kib > 120.0 && kib < 123.0, "{kib}");
        assert_eq!(
            rss_per_thread_kib(&run(&[(200, 1 << 30), (205, 2 << 30)])),
            None
        );
    }

    #[test]
    fn a_plateau_still_filling_reads_as_a_rise_and_a_steady_one_as_none() {
        let with_in_flight = |counts: &[u64]| {
            let mut r = run(&[]);
            r.seconds = counts
                .iter()
                .map(|&n| SecondSample {
                    phase: "constant".to_owned(),
                    in_flight: n,
                    ..Default::default()
                })
                .collect();
            r
        };
        // A 22 s critical path at 40/s judged before it settled: 400 → 800 in flight.
        let rising = in_flight_rise_pct(&with_in_flight(&[400, 500, 600, 700, 800, 900])).unwrap();
        assert!((rising - 60.0).abs() < 0.1, "{rising}");
        let steady = in_flight_rise_pct(&with_in_flight(&[880, 881, 879, 880])).unwrap();
        assert!(steady.abs() < 0.5, "{steady}");
        assert_eq!(in_flight_rise_pct(&with_in_flight(&[1, 2, 3])), None);
    }

    #[test]
    fn a_thread_is_held_its_pools_busy_count_over_the_rate_served() {
        use lab_results::ApiMetrics;
        let mut r = run(&[]);
        r.seconds = [6.0, 8.0, 7.0]
            .iter()
            .map(|&busy| SecondSample {
                phase: "constant".to_owned(),
                api_metrics: Some(ApiMetrics {
                    blocking_pool_busy: Some(busy),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect();
        // 7 threads busy on average at 233 orders/s: each held 30 ms.
        let ms = thread_hold_ms(&r, 233.0).unwrap();
        assert!((ms - 30.04).abs() < 0.01, "{ms}");
        assert_eq!(thread_hold_ms(&r, 0.0), None);
        r.seconds.iter_mut().for_each(|s| s.api_metrics = None);
        assert_eq!(thread_hold_ms(&r, 233.0), None, "no pool");
    }

    #[test]
    fn the_refusals_are_each_plateau_seconds_rise_by_reason() {
        use lab_results::{ApiMetrics, Refusals};
        let mut r = run(&[]);
        let counted = |loop_lag: f64, overloaded: f64, phase: &str| SecondSample {
            phase: phase.to_owned(),
            api_metrics: Some(ApiMetrics {
                refusals: Some(Refusals {
                    loop_lag,
                    overloaded,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        r.seconds = vec![
            counted(50.0, 0.0, "ramp-up"),
            counted(60.0, 0.0, "constant"),
            counted(60.0, 3.0, "constant"),
            counted(75.0, 3.0, "constant"),
        ];
        let (total, per_second) = super::super::refusals::refusals(&r);
        let total = total.unwrap();
        // The ramp's 50 are left out; the plateau's first second's 10 are in.
        assert_eq!((total.loop_lag, total.overloaded), (25.0, 3.0));
        let lag: Vec<f64> = per_second.iter().map(|s| s.loop_lag).collect();
        assert_eq!(lag, [10.0, 0.0, 15.0]);
        assert_eq!(per_second[1].overloaded, 3.0);
    }
}
