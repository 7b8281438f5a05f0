//! `--scenario capacity` and `--scenario threads`: each API's capacity found by search, and
//! blocking-api's thread count swept, so the verdict does not rest on a thread count we chose.
//!
//! - `capacity`: for each API (and, for blocking-api, each `--blocking-threads`), a search over
//!   open-model rates (`capacity_search`): each step is a full lab run of `hold-R` (a 10 s ramp
//!   to R, 20 s at R) with its money check, judged against the objective (`--slo`, default the
//!   critical path × 1.15, 2xx ≥ 99 %) over the plateau. The result is the highest rate that met
//!   it, ± the search's resolution, and what stopped the API at the first rate that did not
//!   (`capacity_cause`), or "above X/s, harness-bound" when the rig was the limit.
//! - `threads`: blocking-api at `BLOCKING_THREADS` 200 … 4000 at 300/s and 750/s, reactive-api
//!   beside it at the same rates: orders/s, 2xx share, p99, CPU and RSS per thread; the smallest
//!   thread count that met the objective at each rate against Little's law (rate × critical path).
//!
//! A step that loses money fails the scenario (exit 3), as any lab run does.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::lab_args::{BlockingThreads, LabArgs};
use crate::services::Database;
use lab_results::RunResults;
use lab_results::numbers::MIB;

use super::capacity_cause::{Cause, StoppedBy, stopped_by};
use super::capacity_search::{Search, Step};
use super::render::ScenarioTable;

/// The search's first rate, its resolution and its top rate, orders/s.
pub const START_RPS: f64 = 100.0;
pub const RESOLUTION_RPS: f64 = 25.0;
pub const MAX_RPS: f64 = 1600.0;
/// `threads`: the thread counts and the rates of the sweep.
pub const THREAD_COUNTS: &[u32] = &[200, 500, 1000, 2000, 4000];
pub const SWEEP_RATES: &[u32] = &[300, 750];

/// One lab run of either scenario, as `scenario.json` holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepPoint {
    pub api: String,
    /// `BLOCKING_THREADS` (blocking-api only).
    pub blocking_threads: Option<u32>,
    pub allocator: Option<String>,
    pub rate_rps: f64,
    pub met_objective: bool,
    pub harness_bound: Option<String>,
    /// Over the plateau: fresh orders per second, 2xx share of the arrivals, p99 of every answer.
    pub orders_rps: f64,
    pub ok_share_pct: f64,
    pub p99_ms: f64,
    pub peak_rss_mib: Option<f64>,
    pub peak_threads: Option<u64>,
    /// RSS above the idle process (the run's first sample) per thread above its first count.
    pub rss_per_thread_kib: Option<f64>,
    pub cpu_s_per_1000: Option<f64>,
    pub money_balanced: Option<bool>,
    /// How the API died mid-run, if it did.
    pub died: Option<String>,
    /// What stopped it, for a step that missed the objective.
    pub cause: Option<Cause>,
}

/// One API (and thread count) searched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityPoint {
    pub api: String,
    pub blocking_threads: Option<u32>,
    pub allocator: Option<String>,
    /// The highest rate that met the objective (`None`: not even the lowest tried).
    pub capacity_rps: Option<f64>,
    pub resolution_rps: f64,
    /// The first rate that did not, and what stopped the API there.
    pub first_failing_rps: Option<f64>,
    pub stopped_by: StoppedBy,
    pub evidence: Option<Cause>,
    pub steps: Vec<StepPoint>,
}

/// What the scenario writes to `scenario.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityFile {
    pub scenario: String,
    pub objective: String,
    pub critical_path_ms: u64,
    pub capacities: Vec<CapacityPoint>,
    /// `threads`: every run of the sweep.
    pub sweep: Vec<StepPoint>,
}

