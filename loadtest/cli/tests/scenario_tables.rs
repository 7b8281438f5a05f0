//! The scenarios' comparison tables, generated from the fixture results (no load is run; the
//! soak's from fixtures whose seconds are rewritten).

use std::path::Path;

use lab_report::scenario::Note;
use lab_results::{
    AfterGiveUp, LatencyPercentiles, OUTCOME_OVERLOADED, RunResults, Shedding, TimelineMark,
};
use loadtest::lab_args::LabArgs;
use loadtest::scenario::soak::{self, TableSize};
use loadtest::scenario::{LabRuns, Variant, build_table, render_html, render_markdown, variants};

fn fixture(api: &str) -> RunResults {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../report/tests/fixtures/{api}-0.json"));
    RunResults::load(&path).expect("fixture loads")
}

fn lab_args() -> LabArgs {
    LabArgs::from_flags::<_, &str>([]).unwrap()
}

fn variant(slug: &str) -> Variant {
    Variant {
        slug: slug.to_owned(),
        args: lab_args(),
    }
}

#[test]
fn remotecall_has_eight_runs_and_a_row_per_run_beside_the_original() {
    let vs = variants(LabRuns::Remotecall, &lab_args()).unwrap();
    assert_eq!(vs.len(), 8);
    assert!(
        vs.iter()
            .all(|v| v.args.harness.db_pool_size == 10 && v.args.load.profile == "closed-30-300")
    );
    let mut done = Vec::new();
    for (scope, pay, timeouts) in [("request", 3000, 99u64), ("short", 3000, 0)] {
        let mut r = fixture("blocking-api");
        r.config.tx_scope = scope.to_owned();
        r.config.mock_latency_ms.as_mut().unwrap().payment = pay;
        r.summary.errors = timeouts;
        r.summary.errors_by_kind = [("database_unavailable".to_owned(), timeouts)].into();
        done.push((variant(&format!("blocking-api-{scope}-pay{pay}")), vec![r]));
    }
    let table = build_table(LabRuns::Remotecall, &done, &[]);
    assert_eq!(table.rows.len(), 2);
    assert!(
        table.rows[0][1].starts_with("request")
            && table.rows[0][6].contains("99 database_unavailable"),
        "{:?}",
        table.rows[0]
    );
    assert_eq!(
        table.rows[0][7], "4.6 · 5.9 s · 8.0 s · 99 / 300",
        "the original's figures stand beside ours"
    );
    assert!(table.rows[1][6].starts_with("0 /"));
    let md = render_markdown(&table);
    assert!(
        md.contains("| 3000 ms | request") && md.contains("blocking-api-short-pay3000/report.html")
    );
}

#[test]
fn db_latency_compares_each_rtt_with_the_direct_run() {
    let vs = variants(LabRuns::DbLatency, &lab_args()).unwrap();
    let rtts: Vec<f64> = vs.iter().map(|v| v.args.harness.db_rtt_ms).collect();
    assert_eq!(rtts, [0.0, 0.0, 0.3, 0.3, 0.6, 0.6, 6.5, 6.5]);
    let mut done = Vec::new();
    for (rtt, share) in [(0.0, 1.0), (6.5, 0.5)] {
        let mut r = fixture("reactive-api");
        r.config
            .api_settings
            .insert("DB_RTT_MS".to_owned(), rtt.to_string());
        let p = r.plateau.as_mut().unwrap();
        p.ok_throughput_rps *= share;
        done.push((variant(&format!("reactive-api-rtt{rtt}")), vec![r]));
    }
    let table = build_table(LabRuns::DbLatency, &done, &[]);
    assert_eq!(table.rows[0][3], "100 %");
    assert_eq!(table.rows[1][3], "50 %");
    assert_eq!(table.rows[1][1], "6.5 ms");
}

