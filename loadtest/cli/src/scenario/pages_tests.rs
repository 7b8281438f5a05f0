//! The pages of the scenarios made of lab runs, rendered from small synthetic `scenario.json`
//! fixtures (`fixtures/`): a conclusion computed from the rows (a changed row changes it), the
//! odd cases said first, every harness-bound row marked, a chart of the rows only, the run
//! conditions in the page. `SCENARIO_FIXTURE_OUT` keeps the pages for
//! `scripts/report-screenshots.sh`.

use serde_json::{Value, json};

use crate::scenario::findings::apply;
use crate::scenario::registry::runner;
use crate::scenario::{LabRuns, Runner, ScenarioName, ScenarioTable};
use lab_report::scenario::trust_line;

/// The fixture of a scenario that writes a `scenario.json`; `None` for one without typed rows
/// (`points::rows`).
fn fixture_of(kind: LabRuns) -> Option<Value> {
    let text = match kind {
        LabRuns::Remotecall => include_str!("fixtures/remotecall-scenario.json"),
        LabRuns::DbLatency => include_str!("fixtures/db-latency-scenario.json"),
        LabRuns::Overload => include_str!("fixtures/overload-scenario.json"),
        LabRuns::Faults => include_str!("fixtures/faults-scenario.json"),
        LabRuns::SlowDependency | LabRuns::Soak => return None,
    };
    Some(serde_json::from_str(text).expect("fixture"))
}

fn fixture(kind: LabRuns) -> Value {
    fixture_of(kind).expect("a scenario with typed rows")
}

/// The page of `json`'s rows: one table row per JSON row, its fields as columns, the first four
/// above the fold.
fn page(name: LabRuns, json: &Value) -> (ScenarioTable, String) {
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
    apply(&mut t, name, json).expect("rows read");
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

/// Every scenario made of lab runs that writes typed rows, in the registry's order.
fn scenarios() -> Vec<LabRuns> {
    ScenarioName::ALL
        .iter()
        .filter_map(|&name| match runner(name) {
            Runner::LabRuns(kind) => fixture_of(kind).map(|_| kind),
            Runner::Own(_) => None,
        })
        .collect()
}

#[test]
fn db_latency_concludes_from_the_direct_and_the_farthest_rows() {
    let (t, _) = page(LabRuns::DbLatency, &fixture(LabRuns::DbLatency));
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
    let slower = with(fixture(LabRuns::DbLatency), 6, "orders_per_s", json!(99.8));
    let (t, _) = page(LabRuns::DbLatency, &slower);
    assert!(t.conclusion[0].contains("blocking-api kept 50 %"), "{t:?}");
}

#[test]
fn remotecall_and_overload_conclusions_follow_their_rows() {
    let (t, _) = page(LabRuns::Remotecall, &fixture(LabRuns::Remotecall));
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
        LabRuns::Remotecall,
        &with(fixture(LabRuns::Remotecall), 4, "errors", json!(0)),
    );
    assert!(changed.conclusion[0].contains("blocking-api request scope 4.7 req/s;"));

    let (t, _) = page(LabRuns::Overload, &fixture(LabRuns::Overload));
    assert_eq!(
        t.conclusion[0],
        "blocking-api: shedding off 88.4 201/s (p99 29.80 s), 14210 client timeouts; shedding on \
         90.2 201/s (p99 2.71 s), refused 67 % (p99 31 ms), 0 client timeouts."
    );
    let (changed, _) = page(
        LabRuns::Overload,
        &with(fixture(LabRuns::Overload), 2, "ok_per_s", json!(40.0)),
    );
    assert!(changed.conclusion[0].contains("shedding on 40.0 201/s"));
}

#[test]
fn faults_says_first_when_money_does_not_balance() {
    let (t, _) = page(LabRuns::Faults, &fixture(LabRuns::Faults));
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
    let mut bad = fixture(LabRuns::Faults);
    bad[1]["money"]["charges_without_order"] = json!(2);
    let (t, html) = page(LabRuns::Faults, &bad);
    assert_eq!(
        t.conclusion[0],
        "MONEY NOT BALANCED: reactive-api has 2 charges without order, 0 orders without charge, \
         0 double charges, 0 amount mismatches."
    );
    assert!(t.conclusion[1].contains("for blocking-api (1781 charges"));
    assert!(!t.conclusion[1].contains("reactive-api"));
    assert!(html.contains("<p class=\"lead\">MONEY NOT BALANCED"));
    let mut uncounted = fixture(LabRuns::Faults);
    uncounted[0]["money"] = Value::Null;
    let (t, _) = page(LabRuns::Faults, &uncounted);
    assert!(
        t.conclusion[0].starts_with("MONEY NOT BALANCED: blocking-api's money was not counted")
    );
}

#[test]
fn no_rows_and_all_harness_bound_are_said_first() {
    for name in scenarios() {
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
        (LabRuns::Remotecall, 1),
        (LabRuns::DbLatency, 1),
        (LabRuns::Overload, 1),
        (LabRuns::Faults, 0),
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
    let (_, html) = page(LabRuns::DbLatency, &fixture(LabRuns::DbLatency));
    // Two stacked charts (throughput, connections), a line per API each, a dot per run.
    assert_eq!(html.matches("class=\"series\"").count(), 4);
    assert_eq!(html.matches("class=\"dot\"").count(), 16);
    let ends = path_ends(&html);
    assert_eq!(ends.len(), 4);
    for (end, last_dot) in ends {
        assert_eq!(end, last_dot, "a path ends at its last sample");
    }
    // A row without connections scraped has no point on that chart, not a zero.
    let mut gap = fixture(LabRuns::DbLatency);
    gap[7]["connections_mean"] = Value::Null;
    let (_, html) = page(LabRuns::DbLatency, &gap);
    assert_eq!(html.matches("class=\"dot\"").count(), 15);
    for (end, last_dot) in path_ends(&html) {
        assert_eq!(end, last_dot);
    }
    // Bars: one per run and panel; a run without 201s has no p99 bar.
    let (_, html) = page(LabRuns::Overload, &fixture(LabRuns::Overload));
    assert_eq!(html.matches("<rect x=").count(), 8);
    let (_, html) = page(
        LabRuns::Overload,
        &with(fixture(LabRuns::Overload), 0, "ok_p99_ms", Value::Null),
    );
    assert_eq!(html.matches("<rect x=").count(), 7);
    let (_, html) = page(LabRuns::Remotecall, &fixture(LabRuns::Remotecall));
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
    let (_, html) = page(LabRuns::Faults, &fixture(LabRuns::Faults));
    assert_eq!(
        html.matches("<rect x=").count(),
        12,
        "six money bars per API"
    );
}

#[test]
fn the_pages_show_their_conditions_and_hide_nothing_in_comments() {
    for name in scenarios() {
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
        assert_eq!(folded, name != LabRuns::Faults, "{name}");
    }
}
