//! The findings of the events and batching scenarios, rendered from their committed results
//! (docs/results/*-scenario.json) as pages.
use super::*;
use crate::scenario::{ScenarioName, ScenarioTable};

/// The scenarios whose findings this module computes (the others': `conclusions.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Committed {
    Events,
    Batching,
}

impl Committed {
    fn json(self) -> Value {
        let text = match self {
            Committed::Events => include_str!("../../../../docs/results/events-scenario.json"),
            Committed::Batching => include_str!("../../../../docs/results/batching-scenario.json"),
        };
        serde_json::from_str(text).expect("committed scenario.json")
    }

    fn apply(self, t: &mut ScenarioTable, json: &Value) -> serde_json::Result<()> {
        match self {
            Committed::Events => apply_events(t, json),
            Committed::Batching => apply_batching(t, json),
        }
    }
}

impl std::fmt::Display for Committed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            Committed::Events => ScenarioName::Events,
            Committed::Batching => ScenarioName::Batching,
        };
        name.fmt(f)
    }
}

/// The page of a committed result: one table row per JSON row (its first fields), the
/// findings applied. `SCENARIO_FIXTURE_OUT` keeps it for `scripts/report-screenshots.sh`.
fn page(name: Committed) -> (ScenarioTable, String) {
    let json = name.json();
    let rows = json
        .get("rows")
        .unwrap_or(&json)
        .as_array()
        .expect("rows")
        .clone();
    // What was measured first, then what tells the rows apart; a column a scenario's rows do
    // not have (`—` in every row) is left out of its page.
    let columns = [
        "api",
        "req_per_s",
        "orders_per_s",
        "events_lost",
        "errors",
        "mode",
        "broker",
        "batch_max",
        "db_rtt_ms",
    ];
    let mut t = ScenarioTable {
        title: format!("{name} (committed result)"),
        intro: "Rendered from docs/results.".into(),
        columns: columns.map(String::from).to_vec(),
        rows: rows
            .iter()
            .map(|r| {
                columns
                    .iter()
                    .map(|c| {
                        r.get(c).map_or("—".to_owned(), |v| {
                            v.to_string().trim_matches('"').to_owned()
                        })
                    })
                    .collect()
            })
            .collect(),
        main_columns: 3,
        conditions: vec!["Written by loadtest lab --scenario … on the test machine.".into()],
        ..ScenarioTable::default()
    };
    name.apply(&mut t, &json).expect("rows read");
    let html = crate::scenario::render_html(&t);
    if let Some(dir) = std::env::var_os("SCENARIO_FIXTURE_OUT") {
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join(format!("{name}-scenario.html")), &html).expect("written");
    }
    (t, html)
}

#[test]
fn events_conclusion_names_the_slow_broker_and_the_crash() {
    let (t, html) = page(Committed::Events);
    assert_eq!(
        t.conclusion,
        [
            "With the broker slowed by 3000 ms a round trip: two-phase 3.4–3.5 req/s and 69 pool timeouts, after-commit 9.9 req/s, outbox 224–463 req/s.",
            "Killed mid-run, after-commit lost 5 events (reactive-api); two-phase and outbox lost none.",
        ]
    );
    // Its chart: one bar per slowed run and per crashed run.
    assert_eq!(html.matches("<rect x=").count(), 12, "6 slowed + 6 crashed");
    assert!(html.contains("<p class=\"lead\">With the broker slowed"));
    // Events runs record no harness verdict: the trust line says so rather than nothing.
    let trust = lab_report::scenario::trust_line(&t).expect("a trust line");
    assert!(trust.contains("was not recorded"), "{trust}");
    assert!(html.contains(&trust));
}

#[test]
fn batching_conclusion_compares_each_best_batch_with_none() {
    let (t, html) = page(Committed::Batching);
    assert_eq!(
        t.conclusion[0],
        "Batching the final persist raised blocking-api's 1.89× at 6.5 ms RTT (246 → 466, batch 1000), 1.40× at 0 ms RTT (488 → 682, batch 1000); reactive-api's 1.99× at 6.5 ms RTT (263 → 522, batch 100), 1.39× at 0 ms RTT (621 → 863, batch 1000)."
    );
    assert!(
        t.conclusion[1].contains("reactive-api at 6.5 ms reached 79 % of its pool ceiling (662/s)"),
        "{}",
        t.conclusion[1]
    );
    assert!(t.conclusion[1].contains("reactive-api at 0 ms was harness-bound"));
    // The trust line and the marks agree with the rows.
    let bound = t.harness_bound.iter().filter(|b| **b).count();
    assert_eq!(bound, 19);
    let trust = lab_report::scenario::trust_line(&t).expect("recorded");
    assert!(
        trust.starts_with("19 of 26 rows were harness-bound"),
        "{trust}"
    );
    assert!(html.contains(&trust));
    // Marked in the table and again in the folded full table.
    assert_eq!(
        html.matches("<tr class=\"harness-bound\">").count(),
        2 * bound
    );
    // One line per API × RTT, a dot per run of the sweep (2 APIs × 2 RTTs × 5 sizes).
    assert_eq!(html.matches("class=\"series\"").count(), 4);
    assert_eq!(html.matches("class=\"dot\"").count(), 20);
    assert!(html.contains(">1000</text>"), "batch sizes on the x axis");
}

#[test]
fn the_page_is_offline_leads_with_what_was_measured_and_shows_its_conditions() {
    for (name, measured, more) in [
        (Committed::Events, "req_per_s", 3),
        (Committed::Batching, "orders_per_s", 1),
    ] {
        let (t, html) = page(name);
        let lower = html.to_lowercase();
        for forbidden in ["<script", "src=", "<link", "url(", "@import"] {
            assert!(!lower.contains(forbidden), "{name}: {forbidden}");
        }
        assert!(
            html.contains(&format!(
                "<details><summary>Every column ({more} more)</summary>"
            )),
            "{name}"
        );
        assert!(html.contains(
            "<p class=\"note\" id=\"conditions\"><strong>Run conditions: </strong>Written by"
        ));
        assert!(!html.contains("<!--"), "nothing hidden in a comment");
        // The main table shows the first columns only.
        let main = &html[html.find("<h2>Results</h2>").expect("results")
            ..html.find("<details>").expect("details")];
        assert_eq!(main.matches("<th>").count(), t.main_columns);
        assert!(main.contains(&format!("<th>{measured}</th>")), "{name}");
        // A column with one value in every row is left out, and said once if it has a value.
        assert!(!html.contains("<th>batch_max</th>") || name == Committed::Batching);
        assert!(!html.contains("<th>orders_per_s</th>") || name == Committed::Batching);
        // Text cells line up left, like their headers; figures right.
        assert!(html.contains("<td class=\"text\">"), "{name}");
        assert!(html.contains("table.summary td.text { text-align:left; white-space:normal; }"));
        if name == Committed::Batching {
            assert!(html.contains("In every row: errors 0."), "{name}");
        }
    }
}