#[test]
fn slow_dependency_splits_each_run_at_the_injected_events() {
    let vs = variants(LabRuns::SlowDependency, &lab_args()).unwrap();
    assert_eq!(
        vs[0].args.inject,
        Some(lab_results::inject::Injection::parse("pay=5000@30+30", 1.0).unwrap())
    );
    let mut r = fixture("blocking-api");
    r.timeline = vec![
        TimelineMark {
            t: 40.0,
            label: "payment latency 1000→5000 ms".into(),
        },
        TimelineMark {
            t: 50.0,
            label: "payment latency 5000→1000 ms".into(),
        },
    ];
    let ll = r
        .littles_law
        .as_mut()
        .expect("blocking fixture has a bound");
    (ll.critical_path_ms, ll.bound_rps) = (6200.0, 200.0 / 6.2);
    ll.note = Some("payment answered in 5000 ms instead of 1000 ms for the whole plateau".into());
    let table = build_table(
        LabRuns::SlowDependency,
        &[(variant("both-apis"), vec![r])],
        &[],
    );
    assert!(
        table.notes.iter().any(|n| n
            .text()
            .contains("blocking-api: Little's-law bound 32.3 orders/s (200 threads ÷ 6.20 s)")
            && n.text().contains("for the whole plateau")),
        "{:?}",
        table.notes
    );
    let windows: Vec<&str> = table.rows.iter().map(|row| row[1].as_str()).collect();
    assert_eq!(
        windows,
        ["before (0–40 s)", "during (40–50 s)", "after (50–end s)"]
    );
    let html = render_html(&table);
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "offline page"
    );
    assert!(html.contains("<table") && html.contains("both-apis/report.html"));
}

#[test]
fn overload_runs_ramp_750_for_each_api_with_shedding_off_then_on() {
    let vs = variants(LabRuns::Overload, &lab_args()).unwrap();
    let got: Vec<(&str, &str, Shedding)> = vs
        .iter()
        .map(|v| {
            assert_eq!(v.args.harness.apis.len(), 1);
            (
                v.slug.as_str(),
                v.args.load.profile.as_str(),
                v.args.shedding,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("blocking-api-shedding-off", "ramp-750", Shedding::Off),
            ("reactive-api-shedding-off", "ramp-750", Shedding::Off),
            ("blocking-api-shedding-on", "ramp-750", Shedding::On),
            ("reactive-api-shedding-on", "ramp-750", Shedding::On),
        ]
    );
    assert_eq!(vs[1].args.harness.apis, ["reactive-api"]);
}

#[test]
fn overload_table_shows_shed_requests_apart_from_timeouts() {
    let mut done = Vec::new();
    // Shedding off: everything admitted, clients time out, the API finishes work for them anyway.
    let mut off = fixture("blocking-api");
    off.config.shedding = Some(Shedding::Off);
    off.config
        .api_settings
        .insert("MAX_IN_FLIGHT".into(), "0".into());
    off.summary.errors_by_kind = [("timeout".to_owned(), 400u64)].into();
    off.after_give_up = Some(AfterGiveUp {
        gave_up: 400,
        orders: Some(250),
        detail: "250 of the 400 keys".into(),
    });
    done.push((variant("blocking-api-shedding-off"), vec![off]));
    // Shedding on: a fast refusal instead.
    let mut on = fixture("blocking-api");
    on.config.shedding = Some(Shedding::On);
    on.config
        .api_settings
        .insert("MAX_IN_FLIGHT".into(), "200".into());
    on.config
        .api_settings
        .insert("QUEUE_TIMEOUT_MS".into(), "100".into());
    on.summary.errors_by_kind = [
        (OUTCOME_OVERLOADED.to_owned(), on.summary.sent / 4),
        ("deadline_exceeded".to_owned(), 7),
    ]
    .into();
    on.summary.overloaded_latency_ms = Some(LatencyPercentiles {
        p99: 12.0,
        ..Default::default()
    });
    on.after_give_up = Some(AfterGiveUp {
        gave_up: 0,
        orders: Some(0),
        detail: "0 of the 0 keys".into(),
    });
    on.harness_bound = Some("generator fell behind".into());
    let (ok, sent) = (on.summary.ok, on.summary.sent);
    done.push((variant("blocking-api-shedding-on"), vec![on]));

    let table = build_table(LabRuns::Overload, &done, &[]);
    let col = |name: &str| {
        table
            .columns
            .iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("no column {name}: {:?}", table.columns))
    };
    let (off, on) = (&table.rows[0], &table.rows[1]);
    assert_eq!(off[col("shedding (MAX_IN_FLIGHT)")], "off (0 = unlimited)");
    assert_eq!(on[col("shedding (MAX_IN_FLIGHT)")], "on (200)");
    assert_eq!(off[col("client timeouts")], "400");
    assert_eq!(off[col("overloaded 503s")], "0.0 % (0)");
    assert_eq!(off[col("orders after give-up")], "250 of 400");
    assert_eq!(
        on[col("overloaded 503s")],
        format!("25.0 % ({})", sent / 4),
        "the share of everything sent"
    );
    assert_eq!(on[col("overloaded p99")], "12 ms");
    assert_eq!(on[col("client timeouts")], "0", "shed is not a timeout");
    assert_eq!(on[col("other errors")], "7 (most: 7 deadline_exceeded)");
    assert_eq!(on[col("harness-bound")], "yes");
    assert_eq!(off[col("harness-bound")], "no");
    // The fixture's schedule is 90 s long; the drain is not in the denominator.
    assert_eq!(on[col("201/s")], format!("{:.1}", ok as f64 / 90.0));
    let goals = table
        .notes
        .iter()
        .find(|n| n.text().contains("overload goals"))
        .expect("a goals note for the shedding-on run");
    assert!(
        goals.text().contains("overloaded p99 12 ms ≤ 50 ms met")
            && goals.text().contains("0 orders after give-up (goal 0) met"),
        "{goals}"
    );
    assert!(table.notes.iter().any(|n| {
        n.text()
            .contains("was harness-bound: generator fell behind")
    }));
    assert!(render_markdown(&table).contains("blocking-api-shedding-on/report.html"));
}

