//! The capacity scenario's page from its `scenario.json`: a file that records the bracket the
//! search found (the highest rate that met the objective, the lowest that missed it) and the pod
//! the APIs ran in says both; a committed file from before reads as it always did.

use std::path::Path;

use lab_report::scenario::capacity_table::{capacity_sentence, table};
use lab_results::Limits;
use lab_results::scenario::CapacityFile;

fn committed() -> CapacityFile {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results/capacity/cap.scenario.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn an_older_file_keeps_its_resolution_and_its_pods_of_one_cpu() {
    let file = committed();
    let blocking = &file.capacities[0];
    assert_eq!(blocking.lowest_missed_rps, None);
    let sentence = capacity_sentence(blocking);
    assert!(
        sentence.contains("75/s ± 25 within the objective; at 100/s it was stopped by threads"),
        "{sentence}"
    );
    let page = table(&file);
    assert!(
        page.intro
            .contains("halving the gap to a resolution of 25/s"),
        "{}",
        page.intro
    );
    assert!(
        page.notes
            .iter()
            .any(|n| n.text().starts_with("Pods of 1 CPU / 1 GiB")),
        "{:?}",
        page.notes
    );
}

#[test]
fn the_bracket_and_the_pod_are_on_the_page() {
    let mut file = committed();
    file.limits = Some(Limits {
        limits_enforced: true,
        cpu_cores: Some(0.125),
        cpu_period_us: Some(10_000),
        cpu_burst_us: None,
        memory_bytes: Some(128 << 20),
        mechanism: "cgroup v1".to_owned(),
        note: String::new(),
        pinning: None,
    });
    let blocking = &mut file.capacities[0];
    blocking.capacity_rps = Some(88.0);
    blocking.lowest_missed_rps = Some(92.0);
    blocking.first_failing_rps = Some(92.0);
    blocking.resolution = Some("5 % of the rate found".to_owned());
    let sentence = capacity_sentence(blocking);
    assert!(
        sentence.contains(
            "88/s met the objective, 92/s missed it (the search narrowed to 5 % of the rate \
             found); at 92/s it was stopped by threads — 89.7 orders/s"
        ),
        "{sentence}"
    );
    assert!(!sentence.contains('±'), "{sentence}");
    let page = table(&file);
    assert!(
        page.intro.contains("are within 5 % of the rate found")
            && page
                .intro
                .contains("Each API in a pod of 0.125 CPU (period 10 ms), 128 MiB (cgroup v1)."),
        "{}",
        page.intro
    );
    assert!(
        page.notes.iter().any(|n| n
            .text()
            .starts_with("Pods of 0.125 CPU (period 10 ms), 128 MiB for a rate")),
        "{:?}",
        page.notes
    );
    // The new fields round-trip, and a file without them writes none.
    let back: CapacityFile = serde_json::from_str(&serde_json::to_string(&file).unwrap()).unwrap();
    assert_eq!(back, file);
    let old = serde_json::to_string(&committed()).unwrap();
    assert!(
        !old.contains("lowest_missed_rps") && !old.contains("\"limits\""),
        "{old}"
    );
}

/// The page says which seconds of a step were judged, from the steps' own record: the settled
/// searches of 2026-12-07 held 10 s at the rate before their 20 s at 2.2 s; an older file's steps
/// were judged from the ramp's end.
#[test]
fn the_judged_seconds_are_read_from_the_steps() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/results/capacity/pod-0125-2200/search-a/scenario.json");
    let settled: CapacityFile = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let intro = table(&settled).intro;
    assert!(
        intro.contains(
            "judged from 20 s to 40 s (held 10 s first for the orders in flight to settle"
        ),
        "{intro}"
    );
    // At --duration-scale 0.5 the ramp (5 s) and the plateau (10 s) halve, the settling hold
    // (2 critical paths + 5 s) does not: its plateau's length gives the scale.
    let mut half = settled.clone();
    for s in half.capacities.iter_mut().flat_map(|c| c.steps.iter_mut()) {
        if let Some(w) = s.cpu_by_role.as_mut() {
            (w.from_s, w.to_s) = (14.0, 24.0);
        }
    }
    let intro = table(&half).intro;
    assert!(
        intro.contains("judged from 14 s to 24 s (held 9 s first"),
        "{intro}"
    );
    let older = table(&committed()).intro;
    assert!(
        older.contains("20 s and judged from the ramp's end (profile hold-R)"),
        "{older}"
    );
}

/// The scenario a file holds is read once into its kind, and the page follows it: a capacity
/// search's page leads with capacity, the threads sweep's with blocking-api's pool.
#[test]
fn each_committed_file_is_drawn_as_the_scenario_that_wrote_it() {
    use lab_results::scenario::CapacityScenario;
    let threads: CapacityFile = serde_json::from_slice(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../docs/results/capacity/threads.scenario.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(committed().written_by(), CapacityScenario::Capacity);
    assert_eq!(threads.written_by(), CapacityScenario::Threads);
    assert!(table(&committed()).title.starts_with("Capacity:"));
    assert!(table(&threads).title.starts_with("Threads:"));
}
