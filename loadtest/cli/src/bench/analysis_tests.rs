use std::collections::BTreeMap;

use lab_results::bench::{BENCH_SCHEMA_VERSION, BenchResults, BenchSettings, Pinning};
use lab_results::{Environment, Limits, MockLatencies};

use super::*;

fn window() -> WindowCounts {
    WindowCounts {
        seconds: 20.0,
        orders: 8000,
        api_user_s: 2.4,
        api_system_s: 1.6,
        api_cpu_wait_s: Some(0.1),
        api_voluntary_switches: 40_000,
        api_involuntary_switches: 800,
        sql_statements: Some(24_016),
        http_calls: Some(24_000),
        generator_cpu_s: Some(2.0),
        mock_deps_cpu_s: Some(1.2),
        postgres_cpu_s: Some(10.0),
        latency_proxy_cpu_s: None,
        machine_busy_s: Some(38.0),
        postgres: Some(lab_results::cost::PgCounters {
            wal_records: 80_000,
            wal_bytes: 16_000_000,
            commits: 24_000,
            ..Default::default()
        }),
    }
}

fn cell(api: &str, mocks: &str, busy: f64, rss: u64) -> BenchCell {
    let w = window();
    BenchCell {
        api: api.to_owned(),
        mocks: mocks.to_owned(),
        mock_latency_ms: MockLatencies {
            seller: 0,
            risk: 0,
            payment: 0,
        },
        clients: 32,
        limits: Limits {
            limits_enforced: true,
            cpu_cores: Some(1.0),
            cpu_period_us: None,
            cpu_burst_us: None,
            memory_bytes: Some(1 << 30),
            mechanism: "cgroup v1".to_owned(),
            note: String::new(),
            pinning: None,
        },
        per_order: per_order(&w),
        orders_per_s: w.orders_per_s(),
        api_cpu_share: w.api_cpu_share(),
        window: w,
        memory: MemoryFigures {
            idle_rss_bytes: 10 << 20,
            peak_rss_bytes: rss + (1 << 20),
            window_mean_rss_bytes: rss,
            window_mean_threads: 12.0,
            busy_kind: IN_FLIGHT.to_owned(),
            window_mean_busy: Some(busy),
            rss_growth_per_busy_bytes: None,
            samples: 40,
            thread_stacks: Some(3),
            thread_stack_rss_bytes: Some(60 << 10),
        },
        statements: vec![StatementCalls {
            query: "INSERT INTO orders …".to_owned(),
            calls: 8000,
            per_order: 1.0,
            mean_ms: 0.8,
        }],
        order_path_statements: Some(3),
        outcomes: BTreeMap::from([("201".to_owned(), 8200)]),
        bound: None,
        cpu_by_role: None,
    }
}

#[test]
fn per_order_divides_every_counter_by_the_orders() {
    let p = per_order(&window()).unwrap();
    assert!((p.api_cpu_us - 500.0).abs() < 1e-9, "{p:?}");
    assert!((p.api_user_us - 300.0).abs() < 1e-9);
    assert!((p.api_system_us - 200.0).abs() < 1e-9);
    assert!((p.context_switches - 5.1).abs() < 1e-9);
    assert!((p.voluntary_switches - 5.0).abs() < 1e-9);
    assert!((p.sql_statements.unwrap() - 3.002).abs() < 1e-9);
    assert_eq!(p.http_calls, Some(3.0));
    assert_eq!(p.postgres_cpu_us, Some(1250.0));
    assert_eq!(p.latency_proxy_cpu_us, None);
    // 2.0 + 1.2 + 10.0 s of harness over 8000 orders.
    assert!((p.harness_cpu_us - 1650.0).abs() < 1e-9);
    // 38 s busy − 4 s API − 13.2 s harness = 20.8 s of other load.
    assert!((p.other_cpu_us.unwrap() - 2600.0).abs() < 1e-6);
    let pg = p.postgres.unwrap();
    assert_eq!(
        (pg.wal_records, pg.wal_bytes, pg.commits),
        (10.0, 2000.0, 3.0)
    );
    let w = window();
    assert!((w.orders_per_s() - 400.0).abs() < 1e-9);
    assert!((w.api_cpu_share() - 0.2).abs() < 1e-9);
    let empty = WindowCounts {
        orders: 0,
        ..window()
    };
    assert_eq!(per_order(&empty), None);
    assert_eq!(WindowCounts::default().orders_per_s(), 0.0);
}

