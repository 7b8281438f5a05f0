//! `loadtest crossover DIR…`: where a thread per request is as good as an event loop. The
//! `scenario.json` of several `lab --scenario capacity` runs, each at its own dependency latency
//! (`--latency`), in one table — critical path, objective, each API's capacity and what stopped
//! it — and one chart of capacity against the critical path. Nothing is measured here: every
//! figure is a search's own, and each search's objective is shown beside it (the one derived from
//! the critical path, or the one given with `--slo`), since a derived objective can be tighter
//! than an order's own work at a short critical path.
//!
//! Here: reading the folders and the conclusion (which API served more at each critical path);
//! the table and its chart are `lab_report::scenario::crossover`'s.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use lab_report::scenario::ScenarioTable;
use lab_report::scenario::crossover::{self, rate_text};
use lab_results::scenario::{CapacityFile, CapacityPoint, StoppedBy};

use crate::cli::CrossoverArgs;

pub fn command(args: &CrossoverArgs) -> Result<ExitCode> {
    let mut files = Vec::new();
    for dir in &args.folders {
        let path = dir.join("scenario.json");
        let text = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let file: CapacityFile =
            serde_json::from_slice(&text).with_context(|| format!("parsing {}", path.display()))?;
        if file.scenario != super::ScenarioName::Capacity.as_str() {
            bail!(
                "{} is of --scenario {}, not capacity",
                path.display(),
                file.scenario
            );
        }
        files.push(file);
    }
    files.sort_by_key(|f| std::cmp::Reverse(f.critical_path_ms));
    let table = table(&files);
    write(&table, &args.out)?;
    println!("{}", table.conclusion.join("\n"));
    println!("crossover: {}", args.out.join("crossover.html").display());
    Ok(ExitCode::SUCCESS)
}

fn write(table: &ScenarioTable, out: &Path) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    std::fs::write(out.join("crossover.md"), super::render_markdown(table))?;
    std::fs::write(out.join("crossover.html"), super::render_html(table))?;
    super::capacity::write_charts(table, out)
}

/// The crossover table (`lab_report::scenario::crossover`) with its conclusion: per critical
/// path, which API served more.
pub fn table(files: &[CapacityFile]) -> ScenarioTable {
    let mut table = crossover::table(files);
    table.conclusion = files.iter().filter_map(conclusion).collect();
    table
}

/// At one critical path: which API served more within the objective, or that they tie within
/// the resolution, or that it cannot be said (a lower bound above the other's figure is still a
/// win; two lower bounds are not compared).
fn conclusion(f: &CapacityFile) -> Option<String> {
    let best = |api: &str| {
        f.capacities.iter().filter(|c| c.api == api).max_by(|a, b| {
            a.capacity_rps
                .unwrap_or(0.0)
                .total_cmp(&b.capacity_rps.unwrap_or(0.0))
        })
    };
    let (b, r) = (best("blocking-api")?, best("reactive-api")?);
    let lower = |c: &CapacityPoint| matches!(c.stopped_by, StoppedBy::Harness | StoppedBy::None);
    let (cb, cr) = (b.capacity_rps.unwrap_or(0.0), r.capacity_rps.unwrap_or(0.0));
    let b_name = match b.blocking_threads {
        Some(t) => format!("blocking-api ({t} threads)"),
        None => "blocking-api".to_owned(),
    };
    let (tb, tr) = (rate_text(b), rate_text(r));
    let at = format!("At a {} ms critical path", f.critical_path_ms);
    let text = if b.capacity_rps.is_none() && r.capacity_rps.is_none() {
        format!("{at} neither API met the objective at any rate tried.")
    } else if lower(b) && lower(r) {
        format!(
            "{at} both searches ended at the rig's limit ({b_name} {tb}, reactive-api \
             {tr}): not compared."
        )
    } else if (cb - cr).abs() <= b.resolution_rps.max(r.resolution_rps) && !lower(b) && !lower(r) {
        format!("{at} they tie within the resolution: {b_name} {tb}, reactive-api {tr}.")
    } else if cb > cr && !lower(r) {
        format!(
            "{at} {b_name} served more within the objective: {tb} against reactive-api's \
             {tr}."
        )
    } else if cr > cb && !lower(b) {
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
        }
    }

    fn file(path_ms: u64, caps: Vec<CapacityPoint>) -> CapacityFile {
        CapacityFile {
            scenario: "capacity".to_owned(),
            objective: format!("p99 ≤ {path_ms} ms"),
            critical_path_ms: path_ms,
            limits: None,
            capacities: caps,
            sweep: Vec::new(),
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
        assert!(t.conclusion[0].contains("≥ 400/s against blocking-api (200 threads)'s 75 ± 25/s"));
        assert!(t.conclusion[1].contains("blocking-api (200 threads) served more"));
        assert!(t.conclusion[2].contains("both searches ended at the rig's limit"));
        assert!(t.conclusion[3].contains("reactive-api served more"));
        assert_eq!(t.rows[0][4], "75 ± 25");
        assert_eq!(t.rows[1][4], "≥ 400");
        assert_eq!(t.charts.len(), 1);
        assert!(t.charts[0].svg.contains("<svg"));
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
        assert_eq!(table(std::slice::from_ref(&none)).rows[0][4], "none met");
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
}
