//! The pages of the scenarios made of lab runs, rendered from small synthetic `scenario.json`
//! fixtures (`fixtures/`): a conclusion computed from the rows (a changed row changes it), the
//! odd cases said first, every harness-bound row marked, a chart of the rows only, the run
//! conditions in the page. `SCENARIO_FIXTURE_OUT` keeps the pages for
//! `scripts/report-screenshots.sh`.

use serde_json::{Value, json};

use crate::scenario::ScenarioTable;
use crate::scenario::findings::apply;
use lab_report::scenario::trust_line;

fn fixture(name: &str) -> Value {
    let text = match name {
        "remotecall" => include_str!("fixtures/remotecall-scenario.json"),
        "db-latency" => include_str!("fixtures/db-latency-scenario.json"),
        "overload" => include_str!("fixtures/overload-scenario.json"),
        _ => include_str!("fixtures/faults-scenario.json"),
    };
    serde_json::from_str(text).expect("fixture")
}

/// The page of `json`'s rows: one table row per JSON row, its fields as columns, the first four
/// above the fold.
fn page(name: &str, json: &Value) -> (ScenarioTable, String) {
    let rows = json.as_array().expect("rows");
    let columns: Vec<String> = rows
        .first()
        .and_then(Value::as_object)
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_else(|| vec!["api".to_owned()]);
    let cell = |v: Option<&Value>| match v {
        None | Some(Value::Null) => "—".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    let mut t = ScenarioTable {
        title: format!("{name} (fixture)"),
        intro: "Rendered from a synthetic scenario.json.".into(),
        rows: rows
            .iter()
            .map(|r| columns.iter().map(|c| cell(r.get(c))).collect())
            .collect(),
        columns,
        main_columns: 4,
        conditions: vec!["Written by loadtest lab --scenario … on the test machine.".into()],
        ..ScenarioTable::default()
    };
    apply(&mut t, scenario(name), json).expect("rows read");
    let html = crate::scenario::render_html(&t);
    // The fixture's own page only, not the variations the tests make of it.
    if let Some(dir) = std::env::var_os("SCENARIO_FIXTURE_OUT").filter(|_| *json == fixture(name)) {
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join(format!("{name}-scenario.html")), &html).expect("written");
    }
    (t, html)
}

/// `json` with `field` of row `i` set to `value`.
fn with(mut json: Value, i: usize, field: &str, value: Value) -> Value {
    json[i][field] = value;
    json
}

const SCENARIOS: [&str; 4] = ["remotecall", "db-latency", "overload", "faults"];

#[test]
fn db_latency_concludes_from_the_direct_and_the_farthest_rows() {
    let (t, _) = page("db-latency", &fixture("db-latency"));
    assert_eq!(
        t.conclusion,
        [
            "With 6.5 ms added between API and PostgreSQL, blocking-api kept 86 % of its direct \
          throughput (200 → 171 orders/s) with 6.2 connections in use on average (0.4 \
          directly), p99 480 ms, 212 of 6000 failed; reactive-api kept 99 % of its direct \
          throughput (200 → 198 orders/s) with 3.9 connections in use on average (0.3 \
          directly), p99 61 ms."
        ]
    );
    let slower = with(fixture("db-latency"), 6, "orders_per_s", json!(99.8));
    let (t, _) = page("db-latency", &slower);
    assert!(t.conclusion[0].contains("blocking-api kept 50 %"), "{t:?}");
}

#[test]
fn remotecall_and_overload_conclusions_follow_their_rows() {
    let (t, _) = page("remotecall", &fixture("remotecall"));
    assert_eq!(t.conclusion.len(), 2, "one sentence per payment latency");
    assert!(
        t.conclusion[0].starts_with(
            "With payment answering in 3000 ms: blocking-api request scope 4.7 req/s, 99 of 300 \
             failed; reactive-api request scope 4.6 req/s, 97 of 300 failed; blocking-api short \
             scope 8.9 req/s;"
        ),
        "{}",
        t.conclusion[0]
    );
    let (changed, _) = page(
        "remotecall",
        &with(fixture("remotecall"), 4, "errors", json!(0)),
    );
    assert!(changed.conclusion[0].contains("blocking-api request scope 4.7 req/s;"));

    let (t, _) = page("overload", &fixture("overload"));
    assert_eq!(
        t.conclusion[0],
        "blocking-api: shedding off 88.4 201/s (p99 29.80 s), 14210 client timeouts; shedding on \
         90.2 201/s (p99 2.71 s), refused 67 % (p99 31 ms), 0 client timeouts."
    );
    let (changed, _) = page(
        "overload",
        &with(fixture("overload"), 2, "ok_per_s", json!(40.0)),
    );
    assert!(changed.conclusion[0].contains("shedding on 40.0 201/s"));
}

