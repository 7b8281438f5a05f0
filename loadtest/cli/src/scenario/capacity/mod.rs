//! `--scenario capacity` and `--scenario threads`: each API's capacity found by search, and
//! blocking-api's thread count swept, so the verdict does not rest on a thread count we chose.
//!
//! - `capacity`: for each API (and, for blocking-api, each `--blocking-threads`), a search over
//!   open-model rates (`search.rs`): each step is a full lab run of `hold-R` (a 10 s ramp
//!   to R, 20 s at R) with its money check, judged against the objective (`--slo`, default the
//!   critical path × 1.15, 2xx ≥ 99 %) over the plateau. The result is the highest rate that met
//!   it and the lowest that missed it, at most 5 % of the rate found apart (or `--resolution R`
//!   /s), and what stopped the API at the first rate that did not (`cause.rs`), or "above
//!   X/s, harness-bound" when the rig was the limit twice at a rate (a step flagged
//!   harness-bound, or one that missed with nothing at its limit, is measured once more). Each
//!   step runs the API in the pod given (`--api-cpus`, `--api-memory-mib`), recorded in
//!   `scenario.json`'s `limits`.
//! - `threads`: blocking-api at `BLOCKING_THREADS` 200 … 4000 at 300/s and 750/s, reactive-api
//!   beside it at the same rates: orders/s, 2xx share, p99, CPU and RSS per thread; the smallest
//!   thread count that met the objective at each rate against Little's law (rate × critical path).
//!
//! A step that loses money fails the scenario (exit 3), as any lab run does.

pub mod cause;
pub mod crossover;
pub mod points;
pub mod ranges;
pub mod refusals;
pub mod search;
mod throttling;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::lab_args::{BlockingThreads, LabArgs, ScenarioJudging};
use crate::services::Database;
use lab_report::scenario::{Note, ScenarioTable};
use lab_report::slo::Slo;
use lab_results::RunResults;
use lab_results::scenario::{CapacityFile, CapacityPoint, Cause, StepPoint, StoppedBy};

use super::ScenarioName;
use points::step_point;
use search::{DEFAULT_RESOLUTION, Resolution, Search, Step};

/// The search's first rate and its top rate, orders/s.
pub const START_RPS: f64 = 100.0;
pub const MAX_RPS: f64 = 1600.0;
/// `threads`: the thread counts and the rates of the sweep.
pub const THREAD_COUNTS: &[u32] = &[200, 500, 1000, 2000, 4000];
pub const SWEEP_RATES: &[u32] = &[300, 750];

/// Runs `capacity` or `threads` in full; returns the table and the folder.
pub async fn run(
    name: ScenarioName,
    base: LabArgs,
    judged: ScenarioJudging,
) -> Result<(ScenarioTable, PathBuf)> {
    let out = super::output_folder(name, &base)?;
    let db = super::shared_database(&base).await?;
    let mut file = CapacityFile {
        superseded: None,
        scenario: name,
        objective: String::new(),
        critical_path_ms: base.latency.critical_path_ms(),
        limits: None,
        capacities: Vec::new(),
        sweep: Vec::new(),
        cell_settings: BTreeMap::new(),
    };
    let mut failed = Vec::new();
    let runner = Runner {
        base: &base,
        judged,
        db: &db,
        out: &out,
    };
    if name == ScenarioName::Capacity {
        for (api, threads) in runner.settings() {
            let point = runner.search(&api, threads, &mut file, &mut failed).await?;
            file.capacities.push(point);
        }
    } else {
        for &rate in SWEEP_RATES {
            for (api, threads) in sweep_settings(&base) {
                let at = Settings {
                    threads,
                    held: base.thread_hold_ms,
                };
                let (step, _) = runner
                    .step(&api, at, f64::from(rate), "", &mut file, &mut failed)
                    .await?;
                file.sweep.push(step);
            }
        }
    }
    drop(db);
    std::fs::write(out.join("scenario.json"), serde_json::to_vec_pretty(&file)?)?;
    let mut table = lab_report::scenario::capacity_table::table(&file);
    for f in failed {
        table.notes.insert(0, Note::CheckFailed(f));
    }
    table.conditions = super::conditions::conditions();
    std::fs::write(out.join("summary.md"), super::render_markdown(&table))?;
    std::fs::write(out.join("scenario.html"), super::render_html(&table))?;
    write_charts(&table, &out)?;
    Ok((table, out))
}