#[test]
fn faults_runs_both_apis_with_retrying_clients_through_the_plan() {
    let vs = variants(LabRuns::Faults, &lab_args()).unwrap();
    let slugs: Vec<&str> = vs.iter().map(|v| v.slug.as_str()).collect();
    assert_eq!(
        slugs,
        [
            "both-apis",
            "db-freeze",
            "slow-uploads",
            "gateway-down",
            "broker-ack",
            "rolling-restart"
        ],
        "one lab run each, both APIs one after the other"
    );
    retrying_clients_through_the_whole_plan(&vs[0].args);
    let done = [("blocking-api", 0u64), ("reactive-api", 2)]
        .into_iter()
        .map(|(api, lost)| retrying_run(api, lost, vs[0].args.faults))
        .collect();
    let table = build_table(LabRuns::Faults, &[(variant("both-apis"), done)], &[]);
    assert_eq!(table.rows.len(), 2);
    let row = &table.rows[0];
    assert_eq!(row[0], "blocking-api");
    assert!(row[1].contains("retrying clients"), "{row:?}");
    assert_eq!(row[5..11], ["1805", "7", "1798", "0", "0", "0"]);
    assert_eq!(row[11], "—", "no outage, no CPU during it");
    assert_eq!(
        row[13..15],
        ["—", "—"],
        "no broker fault, no events counted"
    );
    assert_eq!(row[15..18], ["1798", "2 (2 order_voided)", "0"]);
    assert_eq!(row[18], "2.50 s (fault at 20.0 s)");
    assert_eq!(row[19], "no 201 after it (fault at 40.0 s)");
    assert_eq!(table.columns.len(), row.len());
    assert_eq!(table.rows[1][8], "2");
    let failed: Vec<&Note> = table.notes.iter().filter(|n| n.is_failed_check()).collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(
        failed[0]
            .text()
            .contains("reactive-api: 2 charges without order")
    );
}

