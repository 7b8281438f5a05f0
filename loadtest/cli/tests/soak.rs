//! `--scenario soak`: its runs, and its table and conclusion from fixture results whose seconds
//! are rewritten (no load is run).

use std::path::Path;

use lab_results::RunResults;
use loadtest::lab_args::LabArgs;
use loadtest::scenario::soak::{self, TableSize};
use loadtest::scenario::{Variant, render_markdown, variants};

fn fixture(api: &str) -> RunResults {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../report/tests/fixtures/{api}-0.json"));
    RunResults::load(&path).expect("fixture loads")
}

fn lab_args() -> LabArgs {
    LabArgs::from_flags::<_, &str>([]).unwrap()
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

fn variant(slug: &str) -> Variant {
    Variant {
        slug: slug.to_owned(),
        args: lab_args(),
    }
}

#[test]
fn soak_runs_each_api_alone_at_a_steady_rate_for_thirty_minutes() {
    let vs = variants("soak", &lab_args()).unwrap();
    assert_eq!(vs.len(), 2);
    for v in &vs {
        assert_eq!(v.args.apis.len(), 1);
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
