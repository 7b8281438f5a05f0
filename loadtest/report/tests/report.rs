//! The comparison report, rendered from synthetic fixtures (see `fixtures/mod.rs`): self-contained
//! HTML, both APIs in the charts, Little's law, the limits banner, fairness, repeats and the
//! Markdown summary's shape.

mod fixtures;

use std::path::{Path, PathBuf};

use fixtures::section;
use lab_report::{render_html, render_markdown, write_report};
use lab_results::RunResults;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<figure id=\"fig-{id}\""))
        .unwrap_or_else(|| panic!("no figure {id}"));
    let rest = &html[start..];
    &rest[..rest.find("</figure>").unwrap_or(rest.len())]
}

#[test]
fn fixture_files_load_and_match_the_synthetic_runs() {
    let runs = fixtures::pair();
    for run in &runs {
        let path = fixture_dir().join(format!("{}-{}.json", run.api, run.repeat_index));
        if std::env::var_os("UPDATE_FIXTURES").is_some() {
            run.save(&path).expect("write fixture");
        }
        let loaded = RunResults::load(&path).expect("fixture loads with the current schema");
        assert_eq!(
            &loaded,
            run,
            "{} is stale: rerun with UPDATE_FIXTURES=1",
            path.display()
        );
    }
}

#[test]
fn html_is_self_contained() {
    let html = render_html(&fixtures::pair());
    fixtures::assert_offline(&html);
    assert!(!html.contains("NaN") && !html.contains("inf<") && !html.contains("\"inf"));
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
}

#[test]
fn charts_overlay_both_apis() {
    let html = render_html(&fixtures::pair());
    let rate = figure(&html, "rate");
    for name in ["offered", "blocking-api 2xx", "reactive-api 2xx"] {
        assert!(
            rate.contains(&format!("<title>{name}</title>")),
            "rate chart lacks {name}"
        );
    }
    // The schedule is the same for both APIs: one offered line, named in the legend.
    assert_eq!(rate.matches("class=\"series\"").count(), 3);
    assert!(rate.contains("<g class=\"legend\">") && rate.contains(">offered</text>"));
    // Error kinds never wear an API's colour.
    let blocking_colour = "stroke=\"#D55E00\"";
    let errors = figure(&html, "errors-blocking-api");
    assert!(errors.contains("dependency_unavailable") && !errors.contains(blocking_colour));
    // The latency distribution: both APIs, one dot per percentile kept.
    let dist = figure(&html, "latency-distribution");
    assert!(dist.contains("<title>blocking-api all</title>") && dist.contains(">99.9 %<"));
    assert_eq!(dist.matches("class=\"dot\"").count(), 10);
    let latency = figure(&html, "latency");
    for p in ["p50", "p90", "p99", "max"] {
        assert!(latency.contains(&format!("<title>reactive-api {p}</title>")));
    }
    assert!(figure(&html, "db-pool-reactive-api").contains("DB_POOL_SIZE = 10"));
    assert!(figure(&html, "threads").contains("BLOCKING_THREADS = 200"));
    assert!(figure(&html, "harness-cpu-blocking-api").contains("machine: 2 cores × 100 %"));
    assert!(
        rate.contains("payment latency 1000→5000 ms"),
        "injected event marked"
    );
    assert!(rate.contains("Little's-law bound, blocking-api"));
    let pool = figure(&html, "blocking-pool");
    assert!(pool.contains("blocking-api busy") && !pool.contains("reactive-api busy"));
    for id in [
        "latency",
        "latency-distribution",
        "errors-blocking-api",
        "errors-reactive-api",
        "cpu",
        "rss",
        "threads",
        "db-pool-blocking-api",
        "db-pool-reactive-api",
        "in-flight",
        "lateness",
        "harness-cpu-blocking-api",
        "harness-cpu-reactive-api",
    ] {
        assert!(figure(&html, id).contains("<svg"), "figure {id}");
    }
}