/// The first variant: both APIs, clients retrying for 60 s, a durable PostgreSQL, the plan's
/// payment faults, kill and restart at times that follow --duration-scale.
fn retrying_clients_through_the_whole_plan(a: &LabArgs) {
    use loadgen::profile::Profile;

    assert_eq!(a.harness.apis, ["blocking-api", "reactive-api"]);
    assert_eq!(a.load.retry_for_s, Some(60.0));
    assert_eq!(a.harness.db_durability, loadtest::lab_args::Durability::On);
    assert_eq!(
        (a.lease_ms, a.reconcile_interval_ms, a.deps_timeout_ms),
        (15_000, 2000, 5000)
    );
    let profile = Profile::parse(&a.load.profile, 1.0).unwrap();
    assert_eq!((profile.duration_s(), profile.plateau()), (60.0, Some(0)));
    // The lab scales the plan by --duration-scale (here 0.5).
    let plan = a.faults.unwrap().scaled(0.5);
    assert_eq!(
        (
            plan.payment_error_rate,
            plan.payment_hang_rate,
            plan.payment_charged_error_rate
        ),
        (0.05, 0.01, 0.02)
    );
    assert_eq!(
        (plan.kill_api_at_s, plan.api_down_s, plan.restart_db_at_s),
        (Some(10.0), 2.0, Some(20.0)),
        "fault times follow --duration-scale"
    );
    assert!(plan.hang_ms.unwrap() > a.deps_timeout_ms);
}

/// `api`'s run of retrying clients through the plan, `lost` charges without their order.
fn retrying_run(
    api: &str,
    lost: u64,
    faults: Option<lab_results::faults::FaultPlan>,
) -> RunResults {
    use lab_results::{FaultRecovery, MoneyRecord, RetryRecord};

    let mut r = fixture(api);
    r.config.faults = faults;
    r.retries = Some(RetryRecord {
        clients: 1800,
        attempts: 1990,
        attempts_by_outcome: [
            ("201".to_owned(), 1700u64),
            ("201_replayed".to_owned(), 98),
            ("dependency_unavailable".to_owned(), 192),
        ]
        .into(),
        ended_created: 1798,
        ended_terminal_4xx: [("order_voided".to_owned(), 2u64)].into(),
        recovery: vec![
            FaultRecovery {
                fault: "kill -9 of the API (restarted 2 s later)".into(),
                t: 20.0,
                first_201_after_s: Some(2.5),
            },
            FaultRecovery {
                fault: "PostgreSQL restart -m immediate".into(),
                t: 40.0,
                first_201_after_s: None,
            },
        ],
        ..RetryRecord::default()
    });
    r.money = Some(MoneyRecord {
        charges: 1805,
        voids: 7,
        orders: 1798 - lost,
        charges_without_order: lost,
        ..MoneyRecord::default()
    });
    r
}

/// The notes that are a verdict on `fault`'s rows (their text names the fault, then a colon):
/// `rows` of them.
fn verdicts<'a>(notes: &'a [Note], fault: &str, rows: usize) -> Vec<&'a Note> {
    let found: Vec<&Note> = notes.iter().filter(|n| n.text().contains(fault)).collect();
    assert_eq!(found.len(), rows, "{notes:?}");
    found
}