#[test]
fn memory_growth_and_slope() {
    let m = MemoryFigures {
        idle_rss_bytes: 10_000,
        window_mean_rss_bytes: 110_000,
        window_mean_busy: Some(50.0),
        ..Default::default()
    };
    assert_eq!(growth_per_busy(&m), Some(2000.0));
    let idle = MemoryFigures {
        window_mean_busy: Some(0.5),
        ..m.clone()
    };
    assert_eq!(growth_per_busy(&idle), None);

    let zero = cell("reactive-api", "0ms", 32.0, 20 << 20);
    let seed = cell(
        "reactive-api",
        "seed",
        1032.0,
        (20 << 20) + 1000 * 16 * 1024,
    );
    let s = memory_slope(&seed, &zero).unwrap();
    assert_eq!(
        (s.from_mocks.as_str(), s.to_mocks.as_str()),
        ("0ms", "seed")
    );
    assert!((s.bytes_per_busy - 16.0 * 1024.0).abs() < 1e-9, "{s:?}");
    let near = cell("reactive-api", "seed", 40.0, 30 << 20);
    assert_eq!(memory_slope(&zero, &near), None, "8 apart: noise");
    let other = cell("blocking-api", "seed", 200.0, 30 << 20);
    assert_eq!(memory_slope(&zero, &other), None, "two APIs");
    let slopes = memory_slopes(&[zero.clone(), seed.clone(), other]);
    assert_eq!(slopes.len(), 1, "blocking has a single cell: no slope");
}

#[test]
fn targets_name_each_figure_and_say_whether_it_is_met() {
    let zero = cell("reactive-api", "0ms", 32.0, 20 << 20);
    let seed = cell(
        "reactive-api",
        "seed",
        1032.0,
        (20 << 20) + 1000 * 40 * 1024,
    );
    let blocking = cell("blocking-api", "0ms", 32.0, 20 << 20);
    let cells = vec![zero, seed, blocking];
    let slopes = memory_slopes(&cells);
    let t = targets(&cells, &slopes);
    let find = |name: &str| t.iter().find(|c| c.name.starts_with(name)).unwrap();
    let r = find("reactive-api CPU per order");
    assert_eq!(
        (r.measured, r.limit, r.met),
        (Some(500.0), Some(250.0), Some(false))
    );
    let b = find("blocking-api CPU per order");
    assert_eq!(b.limit, Some(400.0));
    assert_eq!(b.met, Some(false));
    let s = find("reactive-api SQL statements per order (mocks seed)");
    assert_eq!(
        (s.measured, s.met),
        (Some(3.0), Some(true)),
        "3 statements on the path"
    );
    let m = find("reactive-api RSS per in-flight order (slope 0ms → seed)");
    assert_eq!(m.met, Some(false), "40 KiB > 32 KiB: {m:?}");
    assert_eq!(t.len(), 2 + 3 + 1);
}

#[test]
fn the_order_path_counts_whole_statements() {
    let st = |per_order: f64| StatementCalls {
        query: String::new(),
        calls: 0,
        per_order,
        mean_ms: 0.0,
    };
    let path = [st(1.02), st(0.97), st(1.0), st(0.002)];
    assert_eq!(order_path_statements(&path), Some(3));
    assert_eq!(
        order_path_statements(&[st(2.04), st(0.99)]),
        Some(3),
        "one statement twice"
    );
    assert_eq!(order_path_statements(&[]), None);
}

