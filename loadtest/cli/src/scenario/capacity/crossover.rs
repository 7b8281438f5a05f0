//! `loadtest crossover DIR…`: where a thread per request is as good as an event loop. The
//! `scenario.json` of several `lab --scenario capacity` runs, each at its own dependency latency
//! (`--latency`), in one table — critical path, objective, each API's capacity and what stopped
//! it — and one chart of capacity against the critical path. Nothing is measured here: every
//! figure is a search's own, and each search's objective is shown beside it (the one derived from
//! the critical path, or the one given with `--slo`), since a derived objective can be tighter
//! than an order's own work at a short critical path.
//!
//! Here: reading the folders and the conclusion (which API served more at each critical path),
//! and the cells' ranges as a table (`ranges.md`, printed: the one capacity.md quotes); the
//! table of searches and its chart are `lab_report::scenario::crossover`'s.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use lab_report::scenario::crossover::{self, rate_text};
use lab_report::scenario::{Note, ScenarioTable};
use lab_results::scenario::{CapacityFile, CapacityPoint, StoppedBy};

use crate::cli::CrossoverArgs;

pub fn command(args: &CrossoverArgs) -> Result<ExitCode> {
    let (mut files, mut notes) = (Vec::new(), Vec::new());
    for dir in &args.folders {
        let mut file = super::ranges::read(dir)?;
        notes.extend(reread_steps(&mut file, dir));
        if let Some(why) = &file.superseded {
            notes.push(format!(
                "{}: superseded ({why}), not in the ranges",
                dir.display()
            ));
        }
        for point in &file.capacities {
            if let Some(why) = &point.superseded {
                notes.push(format!(
                    "{}: {}'s search superseded ({why}), not in the ranges",
                    dir.display(),
                    point.api
                ));
            }
        }
        if file.scenario != crate::scenario::ScenarioName::Capacity {
            bail!(
                "{} is of --scenario {}, not capacity",
                dir.join("scenario.json").display(),
                file.scenario
            );
        }
        files.push(file);
    }
    // By pod, then from the slowest dependencies to the fastest.
    files.sort_by(|a, b| {
        cores(a)
            .total_cmp(&cores(b))
            .then(b.critical_path_ms.cmp(&a.critical_path_ms))
    });
    let mut table = table(&files);
    table.notes.extend(notes.into_iter().map(Note::from));
    write(&table, &args.out)?;
    println!("{}", table.conclusion.join("\n"));
    // The cells' ranges as the page's table, printed and kept beside the crossover.
    let ranges = super::ranges::table(&files);
    if !ranges.is_empty() {
        let path = args.out.join("ranges.md");
        std::fs::write(&path, &ranges).with_context(|| format!("writing {}", path.display()))?;
        println!("\n{ranges}");
    }
    println!("crossover: {}", args.out.join("crossover.html").display());
    Ok(ExitCode::SUCCESS)
}

/// The pod's CPU quota, cores (1 for a file from before pods of other sizes).
fn cores(f: &CapacityFile) -> f64 {
    f.limits.as_ref().and_then(|l| l.cpu_cores).unwrap_or(1.0)
}

/// Each step read again from its own results file, in the folder the search named after it
/// (`<api>-<rate>`, `<api>-<threads>-threads-<rate>`; `-again` for a rate's second run): the
/// orders in flight and RSS per order in flight of a search that predates them, and what
/// stopped the API at each missed step by this build's rules (`capacity::cause`), so that every
/// search on one page is read the same way, and the settings of its cell where the file names
/// none. Returns a note per cause that changed; a step whose folder is gone keeps what the file
/// says.
fn reread_steps(file: &mut CapacityFile, dir: &Path) -> Vec<String> {
    let mut changed = Vec::new();
    // An older file names no settings of its cell: its steps' runs do.
    let written_with_settings = !file.cell_settings.is_empty();
    for c in &mut file.capacities {
        let mut seen = std::collections::HashSet::new();
        for s in &mut c.steps {
            let (again, rate) = if seen.insert(s.rate_rps.to_bits()) {
                ("", format!("{:.0}/s", s.rate_rps))
            } else {
                (
                    super::AGAIN,
                    format!("{:.0}/s (its second run)", s.rate_rps),
                )
            };
            // Threads sized per rate (`auto`) name no count in the folder; a fixed count does.
            let slugs = [None, s.blocking_threads]
                .map(|threads| super::step_slug(&s.api, threads, s.rate_rps, again));
            let Some(r) = slugs.iter().find_map(|slug| results_in(&dir.join(slug))) else {
                continue;
            };
            if !written_with_settings {
                super::points::add_cell_settings(&mut file.cell_settings, &r);
            }
            if s.peak_in_flight.is_none() {
                (s.peak_in_flight, s.rss_per_in_flight_kib) = super::points::in_flight(&r);
            }
            if s.refused.is_none() {
                (s.refused, s.refused_per_second) = super::refusals::refusals(&r);
            }
            if !s.met_objective {
                let now = super::cause::stopped_by(&r);
                let was = s.cause.as_ref().map(|c| c.stopped_by);
                if was != Some(now.stopped_by) {
                    changed.push(format!(
                        "{} at {rate}: {} by this build's rules (the search's own reading: {})",
                        s.api,
                        now.stopped_by.as_str(),
                        was.map_or("none", |w| w.as_str())
                    ));
                }
                s.cause = Some(now);
            }
        }
        // The point's cause is its first failing rate's, from the run that decided that rate
        // (the second where it was measured again), as the search reads it.
        let first = c.first_failing_rps.and_then(|f| c.deciding_step(f));
        if let Some(cause) = first.and_then(|s| s.cause.clone())
            && c.stopped_by != StoppedBy::Harness
        {
            c.stopped_by = cause.stopped_by;
            c.evidence = Some(cause);
        }
    }
    changed
}