#[test]
fn an_outage_row_fails_on_an_answer_held_for_the_whole_freeze_or_unbalanced_money() {
    use lab_results::faults::FaultPlan;
    use lab_results::{MoneyRecord, ProcessSample};

    let vs = variants(LabRuns::Faults, &lab_args()).unwrap();
    for v in &vs[1..] {
        assert_eq!(v.args.load.retry_for_s, None, "{}: plain clients", v.slug);
        assert_eq!(v.args.load.request_timeout_s, 30.0);
        let faults = v.args.faults.unwrap();
        let one_fault = !faults.outages().is_empty() || faults.rolling_restart_at_s.is_some();
        assert!(one_fault, "{}", v.slug);
    }
    let freeze = vs[1].args.faults.unwrap();
    assert_eq!(
        freeze.db_freeze.map(|w| (w.at_s, w.for_s)),
        Some((20.0, 20.0))
    );
    assert_eq!(
        vs[2]
            .args
            .faults
            .unwrap()
            .slow_uploads
            .map(|s| s.connections),
        Some(300)
    );
    assert_eq!(
        vs[3].args.faults.unwrap().gateway_down.map(|w| w.for_s),
        Some(30.0)
    );

    // blocking-api held an answer for the whole freeze; reactive-api bounded it, but lost money.
    let run = |api: &str, longest_ms: f64, orders_without_charge: u64| {
        let mut r = fixture(api);
        r.config.faults = Some(FaultPlan::parse("db-freeze@20+20", 1.0).unwrap());
        r.config.request_timeout_ms = 30_000;
        r.retries = None;
        r.summary.latency_ms.max = longest_ms;
        for s in &mut r.seconds {
            s.api_process = Some(ProcessSample {
                cpu_percent: if (20..40).contains(&s.t) { 4.0 } else { 80.0 },
                ..ProcessSample::default()
            });
        }
        r.money = Some(MoneyRecord {
            charges: 1000,
            orders: 1000 - orders_without_charge,
            orders_without_charge,
            ..MoneyRecord::default()
        });
        r
    };
    let done = vec![
        run("blocking-api", 21_400.0, 0),
        run("reactive-api", 5_200.0, 3),
        run("reactive-api", 5_200.0, 0),
    ];
    let table = build_table(LabRuns::Faults, &[(variant("db-freeze"), done)], &[]);
    let row = &table.rows[0];
    assert_eq!(row[1], "PostgreSQL frozen 20 s");
    assert_eq!(row[4], "21.40 s");
    let seconds = fixture("blocking-api").seconds.len();
    if seconds >= 40 {
        assert_eq!(row[11], "0.04 cores", "{row:?}");
    }
    let verdicts = verdicts(&table.notes, "PostgreSQL frozen 20 s:", 3);
    assert!(verdicts[0].is_failed_check() && verdicts[0].text().contains("waited it out"));
    assert!(
        verdicts[1].is_failed_check() && verdicts[1].text().contains("3 orders without charge")
    );
    assert!(!verdicts[2].is_failed_check(), "{}", verdicts[2]);
    assert!(
        verdicts[2]
            .text()
            .contains("1000 charges, 0 voids, 1000 orders"),
        "{}",
        verdicts[2]
    );
}

/// A rolling restart's row: requests without an answer only in the moments without a listener
/// (the lab's one port) pass, stated; one lost at any other time fails.
#[test]
fn a_rolling_restart_row_fails_on_a_request_lost_outside_the_restarts_gap() {
    use lab_results::faults::{API_READY_LABEL, OLD_API_CLOSED_LABEL};
    use lab_results::{MoneyRecord, OUTCOME_CONNECT_ERROR, TimelineMark};

    let vs = variants(LabRuns::Faults, &lab_args()).unwrap();
    let v = vs.iter().find(|v| v.slug == "rolling-restart").unwrap();
    assert_eq!(v.args.faults.unwrap().rolling_restart_at_s, Some(20.0));
    assert_eq!(v.args.load.retry_for_s, None, "plain clients");
    // `refused[0]` connections refused in the run's first second, `refused[1]` in its last, where
    // the old listener closed.
    let run = |refused: [u64; 2]| {
        let mut r = fixture("reactive-api");
        assert!(r.seconds.len() >= 3);
        r.config.faults = v.args.faults;
        r.config.request_timeout_ms = 30_000;
        r.retries = None;
        r.summary.errors_by_kind.clear();
        let last = r.seconds.len() - 1;
        for (i, n) in [(0, refused[0]), (last, refused[1])] {
            r.seconds[i]
                .outcomes
                .insert(OUTCOME_CONNECT_ERROR.to_owned(), n);
        }
        let closed = f64::from(r.seconds[last].t) + 0.3;
        r.timeline = vec![
            TimelineMark {
                t: closed,
                label: format!("{OLD_API_CLOSED_LABEL}, 5.00 s after SIGTERM"),
            },
            TimelineMark {
                t: closed + 0.2,
                label: format!("{API_READY_LABEL} (pid 2), 0.20 s without a listener"),
            },
        ];
        r.money = Some(MoneyRecord {
            charges: 1000,
            orders: 1000,
            ..MoneyRecord::default()
        });
        r
    };
    let table = build_table(
        LabRuns::Faults,
        &[(variant("rolling-restart"), vec![run([0, 6]), run([2, 6])])],
        &[],
    );
    assert_eq!(
        table.rows[0][1],
        "API restarted as a platform does (SIGTERM, still sent to)"
    );
    let verdicts = verdicts(&table.notes, "(SIGTERM, still sent to):", 2);
    assert!(!verdicts[0].is_failed_check(), "{}", verdicts[0]);
    assert!(
        verdicts[0]
            .text()
            .contains("6 requests without an answer from the old listener's close"),
        "{}",
        verdicts[0]
    );
    assert!(
        verdicts[1].is_failed_check()
            && verdicts[1]
                .text()
                .contains("2 requests lost outside the restart's 0.20 s"),
        "{}",
        verdicts[1]
    );
}