#[test]
fn bound_reason_only_when_the_api_is_not_saturated() {
    let w = window();
    let ctx = BoundContext {
        clients: 32,
        busy: Some(10.0),
        pool: None,
        cores: 2.0,
        harness_cpus: None,
    };
    let r = bound_reason(&w, &ctx).unwrap();
    assert!(r.starts_with("API at 20 % of its CPU"), "{r}");
    assert!(
        r.contains("machine was busy (1.9 of its 2 CPUs)"),
        "38 s of 40: {r}"
    );
    let pool = BoundContext {
        clients: 200,
        busy: Some(199.0),
        pool: Some(200),
        ..ctx
    };
    let r = bound_reason(&w, &pool).unwrap();
    assert!(r.contains("200 blocking threads were all busy"), "{r}");
    // 13.2 s of harness CPU in 20 s: 0.66 of one pinned CPU is not its limit; of a half, it is.
    let pinned = BoundContext {
        harness_cpus: Some(1.0),
        cores: 8.0,
        ..ctx
    };
    assert!(bound_reason(&w, &pinned).unwrap().contains("32 clients"));
    let half = BoundContext {
        harness_cpus: Some(0.5),
        ..pinned
    };
    let r = bound_reason(&w, &half).unwrap();
    assert!(
        r.contains("harness (PostgreSQL, mock-deps, generator) used 0.66"),
        "{r}"
    );
    let saturated = WindowCounts {
        api_user_s: 12.0,
        api_system_s: 7.0,
        ..window()
    };
    assert_eq!(bound_reason(&saturated, &ctx), None);
}

#[test]
fn json_round_trip_and_newer_versions_are_refused() {
    let cells = vec![
        cell("reactive-api", "0ms", 32.0, 20 << 20),
        cell("reactive-api", "seed", 1032.0, 40 << 20),
    ];
    let slopes = memory_slopes(&cells);
    let results = BenchResults {
        schema_version: BENCH_SCHEMA_VERSION,
        started_at: "2026-12-02T10:00:00Z".to_owned(),
        command: "loadtest bench".to_owned(),
        environment: Environment::default(),
        settings: BenchSettings {
            warmup_s: 5.0,
            seconds: 20.0,
            db_durability: "on".to_owned(),
            db_rtt_ms: 0.0,
            api_settings: BTreeMap::from([("DB_POOL_SIZE".to_owned(), "100".to_owned())]),
            pinning: Some(Pinning {
                api_cpus: vec![1],
                harness_cpus: vec![0],
            }),
        },
        targets: targets(&cells, &slopes),
        memory_slopes: slopes,
        cells,
        notes: vec!["contention".to_owned()],
        instruction_settings: None,
        instructions: Vec::new(),
    };
    let dir = std::env::temp_dir().join(format!("bench-json-{}", std::process::id()));
    let path = dir.join("bench.json");
    results.save(&path).unwrap();
    let back = BenchResults::load(&path).unwrap();
    assert_eq!(back, results);
    assert!(back.cell("reactive-api", "seed").is_some());
    assert!(back.cell("blocking-api", "seed").is_none());

    let mut newer: serde_json::Value = serde_json::to_value(&results).unwrap();
    newer["schema_version"] = serde_json::json!(BENCH_SCHEMA_VERSION + 1);
    std::fs::write(&path, newer.to_string()).unwrap();
    let err = BenchResults::load(&path).unwrap_err().to_string();
    assert!(err.contains("schema_version"), "{err}");

    // Additive fields: a file without the derived lists still loads.
    let mut older: serde_json::Value = serde_json::to_value(&results).unwrap();
    for k in ["memory_slopes", "targets", "notes"] {
        older.as_object_mut().unwrap().remove(k);
    }
    std::fs::write(&path, older.to_string()).unwrap();
    assert!(BenchResults::load(&path).unwrap().targets.is_empty());
    let _ = std::fs::remove_dir_all(dir);
}
