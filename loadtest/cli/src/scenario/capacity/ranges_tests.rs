use super::*;
use lab_results::scenario::StoppedBy;

fn point(api: &str, rps: Option<f64>, by: StoppedBy) -> CapacityPoint {
    serde_json::from_value(serde_json::json!({
        "api": api, "blocking_threads": null, "allocator": null, "capacity_rps": rps,
        "resolution_rps": 5.0, "first_failing_rps": null, "stopped_by": by,
        "evidence": null, "steps": [],
    }))
    .unwrap()
}

fn search(path_ms: u64, blocking: f64, reactive: f64) -> CapacityFile {
    CapacityFile {
        superseded: None,
        scenario: lab_results::ScenarioName::Capacity,
        objective: String::new(),
        critical_path_ms: path_ms,
        limits: None,
        capacities: vec![
            point("blocking-api", Some(blocking), StoppedBy::Cpu),
            point("reactive-api", Some(reactive), StoppedBy::Cpu),
        ],
        sweep: Vec::new(),
        cell_settings: std::collections::BTreeMap::new(),
    }
}

#[test]
fn a_range_is_the_median_and_the_extremes_of_the_searches_the_api_stopped() {
    let points = [
        point("reactive-api", Some(238.0), StoppedBy::Cpu),
        point("reactive-api", Some(191.0), StoppedBy::Cpu),
        point("reactive-api", Some(218.0), StoppedBy::Memory),
        point("reactive-api", Some(400.0), StoppedBy::Harness),
    ];
    let r = Range::of(&points).unwrap();
    assert_eq!((r.median, r.min, r.max), (218.0, 191.0, 238.0));
    assert_eq!((r.searches, r.lower_bounds), (3, 1));
    assert!(r.is_tight(), "191 and 238 lie within 20 % of 218");
    assert_eq!(
        r.text(),
        "218/s (191–238, 3 searches, 1 more only a lower bound)"
    );
    let even = Range::of(&points[..2]).unwrap();
    assert_eq!(even.median, 214.5);
    assert!(Range::of(&points[3..]).is_none(), "only a lower bound");
    let wide = Range::of(&[
        point("reactive-api", Some(96.0), StoppedBy::Cpu),
        point("reactive-api", Some(218.0), StoppedBy::Cpu),
        point("reactive-api", Some(238.0), StoppedBy::Cpu),
    ])
    .unwrap();
    assert!(!wide.is_tight(), "96 is far below 218");
}

#[test]
fn a_verdict_only_where_the_ranges_do_not_overlap() {
    let apart = [
        search(2200, 88.0, 218.0),
        search(2200, 92.0, 191.0),
        search(2200, 84.0, 238.0),
    ];
    let lines = conclusions(&apart);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("reactive-api served more, the ranges apart"),
        "{lines:?}"
    );
    // 84/238 = 35 %, 92/191 = 48 %, median 88/218 = 40 %.
    assert!(
        lines[0].contains("share 35–48 % (median 40 %)"),
        "{lines:?}"
    );
    assert!(!lines[0].contains("Spread"), "{lines:?}");

    let close = [search(22, 300.0, 322.0), search(22, 330.0, 310.0)];
    let lines = conclusions(&close);
    assert!(
        lines[0].contains("the ranges overlap: no verdict"),
        "{lines:?}"
    );

    let mut old = search(22, 500.0, 100.0);
    old.superseded = Some("the lag rule counted the pod's own stalls".to_owned());
    let with_old = [close[0].clone(), close[1].clone(), old];
    assert_eq!(
        conclusions(&with_old),
        lines,
        "a superseded search is left out"
    );
    assert!(
        conclusions(&close[..1]).is_empty(),
        "one search is no range"
    );
}

#[test]
fn cells_part_by_critical_path() {
    let files = [
        search(2200, 1.0, 2.0),
        search(22, 1.0, 2.0),
        search(2200, 1.0, 2.0),
    ];
    let sizes: Vec<usize> = cells(&files).iter().map(Vec::len).collect();
    assert_eq!(sizes, [2, 1]);
}

/// A search on a non-durable database, or of a fixed pool, is not one more search of the
/// cell searched durable with the lab's pool: each is a cell of its own, named on its line.
#[test]
fn cells_part_by_the_settings_that_set_a_search_apart() {
    let with = |durability: &str, pool: &str| {
        let mut f = search(220, 100.0, 200.0);
        f.cell_settings = [("PG_DURABILITY", durability), ("BLOCKING_THREADS", pool)]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into();
        f
    };
    let files = [
        with("off", "auto"),
        with("on", "auto"),
        with("off", "auto"),
        with("off", "16"),
    ];
    let sizes: Vec<usize> = cells(&files).iter().map(Vec::len).collect();
    assert_eq!(sizes, [2, 1, 1]);
    let lines = conclusions(&files);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("At 220 ms (BLOCKING_THREADS=auto, PG_DURABILITY=off):"),
        "{lines:?}"
    );
}

#[test]
fn the_table_gives_each_search_the_range_and_the_causes_counted_per_api_and_cell() {
    let mut files = [
        search(220, 100.0, 119.0),
        search(220, 104.0, 135.0),
        search(220, 96.0, 168.0),
        search(22, 130.0, 209.0),
    ];
    files[1].capacities[0].stopped_by = StoppedBy::Postgres;
    files[2].capacities[1].stopped_by = StoppedBy::Harness;
    for f in &mut files {
        for c in &mut f.capacities {
            c.lowest_missed_rps = c.capacity_rps.map(|r| r + 4.0);
        }
    }
    let table = table(&files);
    let rows: Vec<&str> = table.lines().collect();
    assert_eq!(rows.len(), 4, "a header, its rule and two rows:\n{table}");
    assert_eq!(
        rows[2],
        "| 220 ms | blocking-api | 100 / 104 · 104 / 108 · 96 / 100 | **100/s (96–104, 3 \
         searches)** | cpu ×2, postgres ×1 |"
    );
    assert_eq!(
        rows[3],
        "| 220 ms | reactive-api | 119 / 123 · 135 / 139 · ≥ 168 | **127/s (119–135, 2 \
         searches, 1 more only a lower bound)** | cpu ×2, harness ×1 |"
    );
    assert!(
        super::table(&files[3..]).is_empty(),
        "a cell searched once has no row"
    );
}