#[test]
fn littles_law_shows_bound_and_measured_plateau() {
    let runs = fixtures::pair();
    let ll = runs[0]
        .littles_law
        .clone()
        .expect("blocking fixture has a bound");
    let measured = format!("{:.1}", ll.measured_plateau_rps.expect("plateau"));
    // The fixture slows payment to 5 s for 10 of the plateau's 30 s: the bound that applied is
    // the time-weighted mean, 20/30 × 200 ÷ 2.2 s + 10/30 × 200 ÷ 6.2 s.
    let weighted = 2.0 / 3.0 * 200.0 / 2.2 + 1.0 / 3.0 * 200.0 / 6.2;
    let weighted = format!("{weighted:.1} orders/s");
    let html = render_html(&runs);
    let sec = section(&html, "littles-law");
    for needle in [
        "200 threads",
        "2.20 s",
        "90.9 orders/s",
        "32.3 orders/s while payment answered in 5.00 s (10 s of the 30 s plateau)",
        weighted.as_str(),
        "time-weighted",
        measured.as_str(),
    ] {
        assert!(
            sec.contains(needle),
            "Little's-law section lacks {needle}: {sec}"
        );
    }
    let md = render_markdown(&runs);
    assert!(
        md.contains(&format!("**Little's law** — blocking-api: 200 threads ÷ 2.20 s critical path = at most 90.9 orders/s, 32.3 orders/s while payment answered in 5.00 s (10 s of the 30 s plateau): **{weighted}** time-weighted over the plateau; measured plateau: **{measured} orders/s**")),
        "{md}"
    );
    // Without the slowdown, the configured bound is the one.
    let mut plain = runs.clone();
    for r in &mut plain {
        r.config.injection = None;
    }
    assert!(render_markdown(&plain).contains("= at most **90.9 orders/s**; measured plateau"));
}

#[test]
fn littles_law_note_is_shown_escaped() {
    let mut runs = fixtures::pair();
    let ll = runs[0]
        .littles_law
        .as_mut()
        .expect("blocking fixture has a bound");
    ll.note = Some("payment slowed <5000 ms> for the whole plateau".into());
    // A slowdown over the whole plateau: the lab's note explains the bound.
    runs[0].config.injection = None;
    let html = render_html(&runs);
    let sec = section(&html, "littles-law");
    assert!(
        sec.contains("Note: payment slowed &lt;5000 ms&gt; for the whole plateau."),
        "{sec}"
    );
    assert!(!sec.contains("<5000"));
    assert!(
        render_markdown(&runs).contains("Note: payment slowed <5000 ms> for the whole plateau.")
    );
}

#[test]
fn limits_banner_appears_iff_limits_were_not_enforced() {
    let mut runs = fixtures::pair();
    let html = render_html(&runs);
    assert!(!html.contains("id=\"limits-not-enforced\""));
    assert!(
        render_markdown(&runs)
            .contains("- ✓ **limits enforced** — 1 CPU core, 1024 MiB (cgroup v2)")
    );
    runs[1].config.limits.limits_enforced = false;
    runs[1].config.limits.mechanism = "none".into();
    runs[1].config.limits.note = "cgroup v2 not writable".into();
    let html = render_html(&runs);
    let banner = html.find("id=\"limits-not-enforced\"").expect("banner");
    assert!(
        banner < html.find("id=\"summary\"").expect("summary"),
        "banner must come before the numbers"
    );
    assert!(html.contains("cgroup v2 not writable"));
    assert!(render_markdown(&runs).contains(
        "- ✗ **limits NOT enforced** — reactive-api: mechanism none — cgroup v2 not writable"
    ));
    assert!(section(&html, "verdict").contains("reactive-api: resource limits were NOT enforced"));
}

#[test]
fn fairness_lists_a_perturbed_setting() {
    let mut runs = fixtures::pair();
    let fair = render_html(&runs);
    let sec = section(&fair, "fairness");
    assert!(sec.contains("are the same for every run"), "{sec}");
    assert!(
        sec.contains("BLOCKING_THREADS") && sec.contains("BIND_ADDR"),
        "execution-model settings listed as expected"
    );
    assert!(render_markdown(&runs).contains("- ✓ **settings identical** — apart from the execution model's own: BIND_ADDR, BLOCKING_THREADS"));

    runs[1]
        .config
        .api_settings
        .insert("DB_POOL_SIZE".into(), "50".into());
    let html = render_html(&runs);
    let sec = section(&html, "fairness");
    assert!(sec.contains("id=\"unfair\""), "{sec}");
    let unfair_table = &sec[sec.find("id=\"unfair\"").unwrap_or(0)
        ..sec.find("Expected to differ").unwrap_or(sec.len())];
    assert!(
        unfair_table.contains("<code>DB_POOL_SIZE</code>") && unfair_table.contains("<td>50</td>")
    );
    assert!(!unfair_table.contains("BIND_ADDR"));
    assert!(
        render_markdown(&runs).contains(
            "- ✗ **1 setting(s) differ** — DB_POOL_SIZE (blocking-api 10, reactive-api 50)"
        )
    );
    assert!(
        section(&html, "verdict")
            .contains("settings differ besides the execution model: DB_POOL_SIZE")
    );
    // The database password never reaches the page.
    assert!(!html.contains("lab-password") && html.contains("lab:***@"));
}