/// The one run's results in a step's folder (`results-*.json`, or `results-*.json.gz` as the
/// committed searches keep them).
fn results_in(dir: &Path) -> Option<lab_results::RunResults> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("results-") && (n.ends_with(".json") || n.ends_with(".json.gz"))
            })
        })
        .and_then(|p| lab_results::RunResults::load(&p).ok())
}

fn write(table: &ScenarioTable, out: &Path) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    std::fs::write(
        out.join("crossover.md"),
        crate::scenario::render_markdown(table),
    )?;
    std::fs::write(
        out.join("crossover.html"),
        crate::scenario::render_html(table),
    )?;
    super::write_charts(table, out)
}

/// The crossover table (`lab_report::scenario::crossover`) with its conclusion: per critical
/// path, which API served more.
pub fn table(files: &[CapacityFile]) -> ScenarioTable {
    let mut table = crossover::table(files);
    // Where a cell was searched at least twice per API its verdict is its ranges'
    // (`ranges.rs`); a single search speaks for itself, as before.
    let (mut ranged, mut single) = (Vec::new(), Vec::new());
    for cell in super::ranges::cells(files) {
        match super::ranges::cell_conclusion(&cell) {
            Some(line) => ranged.push(line),
            None => single.extend(cell.into_iter().cloned()),
        }
    }
    table.conclusion = ranged;
    table
        .conclusion
        .extend(single.iter().filter_map(conclusion));
    table.conclusion.extend(shares(&single));
    table
}

/// The search of `api` that found the most, in one file.
fn best<'a>(f: &'a CapacityFile, api: &str) -> Option<&'a CapacityPoint> {
    f.capacities.iter().filter(|c| c.api == api).max_by(|a, b| {
        a.capacity_rps
            .unwrap_or(0.0)
            .total_cmp(&b.capacity_rps.unwrap_or(0.0))
    })
}

/// The crossover's shape in one line: blocking-api's capacity as a share of reactive-api's at
/// each critical path where both were stopped by the API itself (`None` under two such paths).
fn shares(files: &[CapacityFile]) -> Option<String> {
    let parts: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let (b, r) = (best(f, "blocking-api")?, best(f, "reactive-api")?);
            let (cb, cr) = (b.capacity_rps?, r.capacity_rps?);
            (!b.is_lower_bound() && !r.is_lower_bound() && cr > 0.0)
                .then(|| format!("{} ms {:.0} %", f.critical_path_ms, 100.0 * cb / cr))
        })
        .collect();
    (parts.len() >= 2).then(|| {
        format!(
            "blocking-api's capacity as a share of reactive-api's, by critical path: {}.",
            parts.join(", ")
        )
    })
}