/// Runs `capacity` or `threads` in full; returns the table and the folder.
pub async fn run(name: &str, base: LabArgs) -> Result<(ScenarioTable, PathBuf)> {
    let out = base.out.clone().unwrap_or_else(|| {
        Path::new("reports").join(format!(
            "{}-scenario-{name}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ))
    });
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let url = base.database_url.clone();
    let durability = base.db_durability;
    let db = tokio::task::spawn_blocking(move || Database::open_with(url.as_deref(), durability))
        .await??;
    let mut file = CapacityFile {
        scenario: name.to_owned(),
        objective: String::new(),
        critical_path_ms: base.latency.critical_path_ms(),
        capacities: Vec::new(),
        sweep: Vec::new(),
    };
    let mut failed = Vec::new();
    let runner = Runner {
        base: &base,
        db: &db,
        out: &out,
    };
    if name == "capacity" {
        for (api, threads) in runner.settings() {
            let point = runner.search(&api, threads, &mut file, &mut failed).await?;
            file.capacities.push(point);
        }
    } else {
        for &rate in SWEEP_RATES {
            for (api, threads) in sweep_settings(&base) {
                let (step, _) = runner
                    .step(&api, threads, f64::from(rate), &mut file, &mut failed)
                    .await?;
                file.sweep.push(step);
            }
        }
    }
    drop(db);
    std::fs::write(out.join("scenario.json"), serde_json::to_vec_pretty(&file)?)?;
    let mut table = super::capacity_table::table(&file);
    for f in failed {
        table.notes.insert(0, format!("CHECK FAILED: {f}"));
    }
    table.conditions = super::page::conditions();
    std::fs::write(out.join("summary.md"), super::render_markdown(&table))?;
    std::fs::write(out.join("scenario.html"), super::render_html(&table))?;
    Ok((table, out))
}

/// blocking-api at each thread count of the sweep, reactive-api once, per rate.
fn sweep_settings(base: &LabArgs) -> Vec<(String, Option<u32>)> {
    let mut out = Vec::new();
    for api in &base.apis {
        if api.starts_with("blocking") {
            out.extend(THREAD_COUNTS.iter().map(|t| (api.clone(), Some(*t))));
        } else {
            out.push((api.clone(), None));
        }
    }
    out
}

struct Runner<'a> {
    base: &'a LabArgs,
    db: &'a Database,
    out: &'a Path,
}

impl Runner<'_> {
    /// Each API once; blocking-api with the thread count given (`auto` resolves per step).
    fn settings(&self) -> Vec<(String, Option<u32>)> {
        self.base
            .apis
            .iter()
            .map(|api| {
                let threads = match self.base.blocking_threads {
                    BlockingThreads::Fixed(n) if api.starts_with("blocking") => Some(n),
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
        let mut search = Search::new(START_RPS, RESOLUTION_RPS, MAX_RPS);
        let mut steps: Vec<StepPoint> = Vec::new();
        while let Some(rate) = search.next() {
            let (step, outcome) = self.step(api, threads, rate, file, failed).await?;
            search.record(rate, outcome);
            if outcome == Step::Met && step.harness_bound.is_some() {
                // Met, but the rig was at its limit: nothing can be said above this rate.
                search.record(rate, Step::HarnessBound);
            }
            steps.push(step);
        }
        let found = search.found();
        let at_first_failing = found
            .first_failing
            .and_then(|f| steps.iter().find(|s| s.rate_rps == f));
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
            resolution_rps: RESOLUTION_RPS,
            first_failing_rps: found.first_failing,
            stopped_by: if found.harness_bound {
                StoppedBy::Harness
            } else {
                evidence.as_ref().map_or(StoppedBy::None, |c| c.stopped_by)
            },
            evidence,
            steps,
        })
    }

    /// One lab run of `api` at `rate`; its point, and whether it met the objective.
    async fn step(
        &self,
        api: &str,
        threads: Option<u32>,
        rate: f64,
        file: &mut CapacityFile,
        failed: &mut Vec<String>,
    ) -> Result<(StepPoint, Step)> {
        let mut args = self.base.clone();
        args.scenario = None;
        args.apis = vec![api.to_owned()];
        args.load.profile = format!("hold-{rate:.0}");
        if let Some(t) = threads {
            args.blocking_threads = BlockingThreads::Fixed(t);
        }
        args.database_url = Some(self.db.url.clone());
        args.lab_owned_database = self.db.is_ephemeral();
        let slug = match threads {
            Some(t) => format!("{api}-{t}-threads-{rate:.0}"),
            None => format!("{api}-{rate:.0}"),
        };
        args.out = Some(self.out.join(&slug));
        eprintln!("scenario {}: {slug}", file.scenario);
        let (runs, vout) = crate::lab::lab(args)
            .await
            .with_context(|| format!("scenario {}, step {slug}", file.scenario))?;
        lab_report::write_report_with_slo(&runs, &vout, self.base.slo.as_ref())?;
        let r = runs.first().context("a lab run with no results")?;
        let missed = lab_report::slo_missed(&runs, self.base.slo.as_ref());
        if file.objective.is_empty() {
            file.objective = objective_text(self.base, r);
        }
        if !r.invariants_hold() || r.money.as_ref().is_some_and(|m| !m.balanced()) {
            failed.push(format!("{slug}: an end-of-run check or the money failed"));
        }
        let point = step_point(r, rate, missed.is_empty());
        let outcome = if missed.is_empty() {
            Step::Met
        } else if r.harness_bound.is_some() {
            Step::HarnessBound
        } else {
            Step::Missed
        };
        Ok((point, outcome))
    }
}

fn objective_text(base: &LabArgs, r: &RunResults) -> String {
    base.slo
        .or_else(|| lab_report::slo::Slo::default_for(r))
        .map_or("none".to_owned(), |s| format!("{s} ({})", s.origin_text()))
}

/// The figures of one run, over its plateau.
pub fn step_point(r: &RunResults, rate: f64, met: bool) -> StepPoint {
    let s = r.plateau.as_ref().unwrap_or(&r.summary);
    let ok_share_pct = if s.offered > 0 {
        100.0 * (s.ok + s.replayed) as f64 / s.offered as f64
    } else {
        0.0
    };
    let orders = r.summary.ok.max(1) as f64;
    StepPoint {
        api: r.api.clone(),
        blocking_threads: r
            .config
            .api_settings
            .get("BLOCKING_THREADS")
            .and_then(|t| t.parse().ok()),
        allocator: r.config.api_settings.get("ALLOCATOR").cloned(),
        rate_rps: rate,
        met_objective: met,
        harness_bound: r.harness_bound.clone(),
        orders_rps: s.ok_throughput_rps,
        ok_share_pct,
        p99_ms: s.latency_ms.p99,
        peak_rss_mib: r.summary.peak_rss_bytes.map(|b| b as f64 / MIB),
        peak_threads: r.summary.peak_threads,
        rss_per_thread_kib: rss_per_thread_kib(r),
        cpu_s_per_1000: r.summary.api_cpu_seconds.map(|c| 1000.0 * c / orders),
        money_balanced: r.money.as_ref().map(|m| m.balanced()),
        died: r.api_exit.as_ref().map(|e| e.describe()),
        cause: (!met).then(|| stopped_by(r)),
    }
}

/// (RSS at the peak thread count − RSS of the first sample) ÷ (peak threads − first threads), KiB:
/// what each thread the load added cost. `None` when the load added fewer than 10 threads.
pub fn rss_per_thread_kib(r: &RunResults) -> Option<f64> {
    let procs: Vec<_> = r.seconds.iter().filter_map(|s| s.api_process).collect();
    let first = procs.first()?;
    let peak = procs.iter().max_by_key(|p| (p.threads, p.rss_bytes))?;
    let threads = peak.threads.checked_sub(first.threads)?;
    (threads >= 10)
        .then(|| (peak.rss_bytes as f64 - first.rss_bytes as f64) / threads as f64 / 1024.0)
}