/// Each chart of the page also as an SVG file of its own beside it (named from its title), for
/// documents that embed a chart without the page.
pub fn write_charts(table: &ScenarioTable, out: &Path) -> Result<()> {
    for c in &table.charts {
        let name: String = c
            .title
            .to_lowercase()
            .split(|ch: char| !ch.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join("-");
        let path = out.join(format!("{name}.svg"));
        std::fs::write(&path, &c.svg).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// blocking-api at each thread count of the sweep, reactive-api once, per rate.
fn sweep_settings(base: &LabArgs) -> Vec<(String, Option<u32>)> {
    let mut out = Vec::new();
    for api in &base.harness.apis {
        if lab_results::ApiKind::of(api).is_some_and(lab_results::ApiKind::has_thread_pool) {
            out.extend(THREAD_COUNTS.iter().map(|t| (api.clone(), Some(*t))));
        } else {
            out.push((api.clone(), None));
        }
    }
    out
}

/// blocking-api's pool for one step: a fixed count, or (with `auto`) the hold time it is sized by.
#[derive(Debug, Clone, Copy)]
struct Settings {
    threads: Option<u32>,
    held: Option<f64>,
}

struct Runner<'a> {
    base: &'a LabArgs,
    judged: ScenarioJudging,
    db: &'a Database,
    out: &'a Path,
}

impl Runner<'_> {
    /// Each API once; blocking-api with the thread count given (`auto` resolves per step).
    fn settings(&self) -> Vec<(String, Option<u32>)> {
        self.base
            .harness
            .apis
            .iter()
            .map(|api| {
                let threads = match self.base.blocking_threads {
                    BlockingThreads::Fixed(n)
                        if lab_results::ApiKind::of(api)
                            .is_some_and(lab_results::ApiKind::has_thread_pool) =>
                    {
                        Some(n)
                    }
                    _ => None,
                };
                (api.clone(), threads)
            })
            .collect()
    }

    async fn search(
        &self,
        api: &str,
        threads: Option<u32>,
        file: &mut CapacityFile,
        failed: &mut Vec<String>,
    ) -> Result<CapacityPoint> {
        let resolution = self
            .judged
            .resolution
            .map_or(DEFAULT_RESOLUTION, Resolution::Absolute);
        let mut search = Search::new(START_RPS, resolution, MAX_RPS);
        let mut steps: Vec<StepPoint> = Vec::new();
        // `--blocking-threads auto`: each step's pool sized by the hold time the last met step
        // measured in this pod (the critical path until one has), not by the dependencies alone.
        let mut held = self.base.thread_hold_ms;
        while let Some(rate) = search.next() {
            let at = Settings { threads, held };
            let (mut step, mut outcome) = self.step(api, at, rate, "", file, failed).await?;
            if worth_measuring_again(&step) {
                // A miss no measured resource explains, one on a burst of slow commits, or a run
                // the rig was flagged in is measured once more before it counts: the second run
                // decides, and the first stays in the table with what it showed.
                steps.push(step);
                (step, outcome) = self.step(api, at, rate, AGAIN, file, failed).await?;
            }
            if outcome == Step::Met && self.base.blocking_threads == BlockingThreads::Auto {
                held = step.thread_hold_ms.or(held);
            }
            search.record(rate, outcome);
            if outcome == Step::Met && step.harness_bound.is_some() {
                // Met, but the rig was at its limit: nothing can be said above this rate.
                search.record(rate, Step::HarnessBound);
            }
            steps.push(step);
        }
        let found = search.found();
        // The run that decided the first failing rate: its last (`CapacityPoint::deciding_step`).
        let at_first_failing = found
            .first_failing
            .and_then(|f| steps.iter().rfind(|s| s.rate_rps == f));
        let evidence = at_first_failing.and_then(|s| s.cause.clone()).or_else(|| {
            at_first_failing
                .filter(|s| s.harness_bound.is_some())
                .map(|s| Cause {
                    stopped_by: StoppedBy::Harness,
                    measured: None,
                    threshold: None,
                    unit: String::new(),
                    evidence: format!(
                        "harness-bound: {}",
                        s.harness_bound.clone().unwrap_or_default()
                    ),
                })
        });
        Ok(CapacityPoint {
            api: api.to_owned(),
            blocking_threads: threads.or_else(|| steps.first().and_then(|s| s.blocking_threads)),
            allocator: steps.first().and_then(|s| s.allocator.clone()),
            capacity_rps: found.capacity,
            resolution_rps: resolution.width_at(found.capacity.unwrap_or(0.0)),
            first_failing_rps: found.first_failing,
            lowest_missed_rps: found.lowest_missed,
            resolution: Some(resolution.describe()),
            stopped_by: if found.harness_bound {
                StoppedBy::Harness
            } else {
                evidence.as_ref().map_or(StoppedBy::None, |c| c.stopped_by)
            },
            evidence,
            steps,
            superseded: None,
        })
    }

    /// One lab run of `api` at `rate` (its folder's name ends in `suffix`); its point, and
    /// whether it met the objective.
    async fn step(
        &self,
        api: &str,
        Settings { threads, held }: Settings,
        rate: f64,
        suffix: &str,
        file: &mut CapacityFile,
        failed: &mut Vec<String>,
    ) -> Result<(StepPoint, Step)> {
        let mut args = self.base.clone();
        args.harness.apis = vec![api.to_owned()];
        args.load.profile = hold_profile(rate, self.base.latency.critical_path_ms());
        if let Some(t) = threads {
            args.blocking_threads = BlockingThreads::Fixed(t);
        }
        args.thread_hold_ms = held;
        let shared = self.db.shared(args.harness.db_via);
        let slug = step_slug(api, threads, rate, suffix);
        args.harness.out = Some(self.out.join(&slug));
        eprintln!("scenario {}: {slug}", file.scenario);
        let (runs, vout) = crate::lab::lab(args, Some(shared))
            .await
            .with_context(|| format!("scenario {}, step {slug}", file.scenario))?;
        lab_report::write_report_with_slo(&runs, &vout, self.judged.slo.as_ref())?;
        let r = runs.first().context("a lab run with no results")?;
        let missed = lab_report::slo_missed(&runs, self.judged.slo.as_ref());
        if file.objective.is_empty() {
            file.objective = objective_text(self.judged.slo, r);
        }
        if file.limits.is_none() {
            file.limits = Some(r.config.limits.clone());
        }
        points::add_cell_settings(&mut file.cell_settings, r);
        if !r.invariants_hold() || r.money.as_ref().is_some_and(|m| !m.balanced()) {
            failed.push(format!("{slug}: an end-of-run check or the money failed"));
        }
        let mut point = step_point(r, rate, missed.is_empty());
        point.probe_ms = probe().await;
        Ok((point, outcome(missed.is_empty(), r)))
    }
}

/// A step settles at its rate for this many critical paths, and [`SETTLE_EXTRA_S`] more, before
/// its plateau is judged: with a 22 s critical path the orders in flight rise for 22 s after the
/// ramp (Little's law), and a plateau judged before that is judged on a growing queue. And a
/// fresh process's first completions come in one wave: in 0.125 CPU at 2.2 s blocking-api's
/// threads queued for the CPU in a storm of 6–8 s that began within a second of the ramp's end
/// (16 runnable on average, throttled in every period, refusing on loop lag) and then served the
/// same rate at 7–10 % CPU with none refused (measured 2026-12-07, runs of 1.25 paths + 2 s).
pub const SETTLE_PATHS: f64 = 2.0;
pub const SETTLE_EXTRA_S: f64 = 5.0;

/// `hold-R-S`: the step's profile at `rate` for a critical path of `path_ms` (S seconds of
/// settling: 6 s at 22 and 220 ms, 10 s at 2.2 s, 49 s at 22 s, so a 22 s step lasts 79 s at full
/// length against 30 s before).
pub fn hold_profile(rate: f64, path_ms: u64) -> String {
    let settle = (SETTLE_PATHS * path_ms as f64 / 1000.0 + SETTLE_EXTRA_S).ceil();
    format!("hold-{rate:.0}-{settle:.0}")
}

/// The end of the folder's name of a rate's second run.
pub const AGAIN: &str = "-again";

/// The folder of one step under the scenario's: `<api>-<rate>`, or `<api>-<threads>-threads-<rate>`
/// for a fixed thread count, then `suffix` ([`AGAIN`] for a rate's second run).
pub fn step_slug(api: &str, threads: Option<u32>, rate: f64, suffix: &str) -> String {
    match threads {
        Some(t) => format!("{api}-{t}-threads-{rate:.0}{suffix}"),
        None => format!("{api}-{rate:.0}{suffix}"),
    }
}

/// How a step counts in the search: met; a miss of the API's; or harness-bound, when the rig
/// was at its limit — unless the API died in the run (killed for its memory limit, or crashed):
/// that miss is the API's, whatever the generator's lateness once its connections failed.
pub fn outcome(met: bool, r: &RunResults) -> Step {
    if met {
        Step::Met
    } else if r.harness_bound.is_some() && r.api_exit.is_none() {
        Step::HarnessBound
    } else {
        Step::Missed
    }
}

/// A step whose figure may not be the API's own: it missed the objective with nothing at its
/// limit, or on a burst that came and went (`cause::is_transient`), or the rig was flagged
/// harness-bound in it (a generator late behind something else that ran on its core says nothing
/// of the API). A step whose API died is its own miss, whatever the flag.
pub fn worth_measuring_again(step: &StepPoint) -> bool {
    let transient = !step.met_objective
        && step.harness_bound.is_none()
        && step.cause.as_ref().is_some_and(cause::is_transient);
    transient || (step.harness_bound.is_some() && step.died.is_none())
}

/// The machine's speed on the API's CPU, now that the step's API has stopped
/// (`labkit::probe`); `None` where the lab reserved no CPU for the API.
async fn probe() -> Option<f64> {
    let cpus = crate::services::api_cpus()?;
    tokio::task::spawn_blocking(move || labkit::probe::fixed_work_ms(&cpus))
        .await
        .map_err(anyhow::Error::from)
        .and_then(|ms| ms)
        .inspect_err(|e| eprintln!("the machine's probe failed: {e:#}"))
        .ok()
}

fn objective_text(slo: Option<Slo>, r: &RunResults) -> String {
    slo.or_else(|| lab_report::slo::Slo::default_for(r))
        .map_or("none".to_owned(), |s| format!("{s} ({})", s.origin_text()))
}