#[test]
fn faults_says_first_when_money_does_not_balance() {
    let (t, _) = page("faults", &fixture("faults"));
    assert_eq!(
        t.conclusion,
        [
            "Through payment faults, a kill -9 and a PostgreSQL restart, every charge ended as one \
             order or one void for blocking-api (1781 charges: 1772 orders, 9 voided) and \
             reactive-api (1790 charges: 1779 orders, 11 voided).",
            "blocking-api 1796 of 1800 clients got their 201, 0 gave up; reactive-api 1797 of \
             1800 clients got their 201, 0 gave up.",
        ]
    );
    let mut bad = fixture("faults");
    bad[1]["money"]["charges_without_order"] = json!(2);
    let (t, html) = page("faults", &bad);
    assert_eq!(
        t.conclusion[0],
        "MONEY NOT BALANCED: reactive-api has 2 charges without order, 0 orders without charge, \
         0 double charges, 0 amount mismatches."
    );
    assert!(t.conclusion[1].contains("for blocking-api (1781 charges"));
    assert!(!t.conclusion[1].contains("reactive-api"));
    assert!(html.contains("<p class=\"lead\">MONEY NOT BALANCED"));
    let mut uncounted = fixture("faults");
    uncounted[0]["money"] = Value::Null;
    let (t, _) = page("faults", &uncounted);
    assert!(
        t.conclusion[0].starts_with("MONEY NOT BALANCED: blocking-api's money was not counted")
    );
}

#[test]
fn no_rows_and_all_harness_bound_are_said_first() {
    for name in SCENARIOS {
        let (t, html) = page(name, &json!([]));
        assert_eq!(t.conclusion.len(), 1, "{name}");
        assert!(t.conclusion[0].starts_with("No run finished"), "{name}");
        assert!(html.contains("No run finished"));

        let mut all = fixture(name);
        for row in all.as_array_mut().expect("rows") {
            row["harness_bound"] = json!("harness-bound: the generator fell behind");
        }
        let (t, _) = page(name, &all);
        assert!(
            t.conclusion[0].starts_with("Every one of the"),
            "{name}: {t:?}"
        );
        assert!(t.conclusion.len() > 1, "{name}: the figures still follow");
        let trust = trust_line(&t).expect("trust line");
        assert!(trust.starts_with("All "), "{trust}");
    }
}

#[test]
fn every_harness_bound_row_is_marked_and_counted() {
    for (name, bound) in [
        ("remotecall", 1),
        ("db-latency", 1),
        ("overload", 1),
        ("faults", 0),
    ] {
        let json = fixture(name);
        let (t, html) = page(name, &json);
        let rows = json.as_array().expect("rows");
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(
                t.harness_bound[i],
                !row["harness_bound"].is_null(),
                "{name} row {i}"
            );
        }
        assert_eq!(t.harness_bound.iter().filter(|b| **b).count(), bound);
        // In the table above the fold and again in the folded full table.
        assert_eq!(
            html.matches("<tr class=\"harness-bound\">").count(),
            2 * bound,
            "{name}"
        );
        let trust = trust_line(&t).expect("recorded");
        assert!(html.contains(&trust), "{name}");
        let expected = if bound == 0 {
            format!("None of the {} rows", rows.len())
        } else {
            format!("{bound} of {} rows were harness-bound", rows.len())
        };
        assert!(trust.starts_with(&expected), "{trust}");
    }
}