#[test]
fn markdown_has_one_row_per_metric_and_one_column_per_api() {
    let md = render_markdown(&fixtures::pair());
    // The summary tables; the split by thread role has a table per API, checked on its own.
    let tables: Vec<&str> = md
        .split("### ")
        .skip(1)
        .filter(|t| !t.starts_with("CPU per order by thread role"))
        .collect();
    assert_eq!(tables.len(), 2, "plateau and whole run");
    for t in tables {
        let rows: Vec<&str> = t.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(rows[0], "| metric | blocking-api | reactive-api |");
        assert_eq!(rows[1], "|---|---:|---:|");
        let metrics: Vec<&str> = rows[2..]
            .iter()
            .map(|r| r.split('|').nth(1).unwrap_or_default().trim())
            .collect();
        let mut unique = metrics.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), metrics.len(), "one row per metric");
        for m in [
            "arrivals",
            "2xx, share of arrivals",
            "errors: dependency_unavailable",
            "latency p99.9",
            "CPU-seconds per 1,000 orders",
            "peak RSS",
            "peak threads",
        ] {
            assert!(metrics.contains(&m), "missing {m}");
        }
        for r in rows.iter().filter(|r| !r.starts_with("|---")) {
            assert_eq!(r.split(" | ").count(), 3, "three cells in {r}");
        }
    }
}

#[test]
fn repeats_show_their_spread() {
    let runs: Vec<RunResults> = (0..3)
        .flat_map(|i| {
            [
                fixtures::run("blocking-api", i, 3),
                fixtures::run("reactive-api", i, 3),
            ]
        })
        .collect();
    let html = render_html(&runs);
    let table = section(&html, "summary");
    assert!(
        table.contains("<small>") && table.contains("median"),
        "ranges under the medians"
    );
    assert!(
        figure(&html, "rate").contains("stroke-opacity=\"0.4\""),
        "later repeats drawn faint"
    );
    let md = render_markdown(&runs);
    let row = md
        .lines()
        .find(|l| l.starts_with("| orders per second (201) |"))
        .expect("row");
    assert!(row.contains(" – ") && row.contains('('), "{row}");
}

#[test]
fn harness_bound_runs_are_flagged() {
    let mut runs = fixtures::pair();
    assert!(!render_html(&runs).contains("id=\"harness-bound\""));
    runs[0].harness_bound = Some("mock-deps at 100 % CPU from t=35 s".into());
    let html = render_html(&runs);
    assert!(
        html.contains("id=\"harness-bound\"")
            && html.contains("mock-deps at 100 % CPU from t=35 s")
    );
    assert!(
        render_markdown(&runs)
            .contains("- ✗ **harness-bound** — blocking-api: mock-deps at 100 % CPU from t=35 s")
    );
    assert!(
        section(&html, "verdict").contains("blocking-api was harness-bound: the rig, not the API")
    );
}

#[test]
fn odd_inputs_do_not_break_the_page() {
    assert!(render_html(&[]).contains("nothing to compare"));
    let _ = render_markdown(&[]);
    let mut run = fixtures::run("reactive-api", 0, 1);
    run.plateau = None;
    run.seconds.truncate(3);
    if let Some(l) = run.seconds[1].latency_ms.as_mut() {
        l.p99 = f64::NAN;
    }
    if let Some(p) = run.seconds[2].api_process.as_mut() {
        p.cpu_percent = f64::INFINITY;
    }
    run.summary.latency_ms.p50 = f64::NAN;
    let html = render_html(&[run.clone()]);
    assert!(
        !html.contains("NaN") && !html.contains("inf"),
        "no NaN or inf anywhere"
    );
    assert!(!html.contains("Plateau (constant phase)"));
    assert!(render_markdown(&[run]).contains("### Whole run"));
}