#[test]
fn a_slowed_broker_row_passes_with_duplicates_and_fails_on_a_lost_event_or_an_undrained_outbox() {
    use lab_results::MoneyRecord;
    use lab_results::faults::BrokerRecord;

    let vs = variants(LabRuns::Faults, &lab_args()).unwrap();
    let v = vs.iter().find(|v| v.slug == "broker-ack").unwrap();
    let fault = v.args.faults.unwrap().broker_ack.unwrap();
    assert_eq!(
        (fault.ack_ms, fault.window.at_s, fault.window.for_s),
        (7000, 20.0, 30.0)
    );
    assert_eq!(v.args.load.retry_for_s, None, "plain clients");

    let run = |broker: Option<BrokerRecord>| {
        let mut r = fixture("reactive-api");
        r.config.faults = v.args.faults;
        r.config.request_timeout_ms = 30_000;
        r.retries = None;
        r.summary.latency_ms.max = 240.0;
        r.money = Some(MoneyRecord {
            charges: 1800,
            orders: 1800,
            ..MoneyRecord::default()
        });
        r.broker = broker;
        r
    };
    let delivered = BrokerRecord {
        ack_ms: 7000,
        nats_timeout_ms: 10_000,
        backlog_at_outage_end: Some(212),
        backlog_after_drain: 0,
        drain_s: Some(1.4),
        orders: 1800,
        events_in_stream: 1803,
        events_duplicated: 3,
        ..BrokerRecord::default()
    };
    let done = vec![
        run(Some(delivered)),
        run(Some(BrokerRecord {
            events_lost: 5,
            events_in_stream: 1795,
            events_duplicated: 0,
            ..delivered
        })),
        run(Some(BrokerRecord {
            backlog_after_drain: 40,
            drain_s: None,
            ..delivered
        })),
        run(None),
    ];
    let table = build_table(LabRuns::Faults, &[(variant("broker-ack"), done)], &[]);
    let row = &table.rows[0];
    assert_eq!(
        row[1],
        "broker acknowledgements 7 s for 30 s (events on, outbox)"
    );
    assert_eq!(row[13], "1800 / 1803 (0 lost, 3 duplicated)");
    assert_eq!(row[14], "212 / 0 (empty 1.4 s after the money count)");
    assert_eq!(table.rows[2][14], "212 / 40 (not drained)");
    assert_eq!(table.columns.len(), row.len());
    let verdicts = verdicts(&table.notes, "(events on, outbox):", 4);
    assert!(!verdicts[0].is_failed_check(), "{}", verdicts[0]);
    assert!(
        verdicts[0]
            .text()
            .contains("1800 of 1800 orders in the stream, 3 duplicated")
            && verdicts[0]
                .text()
                .contains("NATS_TIMEOUT_MS 10000 ms against 7000 ms"),
        "{}",
        verdicts[0]
    );
    assert!(
        verdicts[1].is_failed_check()
            && verdicts[1].text().contains("5 orders without their event"),
        "{}",
        verdicts[1]
    );
    assert!(
        verdicts[2].is_failed_check() && verdicts[2].text().contains("40 outbox rows"),
        "{}",
        verdicts[2]
    );
    assert!(
        verdicts[3].is_failed_check() && verdicts[3].text().contains("not counted"),
        "{}",
        verdicts[3]
    );
}