/// At one critical path: which API served more within the objective, or that they tie within
/// the resolution, or that it cannot be said (a lower bound above the other's figure is still a
/// win; two lower bounds are not compared).
fn conclusion(f: &CapacityFile) -> Option<String> {
    let (b, r) = (best(f, "blocking-api")?, best(f, "reactive-api")?);
    let (cb, cr) = (b.capacity_rps.unwrap_or(0.0), r.capacity_rps.unwrap_or(0.0));
    let b_name = match b.threads_text() {
        Some(t) => format!("blocking-api ({t})"),
        None => "blocking-api".to_owned(),
    };
    let by = |c: &CapacityPoint| match c.stopped_by {
        StoppedBy::Harness | StoppedBy::None => String::new(),
        s => format!(" (stopped by {})", s.as_str()),
    };
    let (tb, tr) = (
        format!("{}{}", rate_text(b), by(b)),
        format!("{}{}", rate_text(r), by(r)),
    );
    let at = match &f.limits {
        Some(l) => format!(
            "At a {} ms critical path in a pod of {}",
            f.critical_path_ms,
            l.pod()
        ),
        None => format!("At a {} ms critical path", f.critical_path_ms),
    };
    let text = if b.capacity_rps.is_none() && r.capacity_rps.is_none() {
        format!("{at} neither API met the objective at any rate tried.")
    } else if b.is_lower_bound() && r.is_lower_bound() {
        format!(
            "{at} both searches ended at the rig's limit ({b_name} {tb}, reactive-api \
             {tr}): not compared."
        )
    } else if (cb - cr).abs() <= b.resolution_rps.max(r.resolution_rps)
        && !b.is_lower_bound()
        && !r.is_lower_bound()
    {
        format!("{at} they tie within the resolution: {b_name} {tb}, reactive-api {tr}.")
    } else if cb > cr && !r.is_lower_bound() {
        format!(
            "{at} {b_name} served more within the objective: {tb} against reactive-api's \
             {tr}."
        )
    } else if cr > cb && !b.is_lower_bound() {
        format!(
            "{at} reactive-api served more within the objective: {tr} against {b_name}'s \
             {tb}."
        )
    } else {
        format!(
            "{at} {b_name} {tb}, reactive-api {tr}: a lower bound against a lower figure, \
             not decided."
        )
    };
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab_results::scenario::StepPoint;

    fn cap(api: &str, threads: Option<u32>, rps: Option<f64>, by: StoppedBy) -> CapacityPoint {
        CapacityPoint {
            api: api.to_owned(),
            blocking_threads: threads,
            allocator: None,
            capacity_rps: rps,
            resolution_rps: 25.0,
            first_failing_rps: rps.map(|r| r + 25.0),
            lowest_missed_rps: None,
            resolution: None,
            stopped_by: by,
            evidence: None,
            steps: Vec::new(),
            superseded: None,
        }
    }

    fn file(path_ms: u64, caps: Vec<CapacityPoint>) -> CapacityFile {
        CapacityFile {
            superseded: None,
            scenario: lab_results::ScenarioName::Capacity,
            objective: format!("p99 ≤ {path_ms} ms"),
            critical_path_ms: path_ms,
            limits: None,
            capacities: caps,
            sweep: Vec::new(),
            cell_settings: Default::default(),
        }
    }

    #[test]
    fn each_critical_path_names_the_api_that_served_more_or_says_it_cannot() {
        let files = [
            file(
                2200,
                vec![
                    cap("blocking-api", Some(200), Some(75.0), StoppedBy::Threads),
                    cap("reactive-api", None, Some(400.0), StoppedBy::Harness),
                ],
            ),
            file(
                220,
                vec![
                    cap(
                        "blocking-api",
                        Some(200),
                        Some(250.0),
                        StoppedBy::Unidentified,
                    ),
                    cap("reactive-api", None, Some(25.0), StoppedBy::Unidentified),
                ],
            ),
            file(
                22,
                vec![
                    cap("blocking-api", Some(200), Some(300.0), StoppedBy::Harness),
                    cap("reactive-api", None, Some(400.0), StoppedBy::Harness),
                ],
            ),
            file(
                100,
                vec![
                    cap("blocking-api", Some(200), Some(100.0), StoppedBy::Cpu),
                    cap("reactive-api", None, Some(400.0), StoppedBy::Harness),
                ],
            ),
        ];
        let t = table(&files);
        assert_eq!(t.rows.len(), 8);
        assert!(
            t.conclusion[0].starts_with("At a 2200 ms critical path reactive-api served more"),
            "{}",
            t.conclusion[0]
        );
        assert!(t.conclusion[0].contains(
            "≥ 400/s against blocking-api (200 threads)'s 75 ± 25/s (stopped by threads)"
        ));
        assert!(t.conclusion[1].contains("blocking-api (200 threads) served more"));
        assert!(t.conclusion[2].contains("both searches ended at the rig's limit"));
        assert!(t.conclusion[3].contains("reactive-api served more"));
        assert_eq!(t.rows[0][2], "75 ± 25");
        assert_eq!(t.rows[1][2], "≥ 400");
        assert_eq!(t.charts.len(), 1);
        assert!(t.charts[0].svg.contains("<svg"));
    }

    #[test]
    fn the_shape_is_blocking_api_s_share_where_both_apis_stopped_themselves() {
        let files = [
            file(
                22_000,
                vec![
                    cap("blocking-api", None, Some(30.0), StoppedBy::Memory),
                    cap("reactive-api", None, Some(150.0), StoppedBy::Cpu),
                ],
            ),
            file(
                2_200,
                vec![
                    cap("blocking-api", None, Some(84.0), StoppedBy::Cpu),
                    cap("reactive-api", None, Some(191.0), StoppedBy::Cpu),
                ],
            ),
            file(
                22,
                vec![
                    cap("blocking-api", None, Some(300.0), StoppedBy::Cpu),
                    cap("reactive-api", None, Some(400.0), StoppedBy::Harness),
                ],
            ),
        ];
        assert_eq!(
            shares(&files).unwrap(),
            "blocking-api's capacity as a share of reactive-api's, by critical path: \
             22000 ms 20 %, 2200 ms 44 %."
        );
        assert_eq!(shares(&files[1..]), None);
        assert_eq!(table(&files).conclusion.len(), 4);
    }

    #[test]
    fn a_lower_bound_below_the_other_is_not_a_verdict_and_a_tie_is_within_the_resolution() {
        let undecided = file(
            220,
            vec![
                cap("blocking-api", Some(200), Some(300.0), StoppedBy::Cpu),
                cap("reactive-api", None, Some(200.0), StoppedBy::Harness),
            ],
        );
        let text = conclusion(&undecided).unwrap();
        assert!(text.contains("not decided"), "{text}");
        let tie = file(
            220,
            vec![
                cap("blocking-api", Some(200), Some(250.0), StoppedBy::Cpu),
                cap("reactive-api", None, Some(275.0), StoppedBy::Cpu),
            ],
        );
        assert!(
            conclusion(&tie)
                .unwrap()
                .contains("tie within the resolution")
        );
        let none = file(
            22,
            vec![
                cap("blocking-api", Some(200), None, StoppedBy::Unidentified),
                cap("reactive-api", None, Some(50.0), StoppedBy::Unidentified),
            ],
        );
        assert_eq!(table(std::slice::from_ref(&none)).rows[0][2], "none met");
        assert!(
            conclusion(&none)
                .unwrap()
                .contains("reactive-api served more")
        );
        let neither = file(
            22,
            vec![
                cap("blocking-api", Some(200), None, StoppedBy::Unidentified),
                cap("reactive-api", None, None, StoppedBy::Unidentified),
            ],
        );
        assert!(conclusion(&neither).unwrap().contains("neither API met"));
    }

    #[test]
    fn a_step_is_read_again_from_its_own_results_file() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../report/tests/fixtures/blocking-api-0.json");
        let r = lab_results::RunResults::load(&fixture).unwrap();
        let dir = tempfile::tempdir().unwrap();
        // The search ran 100/s twice (the second `-again`); only that folder is there.
        let step_dir = dir.path().join("blocking-api-100-again");
        std::fs::create_dir(&step_dir).unwrap();
        std::fs::copy(&fixture, step_dir.join("results-blocking-0.json")).unwrap();
        let step = super::super::points::step_point(&r, 100.0, true);
        let expected = (step.peak_in_flight, step.rss_per_in_flight_kib);
        assert!(expected.0.is_some_and(|n| n > 0), "{expected:?}");
        let blank = |s: &StepPoint| StepPoint {
            peak_in_flight: None,
            rss_per_in_flight_kib: None,
            ..s.clone()
        };
        let mut c = cap("blocking-api", None, Some(100.0), StoppedBy::Cpu);
        c.steps = vec![blank(&step), blank(&step)];
        let mut f = file(2200, vec![c]);
        reread_steps(&mut f, dir.path());
        let steps = &f.capacities[0].steps;
        assert_eq!(
            (steps[0].peak_in_flight, steps[0].rss_per_in_flight_kib),
            (None, None)
        );
        assert_eq!(
            (steps[1].peak_in_flight, steps[1].rss_per_in_flight_kib),
            expected
        );
        let row = &table(std::slice::from_ref(&f)).rows[0];
        assert_eq!(row[5], expected.0.unwrap().to_string());

        // A missed step: its cause is read again by this build's rules, and the point's with it.
        let now = super::super::cause::stopped_by(&r);
        let other = if now.stopped_by == StoppedBy::Memory {
            StoppedBy::Postgres
        } else {
            StoppedBy::Memory
        };
        let missed_dir = dir.path().join("blocking-api-120");
        std::fs::create_dir(&missed_dir).unwrap();
        std::fs::copy(&fixture, missed_dir.join("results-blocking-0.json")).unwrap();
        let mut missed = super::super::points::step_point(&r, 120.0, false);
        missed.cause.as_mut().unwrap().stopped_by = other;
        let mut c = cap("blocking-api", None, Some(100.0), other);
        c.first_failing_rps = Some(120.0);
        c.steps = vec![step.clone(), missed];
        let mut f = file(2200, vec![c]);
        let notes = reread_steps(&mut f, dir.path());
        assert_eq!(f.capacities[0].stopped_by, now.stopped_by);
        assert_eq!(f.capacities[0].evidence.as_ref(), Some(&now));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("blocking-api at 120/s: "), "{notes:?}");
    }
}
