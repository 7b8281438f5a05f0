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

#[test]
fn an_apis_search_superseded_on_its_own_leaves_the_ranges_and_the_others_search_stays() {
    // Three searches of both APIs; then reactive-api's default changed, its three searches
    // superseded, and three new searches of reactive-api alone in the same cell.
    let settings = |pool: Option<&str>| {
        let mut s = std::collections::BTreeMap::from([
            ("MAX_LOOP_LAG_MS".to_owned(), "5".to_owned()),
            ("PG_DURABILITY".to_owned(), "on".to_owned()),
        ]);
        if let Some(pool) = pool {
            s.insert(POOL.to_owned(), pool.to_owned());
        }
        s
    };
    let mut old = [
        search(22_000, 39.0, 68.0),
        search(22_000, 34.0, 71.0),
        search(22_000, 37.0, 71.0),
    ];
    for f in &mut old {
        f.capacities[1].superseded = Some("ORDER_MEMORY_KIB".into());
        f.cell_settings = settings(Some("auto"));
    }
    // reactive-api alone: no pool among its settings.
    let new = |rps: f64| {
        let mut f = search(22_000, 0.0, rps);
        f.capacities.remove(0);
        f.cell_settings = settings(None);
        f
    };
    // A fixed pool of 900 is a cell of its own, given first: reactive-api's searches still join
    // the cell of the pool the lab sizes.
    let mut fixed = search(22_000, 40.0, 0.0);
    fixed.capacities.remove(1);
    fixed.cell_settings = settings(Some("900"));
    let files: Vec<CapacityFile> = [new(47.0), fixed]
        .into_iter()
        .chain(old.iter().cloned())
        .chain([new(45.0), new(48.0)])
        .collect();
    let cells = cells(&files);
    let sizes: Vec<usize> = cells.iter().map(Vec::len).collect();
    assert_eq!(
        sizes,
        [1, 6],
        "the pool of 900 (given first) apart, the rest one cell"
    );
    let cell = &cells[1];
    assert!(
        cell[..3].iter().all(|f| f.cell_settings.contains_key(POOL)),
        "the searches with a pool first, then reactive-api's alone"
    );
    let (b, r) = (
        range_of(cell, "blocking-api").unwrap(),
        range_of(cell, "reactive-api").unwrap(),
    );
    assert_eq!((b.median, b.min, b.max, b.searches), (37.0, 34.0, 39.0, 3));
    assert_eq!(
        (r.median, r.min, r.max, r.searches),
        (47.0, 45.0, 48.0, 3),
        "the superseded 68–71 are left out"
    );
    let lines = conclusions(&files);
    assert_eq!(
        lines.len(),
        1,
        "the pool of 900 has no reactive-api search: {lines:?}"
    );
    assert!(
        lines[0].contains("reactive-api served more, the ranges apart"),
        "{lines:?}"
    );
}