/// `api`'s fixture with `n` constant seconds at 75 orders/s, p99 `p99_ms`, `fds` open files and
/// RSS `rss(t)`.
fn steady(api: &str, n: u32, p99_ms: f64, fds: u64, rss: impl Fn(u32) -> u64) -> RunResults {
    let mut r = fixture(api);
    let template = r
        .seconds
        .iter()
        .find(|s| s.phase == "constant" && s.api_process.is_some() && s.latency_ms.is_some())
        .expect("a constant second with a sample")
        .clone();
    r.seconds = (0..n)
        .map(|t| {
            let mut s = template.clone();
            s.t = t;
            s.outcomes = [("201".to_owned(), 75)].into();
            s.latency_ms.as_mut().unwrap().p99 = p99_ms;
            let p = s.api_process.as_mut().unwrap();
            p.rss_bytes = rss(t);
            p.fds = fds;
            s
        })
        .collect();
    r.money = None;
    r.summary.ok = 75 * u64::from(n);
    r
}

#[test]
fn soak_runs_each_api_alone_at_a_steady_rate_for_thirty_minutes() {
    let vs = variants(LabRuns::Soak, &lab_args()).unwrap();
    assert_eq!(vs.len(), 2);
    for v in &vs {
        assert_eq!(v.args.harness.apis.len(), 1);
        assert_eq!(v.args.load.profile, "constant-75-1800");
        assert_eq!(v.args.latency.payment, 1000, "the seed's latencies");
    }
}

#[test]
fn the_table_compares_the_first_and_last_minute_and_names_what_grew() {
    const MIB: u64 = 1024 * 1024;
    let flat = steady("blocking-api", 600, 2300.0, 675, |_| 52 * MIB);
    // 80 → 120 MiB over the run: a leak's shape.
    let leaking = steady("reactive-api", 600, 2300.0, 2100, |t| {
        80 * MIB + u64::from(t) * 40 * MIB / 600
    });
    let sizes = vec![(
        "blocking-api".to_owned(),
        vec![TableSize {
            table: "orders".to_owned(),
            bytes: 45_000 * 300,
            rows: 45_000,
        }],
    )];
    let done = vec![
        (variant("blocking-api"), vec![flat]),
        (variant("reactive-api"), vec![leaking]),
    ];
    let table = soak::table(&done, &sizes);
    let row = |api: &str, measure: &str| {
        table
            .rows
            .iter()
            .find(|r| r[0] == api && r[1].starts_with(measure))
            .unwrap_or_else(|| panic!("{api} {measure}: {:?}", table.rows))
            .clone()
    };
    assert_eq!(
        row("blocking-api", "RSS")[2..],
        ["52.0 MiB", "52.0 MiB", "+0.0 %"]
    );
    let rss = row("reactive-api", "RSS");
    assert_eq!(
        rss[2], "84.0 MiB",
        "the mean of 60 s from 30 s in (5 % of 600 s)"
    );
    assert_eq!(rss[3], "118.0 MiB", "the mean of the last 60 s");
    assert_eq!(row("blocking-api", "orders/s")[2], "75.0");
    assert_eq!(row("blocking-api", "open files")[3], "675");
    assert_eq!(
        row("blocking-api", "table orders")[2..],
        ["emptied", "12.9 MiB", "300 bytes per order"]
    );
    assert!(
        table.conclusion[0].starts_with("blocking-api: nothing grew by more than 10 %"),
        "{:?}",
        table.conclusion
    );
    assert!(
        table.conclusion[1].contains("reactive-api grew by more than 10 %: RSS 84.0 → 118.0 MiB"),
        "{:?}",
        table.conclusion
    );
    let md = render_markdown(&table);
    assert!(
        md.contains("| reactive-api | RSS, mean | 84.0 MiB | 118.0 MiB | +40.5 % |"),
        "{md}"
    );
}

#[test]
fn a_run_too_short_to_compare_says_so() {
    let short = steady("blocking-api", 14, 2300.0, 675, |_| 1);
    let table = soak::table(&[(variant("blocking-api"), vec![short])], &[]);
    assert_eq!(table.rows[0][1], "too short to compare");
}

#[test]
fn a_shortened_run_compares_a_tenth_of_itself() {
    assert_eq!(soak::window_for(1800.0), 60.0);
    assert_eq!(soak::window_for(90.0), 9.0);
    assert_eq!(soak::window_for(20.0), 5.0);
    assert_eq!(soak::settle_for(1800.0), 90.0);
    assert_eq!(soak::settle_for(36.0), 5.0);
}
