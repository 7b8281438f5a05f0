use super::*;
use crate::predict::costs::Spread;

fn spread(median: f64, min: f64, max: f64) -> Spread {
    Spread { median, min, max }
}

/// Costs like the 0.125 CPU searches': blocking-api 0.85 CPU-ms per order and 135/s (1,080 per
/// core), reactive-api 0.55 and 209/s (1,672 per core).
fn costs(path_ms: u64) -> Vec<UnitCosts> {
    vec![
        UnitCosts {
            api: "blocking-api".into(),
            critical_path_ms: path_ms,
            searches: 3,
            cpu_ms: spread(0.85, 0.8, 0.9),
            quota_used: spread(0.92, 0.9, 0.95),
            per_core: spread(1080.0, 1040.0, 1080.0),
            hold_beyond_path_ms: Some(12.0),
            threads: Some(9.0),
            kib_per_in_flight: Some(140.0),
            base_mib: 18.0,
        },
        UnitCosts {
            api: "reactive-api".into(),
            critical_path_ms: path_ms,
            searches: 3,
            cpu_ms: spread(0.55, 0.5, 0.6),
            quota_used: spread(0.98, 0.94, 1.0),
            per_core: spread(1672.0, 1600.0, 1824.0),
            hold_beyond_path_ms: None,
            threads: None,
            kib_per_in_flight: Some(95.0),
            base_mib: 24.0,
        },
    ]
}

fn cell(api: &str, cores: f64, mib: u64, path: u64, period: f64, burst: f64) -> Cell {
    Cell {
        api: api.into(),
        cpu_cores: cores,
        memory_mib: mib,
        critical_path_ms: path,
        cfs_period_ms: period,
        cfs_burst_ms: burst,
    }
}

#[test]
fn the_share_beyond_a_periods_room_is_the_poisson_excess() {
    // E[(N − 2)⁺] for N ~ Poisson(2) is 2·P(0) + 1·P(1) = 4e⁻², over a mean of 2.
    assert!((share_beyond(2.0, 2.0) - 2.0 * (-2.0_f64).exp()).abs() < 1e-9);
    assert!(
        (share_beyond(3.0, 0.0) - 1.0).abs() < 1e-9,
        "room for none: all wait"
    );
    assert!(share_beyond(5.0, 40.0) < 1e-9);
    assert_eq!(share_beyond(0.0, 1.0), 0.0);
}

#[test]
fn a_10_ms_period_never_fails_an_order_by_its_stall_so_the_cpu_stops_the_api() {
    for path in [22, 220, 2200] {
        let c = costs(path);
        let p = predict(&cell("blocking-api", 0.125, 128, path, 10.0, 0.0), &c).unwrap();
        assert_eq!(p.stopped_by, "cpu", "{p:?}");
        assert_eq!(p.capacity_rps, 135.0);
        assert_eq!(p.band_rps, [130.0, 135.0]);
    }
}

#[test]
fn a_100_ms_period_fails_the_220_ms_row_by_its_stall_and_a_burst_gives_back_some() {
    let c = costs(220);
    let at = |burst| predict(&cell("blocking-api", 0.125, 128, 220, 100.0, burst), &c).unwrap();
    let k8s = at(0.0);
    // 87.5 ms of stall against a 33 ms margin: 12.5 ÷ 0.85 = 14.7 orders fit a period.
    assert_eq!(k8s.stopped_by, "cfs_stall", "{k8s:?}");
    assert!(
        k8s.capacity_rps < 135.0 && k8s.capacity_rps > 60.0,
        "{k8s:?}"
    );
    let burst = at(12.5);
    assert!(
        burst.capacity_rps > k8s.capacity_rps,
        "{burst:?} against {k8s:?}"
    );
    // At 2.2 s the 87.5 ms stall fits in the 330 ms margin: the CPU again.
    let long = predict(
        &cell("blocking-api", 0.125, 128, 2200, 100.0, 0.0),
        &costs(2200),
    );
    assert_eq!(long.unwrap().stopped_by, "cpu");
}

#[test]
fn memory_stops_reactive_api_when_its_orders_in_flight_outgrow_the_pod() {
    let c = costs(22_000);
    let p = predict(&cell("reactive-api", 0.125, 128, 22_000, 10.0, 0.0), &c).unwrap();
    // (0.9 × 128 − 24) MiB ÷ 95 KiB = 983 in flight = 44.7/s × 22 s.
    assert_eq!(p.stopped_by, "memory", "{p:?}");
    assert!((p.capacity_rps - 44.7).abs() < 1.0, "{p:?}");
    let big = predict(&cell("reactive-api", 0.125, 1024, 22_000, 10.0, 0.0), &c).unwrap();
    assert_eq!(big.stopped_by, "cpu", "{big:?}");
}

#[test]
fn blocking_apis_threads_are_its_memory_sized_by_erlang_b() {
    let c = costs(2200);
    let p = predict(&cell("blocking-api", 0.125, 64, 2200, 10.0, 0.0), &c).unwrap();
    assert_eq!(p.stopped_by, "memory", "{p:?}");
    // (0.9 × 64 − 18) MiB ÷ 140 KiB = 289 threads, Erlang B's pool for ≈ 120/s × 2.21 s.
    let threads = erlang_b_servers(p.capacity_rps * 2.212, AUTO_THREADS_LOSS);
    assert!(
        f64::from(threads) * 140.0 / 1024.0 <= 0.9 * 64.0 - 18.0,
        "{p:?}"
    );
    assert!(p.capacity_rps > 100.0 && p.capacity_rps < 135.0, "{p:?}");
}

#[test]
fn reactive_api_gets_an_event_loop_per_core_and_no_more_than_a_core_each() {
    let c = costs(22);
    let two = predict(&cell("reactive-api", 2.0, 2048, 22, 100.0, 0.0), &c).unwrap();
    assert_eq!(two.capacity_rps, 2.0 * 1672.0, "{two:?}");
    assert!(two.arithmetic.iter().any(|l| l.contains("2 event loop(s)")));
}

#[test]
fn the_costs_of_the_nearest_critical_path_are_used() {
    let mut c = costs(22);
    c.extend(costs(2200));
    assert_eq!(
        nearest(&c, "blocking-api", 22_000)
            .unwrap()
            .critical_path_ms,
        2200
    );
    assert_eq!(
        nearest(&c, "blocking-api", 100).unwrap().critical_path_ms,
        22
    );
    assert!(nearest(&c, "other-api", 22).is_none());
}
