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
    let orders = r.summary.ok.max(1) as f64;
    let settings = r.config.settings();
    let (peak_in_flight, rss_per_in_flight_kib) = in_flight(r);
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
        cpu_s_per_1000: r.summary.api_cpu_seconds.map(|c| 1000.0 * c / orders),
        money_balanced: r.money.as_ref().map(|m| m.balanced()),
        died: r.api_exit.as_ref().map(|e| e.describe()),
        cause: (!met).then(|| stopped_by(r)),
        cpu_by_role: r.cpu_by_role.clone(),
        plateau_orders: r.plateau.as_ref().map(|p| p.ok),
        peak_in_flight,
        rss_per_in_flight_kib,
    }
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
}