#[test]
fn writes_both_files() {
    let dir = std::env::temp_dir().join(format!("loadtest-report-{}", std::process::id()));
    let (paths, summary) = write_report(&fixtures::pair(), &dir).expect("report written");
    assert!(
        std::fs::read_to_string(&paths.html)
            .expect("html")
            .contains("<svg")
    );
    let written = std::fs::read_to_string(&paths.markdown).expect("md");
    assert!(written.contains("| metric |"));
    // What the lab prints is what it wrote.
    assert_eq!(summary, written);
    let _ = std::fs::remove_dir_all(dir);
}

/// docs/example-report, rendered from the synthetic fixture with a banner that says so in both
/// files: rendered and checked in every run, written into docs/ by
/// `UPDATE_EXAMPLE=1 cargo test -p lab-report --test report`.
#[test]
fn example_report() {
    let tmp = std::env::temp_dir().join(format!("example-report-{}", std::process::id()));
    let out = match std::env::var_os("UPDATE_EXAMPLE") {
        Some(_) => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/example-report"),
        None => tmp.clone(),
    };
    let (paths, _) = write_report(&fixtures::pair(), &out).expect("example written");
    let notice = "This example was rendered from the synthetic fixture in `loadtest/report/tests/fixtures/` — it is NOT a measurement.";
    let html = std::fs::read_to_string(&paths.html)
        .expect("html")
        .replacen(
            "<main>",
            &format!(
                "<main><div class=\"banner warn\"><strong>Example.</strong> {}</div>",
                notice.replace('`', "")
            ),
            1,
        );
    assert!(html.contains("<strong>Example.</strong> This example was rendered"));
    std::fs::write(&paths.html, html).expect("html");
    let md = std::fs::read_to_string(&paths.markdown).expect("md");
    assert!(
        md.contains("blocking-api") && md.contains("reactive-api"),
        "{md}"
    );
    std::fs::write(&paths.markdown, format!("> **Example.** {notice}\n\n{md}")).expect("md");
    let written = std::fs::read_to_string(&paths.markdown).expect("md");
    assert!(written.starts_with("> **Example.** This example was rendered"));
    let _ = std::fs::remove_dir_all(tmp);
}

#[test]
fn optional_figures_appear_only_when_measured() {
    let mut runs = fixtures::pair();
    let (html, md) = (render_html(&runs), render_markdown(&runs));
    assert!(
        !html.contains("201s only") && !md.contains("201s only"),
        "no row of dashes"
    );
    assert!(!html.contains("knee") && !md.contains("knee"));
    runs[0].knee_rps = Some(90.0);
    runs[1].summary.ok_latency_ms = Some(runs[1].summary.latency_ms);
    let (html, md) = (render_html(&runs), render_markdown(&runs));
    let knee = "Stress knee (the highest step rate that held: ≤ 1 % errors, p99 ≤ 10 s): blocking-api 90.0 req/s.";
    assert!(section(&html, "verdict").contains(knee) && md.contains(knee));
    let row = md
        .lines()
        .find(|l| l.starts_with("| latency p99, 201s only |"))
        .expect("row");
    assert!(
        row.contains("| – |"),
        "blocking-api did not measure it: {row}"
    );
}

#[test]
fn the_money_line_is_red_only_when_money_is_unaccounted_for() {
    use lab_results::MoneyRecord;
    let mut runs = fixtures::pair();
    let html = render_html(&runs);
    assert!(
        section(&html, "money").contains("Not measured"),
        "older results: no line, and the section says why"
    );
    let balanced = MoneyRecord {
        charges: 1210,
        voids: 4,
        orders: 1206,
        ..MoneyRecord::default()
    };
    runs[0].money = Some(balanced.clone());
    runs[1].money = Some(MoneyRecord {
        charges_without_order: 3,
        ..balanced
    });
    let html = render_html(&runs);
    let money = section(&html, "money");
    assert!(
        money.contains(
            "<p class=\"money\"><strong>blocking-api</strong>: 1,210 charges, 4 voids, 1,206 orders, \
             0 charges without order, 0 orders without charge</p>"
        ),
        "{money}"
    );
    assert!(
        money.contains("<div class=\"banner danger money\" role=\"alert\"><strong>reactive-api</strong>: 1,210 charges, 4 voids, 1,206 orders, 3 charges without order"),
        "{money}"
    );
    let md = render_markdown(&runs);
    assert!(md.contains("**Money** — blocking-api: 1,210 charges, 4 voids, 1,206 orders, 0 charges without order, 0 orders without charge"), "{md}");
    assert!(md.contains("❌ **Money** — reactive-api: "), "{md}");
    runs[1].money.as_mut().unwrap().charges_without_order = 0;
    runs[1].money.as_mut().unwrap().orders_without_charge = 2;
    assert!(render_markdown(&runs).contains("❌ **Money** — reactive-api: 1,210 charges, 4 voids, 1,206 orders, 0 charges without order, 2 orders without charge"));
}