/// `(last point of each series path, the last dot drawn after it)`, per path.
fn path_ends(svg: &str) -> Vec<((f64, f64), (f64, f64))> {
    let num = |s: &str| s.parse::<f64>().expect("number");
    let attr = |tag: &str, name: &str| {
        let start = tag.find(&format!(" {name}=\"")).expect(name) + name.len() + 3;
        tag[start..start + tag[start..].find('"').expect("end")].to_owned()
    };
    svg.split("<path class=\"series\"")
        .skip(1)
        .map(|part| {
            let d = attr(part, "d");
            let last = d.rsplit(['M', 'L']).next().expect("point");
            let mut xy = last.split(' ').map(num);
            let end = (xy.next().expect("x"), xy.next().expect("y"));
            let part = &part[..part.find("<path").unwrap_or(part.len())];
            let dot = part.rsplit("<circle class=\"dot\"").next().expect("a dot");
            (end, (num(&attr(dot, "cx")), num(&attr(dot, "cy"))))
        })
        .collect()
}

#[test]
fn charts_draw_the_rows_only() {
    let (_, html) = page("db-latency", &fixture("db-latency"));
    // Two stacked charts (throughput, connections), a line per API each, a dot per run.
    assert_eq!(html.matches("class=\"series\"").count(), 4);
    assert_eq!(html.matches("class=\"dot\"").count(), 16);
    let ends = path_ends(&html);
    assert_eq!(ends.len(), 4);
    for (end, last_dot) in ends {
        assert_eq!(end, last_dot, "a path ends at its last sample");
    }
    // A row without connections scraped has no point on that chart, not a zero.
    let mut gap = fixture("db-latency");
    gap[7]["connections_mean"] = Value::Null;
    let (_, html) = page("db-latency", &gap);
    assert_eq!(html.matches("class=\"dot\"").count(), 15);
    for (end, last_dot) in path_ends(&html) {
        assert_eq!(end, last_dot);
    }
    // Bars: one per run and panel; a run without 201s has no p99 bar.
    let (_, html) = page("overload", &fixture("overload"));
    assert_eq!(html.matches("<rect x=").count(), 8);
    let (_, html) = page(
        "overload",
        &with(fixture("overload"), 0, "ok_p99_ms", Value::Null),
    );
    assert_eq!(html.matches("<rect x=").count(), 7);
    let (_, html) = page("remotecall", &fixture("remotecall"));
    assert_eq!(html.matches("<rect x=").count(), 16);
    // The bars start right of the longest label (right-aligned before them), none cut at x = 0.
    let x: f64 = html[html.find("<rect x=\"").expect("a bar") + 9..]
        .split('"')
        .next()
        .and_then(|x| x.parse().ok())
        .expect("x");
    assert!(
        x >= 7.5 * "3000 ms · request · blocking-api".chars().count() as f64,
        "{x}"
    );
    let (_, html) = page("faults", &fixture("faults"));
    assert_eq!(
        html.matches("<rect x=").count(),
        12,
        "six money bars per API"
    );
}

#[test]
fn the_pages_show_their_conditions_and_hide_nothing_in_comments() {
    for name in SCENARIOS {
        let (t, html) = page(name, &fixture(name));
        assert!(html.contains(
            "<p class=\"note\" id=\"conditions\"><strong>Run conditions: </strong>Written by"
        ));
        assert!(
            !html.contains("<!--"),
            "{name}: nothing hidden in a comment"
        );
        assert!(html.contains("<figure id=\"fig-scenario\">"), "{name}");
        assert!(
            html.contains(&format!("<p class=\"lead\">{}", t.conclusion[0])),
            "{name}"
        );
        let lower = html.to_lowercase();
        for forbidden in ["<script", "src=", "<link", "url(", "@import"] {
            assert!(!lower.contains(forbidden), "{name}: {forbidden}");
        }
        // The fold holds what does not fit above it: nothing, when the columns that vary from row
        // to row fit (faults' fixture: its clients and gave-up are the same in both rows).
        let folded = html.contains("<details><summary>Every column (");
        assert_eq!(folded, name != "faults", "{name}");
    }
}

/// The registry's scenario of that name (the fixtures are named as `--scenario` takes them).
fn scenario(name: &str) -> crate::scenario::ScenarioName {
    <crate::scenario::ScenarioName as clap::ValueEnum>::from_str(name, false)
        .expect("a scenario's name")
}
