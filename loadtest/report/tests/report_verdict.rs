//! The report's first screen, rendered from the synthetic fixtures (see `fixtures/mod.rs`): the
//! verdict generated from the results, the trust strip under it, rates per second of the
//! schedule, and goose's reports linked with their counts beside ours.

mod fixtures;

use std::path::PathBuf;

use fixtures::section;
use lab_report::slo::Slo;
use lab_report::{render_html, render_markdown, slo_missed, write_report, write_report_with_slo};
use lab_results::numbers::grouped;
use lab_results::{InvariantCheck, MoneyRecord, OUTCOME_OVERLOADED, RunResults};

fn trust(html: &str) -> &str {
    let start = html.find("<ul class=\"trust\"").expect("trust strip");
    let rest = &html[start..];
    &rest[..rest.find("</ul>").unwrap_or(rest.len())]
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loadtest-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// An API the kernel killed is named in the lead and the trust strip, its money line says it was
/// restarted, and its fast refusals after death are not turned into ratios against the other.
#[test]
fn an_api_that_died_is_named_and_not_compared() {
    let mut runs = fixtures::pair();
    let blocking = runs.iter_mut().find(|r| r.api == "blocking-api").unwrap();
    blocking.api_exit = Some(lab_results::ApiExit {
        t_s: 55.7,
        oom_killed: true,
        signal: Some(9),
        exit_code: None,
        oom_kills: Some(1),
        restarted_for_recovery: true,
    });
    blocking.money = Some(MoneyRecord {
        charges: 10,
        orders: 10,
        ..MoneyRecord::default()
    });
    let md = render_markdown(&runs);
    let html = render_html(&runs);
    assert!(
        md.contains(
            "**blocking-api died mid-run** — killed by the kernel for its memory limit \
                     (cgroup OOM kill) at t = 55.7 s"
        ),
        "{md}"
    );
    assert!(
        !md.contains("the orders/s of blocking-api"),
        "no ratio against a dead API: {md}"
    );
    let strip = trust(&html);
    assert!(strip.contains("an API DIED mid-run"), "{strip}");
    assert!(md.contains("was started again for its recovery"), "{md}");
}

/// The fixture report as a reader gets it. `scripts/report-screenshots.sh` sets
/// `REPORT_FIXTURE_OUT` to keep the files and photograph them in headless Chromium.
#[test]
fn fixture_report_renders() {
    let keep = std::env::var_os("REPORT_FIXTURE_OUT").map(PathBuf::from);
    let dir = keep.clone().unwrap_or_else(|| temp_dir("fixture-report"));
    let (paths, _) = write_report(&fixtures::pair(), &dir).expect("report written");
    let html = std::fs::read_to_string(&paths.html).expect("html");
    let md = std::fs::read_to_string(&paths.markdown).expect("md");

    // The verdict comes first, then the trust strip, then the rate and latency charts.
    let at = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("no {needle}"));
    let lead = "reactive-api kept up with the offered load; blocking-api did not.";
    assert!(
        at(lead) < at("<ul class=\"trust\"") && at("<ul class=\"trust\"") < at("id=\"fig-rate\"")
    );
    assert!(
        at("id=\"fig-rate\"") < at("id=\"fig-latency\"")
            && at("id=\"fig-latency\"") < at("id=\"summary\"")
    );
    let verdict = section(&html, "verdict");
    for needle in [
        "Offered: 120.0 req/s over the 30 s plateau.",
        "2xx: reactive-api 99.1 %, blocking-api 99.2 % of arrivals.",
        "reactive-api made 1.71× the orders/s of blocking-api (119.0 vs 69.7), with a 7.1× lower p99 (7.51 vs 53.43 s), 3.6× less CPU per order (2.67 vs 9.61 CPU-s per 1,000 orders) and 1.77× less peak memory (17.0 vs 30.0 MiB).",
        "<p class=\"conditions\">Under: profile fixture-120 (open, 120/s plateau, 90 s) · dependencies seller 200 ms, risk 1000 ms, payment 1000 ms (critical path 2200 ms) · payment slowed 1000 → 5000 ms at 40–50 s · DB pool 10, blocking-api 200 threads · 1 CPU core, 1024 MiB per API.</p>",
        "<strong>blocking-api reached its Little's-law bound</strong>",
        "blocking-api's pool of 200 blocking threads was exhausted (all taken",
        "one run per API",
    ] {
        assert!(
            verdict.contains(needle),
            "verdict lacks {needle}: {verdict}"
        );
    }
    assert!(md.contains(&format!("**Verdict:** **{lead}**")), "{md}");

    // Seven items; the fixture has no money record, so that one is unknown, not passed.
    let strip = trust(&html);
    assert_eq!(strip.matches("<li ").count(), 7, "{strip}");
    for (href, ok) in [
        ("#summary", "APIs stayed up"),
        ("#configuration", "limits enforced"),
        ("#fig-lateness", "not harness-bound"),
        ("#checks", "all checks held"),
        ("#fairness", "settings identical"),
    ] {
        let item = format!("✓</span> <a href=\"{href}\"><strong>{ok}</strong></a>");
        assert!(strip.contains(&item), "{item}: {strip}");
    }
    assert!(
        strip.contains("class=\"unk\" id=\"trust-money\"") && strip.contains("money not counted")
    );
    assert!(md.contains("- ? **money not counted**"));

    // Offline: nothing loaded, no URL but the fixture's own loopback settings shown as text.
    fixtures::assert_offline(&html);
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn the_verdict_follows_the_results() {
    // The same results under both names: both keep up, and no API is called the loser.
    let a = fixtures::run("reactive-api", 0, 1);
    let mut b = a.clone();
    b.api = "other-api".into();
    let html = render_html(&[a.clone(), b]);
    let verdict = section(&html, "verdict");
    assert!(
        verdict.contains("Both APIs kept up with the offered load."),
        "{verdict}"
    );
    assert!(verdict.contains("reactive-api made 1.00× the orders/s of other-api"));
    assert!(!verdict.contains("did not"));

    // The blocking API shedding at admission: said, with how many and how fast.
    let mut runs = fixtures::pair();
    let plateau = runs[0].plateau.as_mut().expect("plateau");
    plateau
        .errors_by_kind
        .insert(OUTCOME_OVERLOADED.into(), 1800);
    let verdict = render_markdown(&runs);
    assert!(verdict.contains("blocking-api shed 1,800 of the plateau's 3,600 requests (50.0 %) at admission with 503 overloaded"), "{verdict}");

    // An API alone: no ratios, still a verdict.
    let alone = render_markdown(&runs[..1]);
    assert!(
        alone.contains("**Verdict:** **blocking-api did not keep up with the offered load.**"),
        "{alone}"
    );
    assert!(!alone.contains("the orders/s of"));
}

#[test]
fn the_verdict_says_who_met_the_objective_and_by_how_much() {
    let runs = fixtures::pair();
    // The default: p99 ≤ the critical path (2.2 s) × 1.15. The payment slowdown (5 s for 10 s of
    // the plateau) puts both APIs' p99 above it.
    let md = render_markdown(&runs);
    assert!(md.contains("**SLO p99 ≤ 2.53 s, 2xx ≥ 99 % of arrivals** (default: critical path 2.20 s × 1.15), over the plateau: **neither API met it** — blocking-api p99 53.43 s (21× the bound), 2xx 99.2 % (0.2 points above); reactive-api p99 7.51 s (3.0× the bound)"), "{md}");
    assert!(md.contains("- ✗ **SLO missed by blocking-api, reactive-api** — p99 ≤ 2.53 s"));
    assert_eq!(slo_missed(&runs, None).len(), 2);

    // A looser objective: reactive-api meets it, with its margins; blocking-api misses it.
    let slo = Slo::parse("p99<=10s,success>=99%").expect("valid");
    let dir = temp_dir("slo");
    let (paths, md) = write_report_with_slo(&runs, &dir, Some(&slo)).expect("written");
    assert!(md.contains("over the plateau: **only reactive-api met it** — blocking-api p99 53.43 s (5.3× the bound), 2xx 99.2 % (0.2 points above); reactive-api p99 7.51 s (25 % inside), 2xx 99.1 % (0.1 points above)."), "{md}");
    let html = std::fs::read_to_string(&paths.html).expect("html");
    let strip = trust(&html);
    assert!(strip.contains("<li class=\"bad\" id=\"trust-slo\">") && strip.contains("<a href=\"#slo\"><strong>SLO missed by blocking-api</strong></a> <span class=\"d\">p99 ≤ 10.00 s, 2xx ≥ 99 % of arrivals</span>"), "{strip}");
    assert!(section(&html, "verdict").contains("<p id=\"slo\""));
    let missed = slo_missed(&runs, Some(&slo));
    assert_eq!(missed.len(), 1);
    assert!(
        missed[0].starts_with(
            "SLO MISSED (p99 ≤ 10.00 s, 2xx ≥ 99 % of arrivals): blocking-api p99 53.43 s"
        ),
        "{missed:?}"
    );

    // Met by both: a ✓ item, and no line for --fail-on-slo.
    let easy = Slo::parse("p99<=60s,success>=90%").expect("valid");
    assert!(slo_missed(&runs, Some(&easy)).is_empty());
    let (_, md) = write_report_with_slo(&runs, &dir, Some(&easy)).expect("written");
    assert!(
        md.contains("**both APIs met it**")
            && md.contains("- ✓ **SLO met** — p99 ≤ 60.00 s, 2xx ≥ 90 % of arrivals\n"),
        "{md}"
    );

    // Results without dependency latencies have no default objective: said, not guessed.
    let mut bare = runs.clone();
    for r in &mut bare {
        r.config.mock_latency_ms = None;
    }
    assert!(
        render_markdown(&bare).contains("- ? **no SLO** — the runs record no dependency latencies")
    );
    assert!(slo_missed(&bare, None).is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_trust_strip_marks_what_failed() {
    let mut runs = fixtures::pair();
    runs[1].invariants.push(InvariantCheck {
        name: "db orders = 201s".into(),
        ok: Some(false),
        detail: "3 rows missing".into(),
    });
    // 10 charges, 10 orders; the second run's ledger has 2 charges nobody has an order for.
    for (run, lost) in runs.iter_mut().zip([0, 2]) {
        run.money = Some(MoneyRecord {
            charges: 10,
            orders: 10,
            charges_without_order: lost,
            ..MoneyRecord::default()
        });
    }
    let html = render_html(&runs);
    let strip = trust(&html);
    assert!(strip.contains("<li class=\"bad\" id=\"trust-checks\"><span class=\"mark\" aria-hidden=\"true\">✗</span>"), "{strip}");
    assert!(
        strip.contains("1 check(s) VIOLATED")
            && strip.contains("reactive-api: db orders = 201s — 3 rows missing")
    );
    assert!(strip.contains("money NOT balanced") && strip.contains("2 charges without order"));
    assert!(section(&html, "verdict").contains("an end-of-run check failed"));
    runs[1].money.as_mut().expect("money").charges_without_order = 0;
    assert!(render_markdown(&runs).contains("- ✓ **money balanced** — every live charge has one order and every order one charge (blocking-api 10 orders, reactive-api 10 orders)"));
}

/// The cells of one row of a Markdown table.
fn md_row<'a>(table: &'a str, metric: &str) -> Vec<&'a str> {
    let line = table
        .lines()
        .find(|l| l.starts_with(&format!("| {metric} |")))
        .unwrap_or_else(|| panic!("no row {metric}"));
    line.trim_matches('|')
        .split(" | ")
        .skip(1)
        .map(str::trim)
        .collect()
}

#[test]
fn whole_run_answer_rates_count_each_apis_drain() {
    let runs = fixtures::pair();
    // The blocking API drains for longer than the reactive one: the same schedule must still
    // read as the same offered rate, but its answers are spread over its own drain too.
    assert!(runs[0].summary.duration_s > runs[1].summary.duration_s + 5.0);
    let planned = runs[0].config.profile.planned_requests as f64;
    let md = render_markdown(&runs);
    let whole = &md[md.find("### Whole run").expect("whole run")..];
    let rate = format!("{:.1} req/s", planned / 90.0);
    assert_eq!(
        md_row(whole, "offered rate"),
        [rate.as_str(), rate.as_str()]
    );
    // blocking-api's last answer came in second 98, 9 s after the last arrival (90 s).
    assert_eq!(
        md_row(whole, "drain: last answer − last arrival"),
        ["9.00 s", "0.0 ms"]
    );
    let drained: u64 = runs[0]
        .seconds
        .iter()
        .filter(|s| s.t >= 90)
        .map(|s| s.completed)
        .sum();
    assert_eq!(drained, 738);
    assert_eq!(md_row(whole, "answers during the drain"), ["738", "0"]);
    let orders = |i: usize, secs: f64| format!("{:.1} req/s", runs[i].summary.ok as f64 / secs);
    assert_eq!(
        md_row(whole, "orders per second (201)"),
        [orders(0, 99.0), orders(1, 90.0)]
    );
    assert!(md.contains("per second from the first arrival to the API's own last answer"));
}

#[test]
fn every_share_is_of_the_arrivals_and_late_answers_are_shown() {
    let runs = fixtures::pair();
    let md = render_markdown(&runs);
    let plateau =
        &md[md.find("### Plateau").expect("plateau")..md.find("### Whole run").expect("whole")];
    // The plateau counts its own 3,600 arrivals wherever their answers came.
    let p = runs[0].plateau.as_ref().expect("plateau");
    assert_eq!((p.offered, p.completed), (3600, 3600));
    let share = format!("{:.1} %", 100.0 * p.ok as f64 / 3600.0);
    assert_eq!(md_row(plateau, "2xx, share of arrivals")[0], share);
    // The lead says the same share as the table.
    let lead = md
        .lines()
        .find(|l| l.starts_with("**Verdict:**"))
        .expect("lead");
    assert!(
        lead.contains(&format!("blocking-api {share} of arrivals")),
        "{lead}"
    );
    // blocking-api had 1,578 of the plateau's arrivals open when it ended, counted per arrival
    // (every one answered late); the generator's open requests at second 59 (1,776) also hold
    // arrivals from before the plateau.
    let fate = lab_results::window_fate(
        runs[0].seconds.iter().map(|s| lab_results::SecondArrivals {
            t: s.t,
            offered: s.offered,
            not_sent: s.not_sent,
            answered_after: &s.answered_after,
        }),
        30,
        60,
    );
    let open = fate.answered_late + fate.unanswered;
    assert_eq!((fate.answered_late, fate.unanswered), (1578, 0));
    assert!(open < runs[0].seconds[59].in_flight);
    assert_eq!(
        md_row(
            plateau,
            "open when the plateau ended (answered late or never)"
        )[0],
        grouped(open as f64)
    );
    assert!(
        lead.contains(&format!(
            "{} requests were open when the plateau ended, and 738 answers came in the 9 s after the last arrival",
            grouped(open as f64)
        )),
        "{lead}"
    );
    assert_eq!(md_row(plateau, "never answered"), ["0", "0"]);
    // Its percentiles include those late answers: p99 far beyond the plateau's 30 s.
    assert!(p.latency_ms.p99 > 30_000.0, "{:?}", p.latency_ms);
    assert!(md.contains(
        "its answers, errors and percentiles include the answers that came after it ended"
    ));
}

#[test]
fn goose_reports_are_linked_with_their_counts_beside_ours() {
    let mut runs: Vec<RunResults> = fixtures::pair();
    let dir = temp_dir("goose-report");
    std::fs::create_dir_all(&dir).expect("dir");
    for (i, r) in runs.iter_mut().enumerate() {
        let name = format!("goose-{}-0", r.label);
        r.goose_reports = vec![format!("{name}.html"), format!("{name}.json")];
        std::fs::write(dir.join(format!("{name}.html")), "<html></html>").expect("html");
        // goose 0.19's JSON report, the part we read; the second run's failures disagree.
        let failures = r.summary.errors + i as u64;
        let json = format!(
            r#"{{"goose_version":"0.19.0","raw_request_metrics":[
               {{"method":"POST","name":"/orders","number_of_requests":{},"number_of_failures":{failures}}},
               {{"method":"","name":"Aggregated","number_of_requests":{},"number_of_failures":{failures}}}]}}"#,
            r.summary.completed, r.summary.completed
        );
        std::fs::write(dir.join(format!("{name}.json")), json).expect("json");
    }
    let (paths, _) = write_report(&runs, &dir).expect("report");
    let html = std::fs::read_to_string(&paths.html).expect("html");
    let goose = section(&html, "goose");
    assert!(
        goose.contains("<a href=\"goose-blocking-0.html\">goose-blocking-0.html</a>"),
        "{goose}"
    );
    let blocking = format!(
        "goose counted {} answered",
        grouped(runs[0].summary.completed as f64)
    );
    assert!(
        goose.contains(&blocking) && goose.contains("ours the same"),
        "{goose}"
    );
    assert!(
        goose.contains(&format!(
            "ours DIFFER: failed {}",
            grouped(runs[1].summary.errors as f64)
        )),
        "{goose}"
    );
    let md = std::fs::read_to_string(&paths.markdown).expect("md");
    assert!(md.contains("**goose** — blocking-api: goose counted"));
    // Rendered without the files beside it, the page names them and links nowhere.
    let bare = render_html(&runs);
    assert!(
        section(&bare, "goose")
            .contains("<code>goose-blocking-0.html</code> (not beside this page)")
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A pod of 0.125 CPU and 128 MiB is named as run — quota, CFS period and memory — in the
/// conditions line and the limits check, and the CPU sentences are shares of its quota.
#[test]
fn the_conditions_name_the_pod_as_run() {
    let mut runs = fixtures::pair();
    for r in &mut runs {
        let l = &mut r.config.limits;
        (l.cpu_cores, l.cpu_period_us, l.memory_bytes) =
            (Some(0.125), Some(10_000), Some(128 << 20));
    }
    let md = render_markdown(&runs);
    assert!(
        md.contains("· 0.125 CPU (period 10 ms), 128 MiB per API._"),
        "{md}"
    );
    assert!(
        md.contains("**limits enforced** — 0.125 CPU (period 10 ms), 128 MiB (cgroup v2)"),
        "{md}"
    );
    assert!(!md.contains("CPU core"), "no 1-CPU wording left: {md}");
    // A file written before the period was recorded reads as it always did.
    let old = render_markdown(&fixtures::pair());
    assert!(old.contains("· 1 CPU core, 1024 MiB per API._"), "{old}");
}

/// blocking-api's client to the dependencies is part of its execution model: named in the
/// conditions line beside its threads, and listed with the model's own settings in the trust
/// strip, not as a difference between the APIs.
#[test]
fn blocking_apis_client_is_in_the_conditions_and_is_the_models_own() {
    let mut runs = fixtures::pair();
    let blocking = runs
        .iter_mut()
        .find(|r| r.config.settings().blocking_threads.is_some())
        .expect("a blocking-api run");
    blocking
        .config
        .api_settings
        .insert("DEPS_CLIENT".to_owned(), "ureq".to_owned());
    let html = render_html(&runs);
    let verdict = section(&html, "verdict");
    assert!(
        verdict.contains("DB pool 10, blocking-api 200 threads, blocking-api client ureq ·"),
        "{verdict}"
    );
    let md = render_markdown(&runs);
    assert!(
        md.contains(
            "apart from the execution model's own: BIND_ADDR, BLOCKING_THREADS, DEPS_CLIENT"
        ),
        "{md}"
    );
}
