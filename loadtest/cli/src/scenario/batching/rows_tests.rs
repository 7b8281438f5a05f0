use super::*;
use crate::scenario::batching::plan::cells;
use lab_results::DbActivity;

fn lab_args() -> crate::lab_args::LabArgs {
    crate::lab_args::LabArgs::from_flags::<_, &str>([]).unwrap()
}

fn fixture(api: &str) -> RunResults {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../report/tests/fixtures/{api}-0.json"));
    RunResults::load(&path).expect("fixture loads")
}

fn figure() -> FsyncFigure {
    FsyncFigure {
        method: "fdatasync".into(),
        ops_per_s: 6666.7,
        usecs_per_op: 150.0,
        dir: "/tmp".into(),
        fs_type: "ext4".into(),
        excerpt: String::new(),
    }
}

#[test]
fn twenty_six_runs_durable_pool_ten_two_with_commit_delay_four_unsaturated() {
    let all = cells(&lab_args(), 75);
    assert_eq!(all.len(), 26);
    for c in all.iter().filter(|c| c.open_rate.is_none()) {
        let a = &c.variant.args;
        assert_eq!(a.load.profile, format!("closed-{CLIENTS}-for-12"));
        assert_eq!((a.harness.db_pool_size, a.harness.apis.len()), (POOL, 1));
        assert_eq!(a.harness.db_durability, crate::lab_args::Durability::On);
        assert_eq!(a.latency.critical_path_ms(), 0);
    }
    let delayed: Vec<&Cell> = all.iter().filter(|c| c.commit_delay_us.is_some()).collect();
    assert_eq!(delayed.len(), 2);
    assert!(
        delayed
            .iter()
            .all(|c| c.variant.args.persist_batch_max == 1 && c.commit_delay_us == Some(75))
    );
    let slugs: std::collections::HashSet<&str> =
        all.iter().map(|c| c.variant.slug.as_str()).collect();
    assert_eq!(slugs.len(), 26, "one folder per run");
    assert!(slugs.contains("reactive-api-batch1000-rtt6.5"));
    let open: Vec<&Cell> = all.iter().filter(|c| c.open_rate.is_some()).collect();
    assert_eq!(open.len(), 4);
    assert!(
        open.iter()
            .all(|c| c.variant.args.load.profile == "constant-50-12")
    );
}

#[test]
fn rows_carry_the_issue_keys_commits_flushes_and_a_reason_when_off_the_ceiling() {
    let cell = cells(&lab_args(), 75)
        .into_iter()
        .find(|c| c.variant.slug == "blocking-api-batch10-rtt6.5")
        .unwrap();
    let mut r = fixture("blocking-api");
    r.elapsed_s = Some(10.0);
    r.summary.ok = 3000;
    r.db_activity = Some(DbActivity {
        window_s: 10.0,
        xact_commit: 6300.0,
        wal_sync: 2000.0,
        wal_write: 2100.0,
        persist_batches: Some(300.0),
        persist_batch_orders: Some(3000.0),
        persist_batch_fallbacks: Some(0.0),
        statements: None,
        detail: String::new(),
    });
    let fig = figure();
    let done = vec![(cell, vec![r])];
    let rows = rows(&done, Ok(&fig));
    let row = &rows[0];
    assert_eq!((row.batch_max, row.db_rtt_ms), (10, 6.5));
    assert_eq!(row.orders_per_s, 300.0);
    assert_eq!(
        (row.commits_per_s, row.wal_syncs_per_s, row.mean_batch),
        (Some(630.0), Some(200.0), Some(10.0))
    );
    assert_eq!(row.predicted.bound, "pool");
    // 300 of a 677/s ceiling, the API far from its quota: a reason is given.
    assert!(row.reason.is_some());
    let json = json(&done, Ok(&fig), &ServerSettings::default());
    for key in [
        "api",
        "batch_max",
        "db_rtt_ms",
        "orders_per_s",
        "p50_ms",
        "p99_ms",
        "commits_per_s",
        "wal_syncs_per_s",
    ] {
        assert!(
            json["rows"][0].get(key).is_some(),
            "scenario.json lacks {key}"
        );
    }
    let table = table(&done, Ok(&fig), &ServerSettings::default());
    assert_eq!(table.rows[0].len(), table.columns.len());
    assert_eq!(table.rows[0][6], "630 (2.10)", "commits/s and per order");
}

#[test]
fn ceilings_from_round_trips_flushes_and_the_pool() {
    let hold = Hold {
        rtt_ms: 6.5,
        flush_ms: 0.15,
        exec_ms: 0.25,
        batch_exec_ms: 1.0,
    };
    // Batch 1 at 6.5 ms: 10 connections, 3 statements of 6.9 ms each.
    let one = ceiling(1, &hold, 10);
    assert_eq!(one.bound, "pool");
    assert!((one.orders_per_s - 483.1).abs() < 0.1, "{one:?}");
    assert!(
        one.formula.contains("(6.5 + 0.25 + 0.15)"),
        "{}",
        one.formula
    );
    // Batch 2: the one writer (2 orders per 7.65 ms) is below the pool's 9 ÷ (2 × 6.9 ms).
    let two = ceiling(2, &hold, 10);
    assert_eq!(two.bound, "writer");
    assert!((two.orders_per_s - 261.4).abs() < 0.1, "{two:?}");
    // Batch 100: the two unbatched statements on 9 connections.
    let hundred = ceiling(100, &hold, 10);
    assert_eq!(hundred.bound, "pool");
    assert!((hundred.orders_per_s - 652.2).abs() < 0.1, "{hundred:?}");
    let local = Hold {
        rtt_ms: 0.0,
        ..hold
    };
    assert!((ceiling(1, &local, 10).orders_per_s - 8333.3).abs() < 0.1);
}