#[test]
fn hostile_strings_in_the_results_are_escaped() {
    // Text that would run a script or leave an attribute if it reached the page as markup.
    let hostile = "<script>alert('x')</script>\" onload=\"x";
    let escaped = "&lt;script&gt;alert('x')&lt;/script&gt;&quot; onload=&quot;x";
    // A file name cannot hold the `/`.
    let file = "x\" onload=\"y <b>.html";
    let mut runs = fixtures::pair();
    for r in &mut runs {
        r.api = format!("{}{hostile}", r.api);
        r.run_id = hostile.into();
        r.environment.git_sha = hostile.into();
        r.config.profile.name = hostile.into();
        r.config.profile.phases[0].name = hostile.into();
        r.config.limits.mechanism = hostile.into();
        r.config.api_settings.insert(hostile.into(), hostile.into());
        r.harness_bound = Some(hostile.into());
        r.invariants.push(lab_results::InvariantCheck {
            name: hostile.into(),
            ok: Some(false),
            detail: hostile.into(),
        });
        for e in &mut r.timeline {
            e.label = hostile.into();
        }
        r.goose_reports = vec![file.into()];
    }
    // With the goose report beside the page, its name becomes a link's `href` too.
    let dir = std::env::temp_dir().join(format!("loadtest-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join(file), "").expect("goose file");
    let (paths, _) = write_report(&runs, &dir).expect("report");
    let html = std::fs::read_to_string(&paths.html).expect("html");
    fixtures::assert_offline(&html);
    assert!(!html.contains("<script") && !html.contains("<b>") && !html.contains("onload=\""));
    for place in [
        format!("<title>Order API load test: blocking-api{escaped} vs "),
        "<a href=\"x&quot; onload=&quot;y &lt;b&gt;.html\">x&quot; onload=&quot;y &lt;b&gt;.html</a>".to_owned(),
        format!("<code>{escaped}</code>"),
        format!("<td>{escaped}</td>"),
        // Inside the hand-drawn SVG: a series name.
        format!("<title>blocking-api{escaped} 2xx</title>"),
    ] {
        assert!(html.contains(&place), "{place} not found");
    }
    let rate = figure(&html, "rate");
    assert!(rate.contains(&format!(">{escaped}</text>")), "{rate}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_plateau_table_counts_late_and_unanswered_arrivals_exactly() {
    let runs = fixtures::pair();
    let md = render_markdown(&runs);
    let plateau = md.split("### ").nth(1).expect("plateau table");
    let row = |name: &str| -> Vec<String> {
        let line = plateau
            .lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("no row {name:?}"));
        // Counts as printed, thousands separators dropped.
        line.split('|')
            .skip(2)
            .map(|c| c.trim().replace(',', ""))
            .take(2)
            .collect()
    };
    // The generator's per-arrival record: every plateau arrival answered, within or late, so
    // late + within = the plateau's answers and none is unanswered after the drain.
    for (i, run) in runs.iter().enumerate() {
        let p = run.plateau.as_ref().expect("plateau");
        let arrivals = |from: u32, to: u32| -> (u64, u64, u64) {
            let (mut within, mut late, mut offered) = (0, 0, 0);
            for s in run.seconds.iter().filter(|s| s.t >= from && s.t < to) {
                offered += s.offered;
                for (k, n) in s.answered_after.iter().enumerate() {
                    if s.t + (k as u32) < to {
                        within += n;
                    } else {
                        late += n;
                    }
                }
            }
            (offered, within, late)
        };
        let (offered, within, late) = arrivals(30, 60);
        assert_eq!(offered, p.offered, "{}", run.api);
        assert_eq!(within + late, p.completed, "{}", run.api);
        assert_eq!(
            row("of those, answered late (after the plateau)")[i],
            late.to_string()
        );
        assert_eq!(row("of those, unanswered at the run's end")[i], "0");
        assert_eq!(
            row("open when the plateau ended (answered late or never)")[i],
            late.to_string()
        );
    }
    // The blocking API fell behind: many of its plateau arrivals were answered late.
    assert_ne!(row("of those, answered late (after the plateau)")[0], "0");
}
