//! `loadtest lab --scenario NAME`: the source experiments that are about resources other than
//! the execution model, run for both APIs side by side.
//!
//! - `remotecall` (experiment B): `closed-30-300`, pool 10, acquire timeout 5 s; seller and risk
//!   instant, payment 50 ms then 3000 ms; `DB_TX_SCOPE` short and request; both APIs → 8 runs.
//!   The point: with a connection held across a slow call, the pool runs dry in *both* models.
//! - `db-latency` (experiment D): the same open rate (200 orders/s: directly, well within a pool of
//!   10) with 0, 0.3, 0.6 and 6.5 ms added between the APIs and PostgreSQL by a TCP latency proxy.
//! - `slow-dependency`: the default profile with the payment mock slowed from 1000 to 5000 ms for
//!   30 s in the middle of the run.
//! - `faults` (money safety): both APIs at a constant rate with retrying clients, payment faults
//!   throughout, the API killed and restarted, PostgreSQL restarted; then one run per outage with
//!   plain clients: PostgreSQL frozen 20 s, 300 slow uploads, the payment gateway unreachable
//!   30 s, the broker's acknowledgements 7 s for 30 s with the outbox on, the API restarted as a
//!   platform does (`faults_plan::OUTAGES`). Every charge must end as one order or one void,
//!   every order's event in the stream, and through the rolling restart every request answered.
//! - `overload`: ramp-750 for both APIs with admission control off and on → 4 runs
//!   (`overload.rs`).
//! - `events`: two-phase vs after-commit vs outbox under a healthy, a slowed and a
//!   crashing setting, with NATS JetStream (`events/`, its runs of its own in `events/one_run.rs`).
//! - `batching` (experiment E): persist batch size × database RTT, both APIs, durable
//!   commits → 26 runs (`batching/`, which runs them itself: it measures the flush cost first and
//!   sets PostgreSQL's `commit_delay` for two of them).
//! - `capacity` and `threads`: each API's capacity found by search and what stopped it, and
//!   blocking-api's thread count swept against Little's law (`capacity/`, which runs them
//!   itself: the search picks each step's rate from the last).
//! - `soak`: each API for 30 minutes at a steady 75/s: what grows between an early minute and the
//!   last, and its tables at the end (`soak.rs`) → 2 runs.
//!
//! Each variant is an ordinary lab run (its own full report in a sub-folder); the scenario adds one
//! comparison table (`summary.md`, `scenario.html`) and its rows' figures (`scenario.json`, from
//! which the page's conclusion and chart are computed). PostgreSQL is started once for all variants,
//! except for a fault plan, which restarts it: then the lab starts its own.

mod batching;
pub mod capacity;
mod conclusions;
mod conditions;
pub mod events;
mod faults_plan;
mod findings;
mod overload;
mod points;
pub mod registry;
pub mod soak;
mod tables;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::lab_args::{Durability, LabArgs, SEED_LATENCIES, ScenarioJudging, TxScope};
use crate::services::Database;
use lab_results::faults::FaultPlan;
use lab_results::inject::Injection;
use lab_results::{MockLatencies, RunResults};

pub use lab_report::scenario::{ScenarioTable, render_html, render_markdown};
pub use tables::build as build_table;

pub use registry::{LabRuns, OwnRunner, Runner, ScenarioName};

/// `loadtest scenarios`: one line per scenario — its name, rough length and what it measures.
pub fn list() -> String {
    ScenarioName::ALL
        .iter()
        .map(|s| {
            format!(
                "{:<16} ≈ {:>2} min  {}\n",
                s.as_str(),
                s.rough_minutes(),
                s.description()
            )
        })
        .collect()
}

/// One lab run of a scenario.
#[derive(Debug, Clone)]
pub struct Variant {
    /// Folder name and row key, e.g. `blocking-api-request-pay3000`.
    pub slug: String,
    pub args: LabArgs,
}

/// The runs as the tables read them: each variant's slug, not its plan.
fn plain(done: &[(Variant, Vec<RunResults>)]) -> Vec<lab_report::scenario::VariantRuns<'_>> {
    done.iter()
        .map(|(v, runs)| (v.slug.as_str(), runs.as_slice()))
        .collect()
}

/// The lab runs a scenario is made of, derived from the user's lab arguments (which keep their
/// say over everything the scenario does not fix: duration scale, repeat, limits, database).
pub fn variants(kind: LabRuns, base: &LabArgs) -> Result<Vec<Variant>> {
    Ok(match kind {
        LabRuns::Remotecall => remotecall(base),
        LabRuns::DbLatency => db_latency(base),
        LabRuns::SlowDependency => {
            // Times as written; the lab multiplies them by --duration-scale, as it does the
            // user's own.
            let slowed_payment = Injection::parse("pay=5000@30+30", 1.0)?;
            vec![with(base, "both-apis".to_owned(), |a| {
                a.inject = Some(slowed_payment);
            })]
        }
        LabRuns::Faults => faults(base)?,
        LabRuns::Overload => overload::variants(base),
        LabRuns::Soak => soak(base),
    })
}

/// A variant named `slug`: the user's arguments with `set` applied.
fn with(base: &LabArgs, slug: String, set: impl FnOnce(&mut LabArgs)) -> Variant {
    let mut args = base.clone();
    set(&mut args);
    Variant { slug, args }
}

/// Experiment B: payment 50 and 3000 ms × a transaction per request or per statement × API.
fn remotecall(base: &LabArgs) -> Vec<Variant> {
    let mut out = Vec::new();
    for pay in [50u64, 3000] {
        for scope in [TxScope::Request, TxScope::Short] {
            for api in &base.harness.apis {
                let slug = format!("{api}-{}-pay{pay}", scope.as_str());
                out.push(with(base, slug, |a| {
                    a.harness.apis = vec![api.clone()];
                    a.load.profile = "closed-30-300".to_owned();
                    a.latency = MockLatencies {
                        seller: 0,
                        risk: 0,
                        payment: pay,
                    };
                    a.harness.db_pool_size = 10;
                    a.db_pool_timeout_ms = 5000;
                    a.tx_scope = scope;
                    a.warmup_s = 2.0;
                }));
            }
        }
    }
    out
}

/// Experiment D: each added database RTT × API.
fn db_latency(base: &LabArgs) -> Vec<Variant> {
    let mut out = Vec::new();
    for rtt in [0.0, 0.3, 0.6, 6.5] {
        for api in &base.harness.apis {
            out.push(with(base, format!("{api}-rtt{rtt}"), |a| {
                a.harness.apis = vec![api.clone()];
                a.load.profile = "ramp-200".to_owned();
                a.latency = MockLatencies {
                    seller: 5,
                    risk: 5,
                    payment: 5,
                };
                a.harness.db_pool_size = 10;
                a.harness.db_rtt_ms = rtt;
            }));
        }
    }
    out
}

/// Money through faults: retrying clients through the whole plan, then plain clients through
/// each outage.
fn faults(base: &LabArgs) -> Result<Vec<Variant>> {
    // Times as written; the lab multiplies them by --duration-scale.
    let plan = FaultPlan::parse(faults_plan::PLAN, 1.0)?;
    // Every faults run: the constant rate, the seed's latencies, an attempt that outlives
    // neither a hung payment (DEPS_TIMEOUT_MS) nor the API's request deadline (30 s leaves both
    // to the API), quick recovery, a durable PostgreSQL.
    let faults_run = |a: &mut LabArgs, retry_for_s: Option<f64>, faults: FaultPlan| {
        a.load.profile = format!("constant-{}-{}", faults_plan::RATE, faults_plan::DURATION_S);
        a.latency = SEED_LATENCIES;
        a.load.retry_for_s = retry_for_s;
        a.load.request_timeout_s = 30.0;
        a.deps_timeout_ms = 5000;
        a.lease_ms = 15_000;
        a.reconcile_interval_ms = 2000;
        a.harness.db_durability = Durability::On;
        a.faults = Some(faults);
    };
    // Clients that retry, through the payment faults, the kill and the restart.
    let mut out = vec![with(base, "both-apis".to_owned(), |a| {
        faults_run(a, Some(60.0), plan)
    })];
    // Plain clients: each request's own wait is the measure. The deadline is the APIs'
    // REQUEST_DEADLINE_MS.
    for (slug, spec, _) in faults_plan::OUTAGES {
        let outage = FaultPlan::parse(spec, 1.0)?;
        out.push(with(base, slug.to_owned(), |a| faults_run(a, None, outage)));
    }
    Ok(out)
}

/// Each API alone at the soak's steady rate, durable.
fn soak(base: &LabArgs) -> Vec<Variant> {
    base.harness
        .apis
        .iter()
        .map(|api| {
            with(base, api.clone(), |a| {
                a.harness.apis = vec![api.clone()];
                a.load.profile = format!("constant-{}-{}", soak::RATE, soak::DURATION_S);
                a.latency = SEED_LATENCIES;
                a.harness.db_durability = Durability::On;
            })
        })
        .collect()
}

/// Runs every variant, writes each one's report and the scenario's table; returns the folder.
pub async fn run(
    name: ScenarioName,
    base: LabArgs,
    judged: ScenarioJudging,
) -> Result<(ScenarioTable, PathBuf)> {
    // Before the database the runs share is started: it inherits the harness's CPUs.
    if base.targets.is_empty()
        && let Err(why) = crate::services::place_harness(!base.harness.no_pin)?
    {
        eprintln!("scenario {name}: {why}");
    }
    match registry::runner(name) {
        Runner::LabRuns(kind) => run_lab_runs(kind, base).await,
        // Its own runs (closed model, NATS, crash), not lab runs: see `events/`.
        Runner::Own(OwnRunner::Events) => events::run(base).await,
        Runner::Own(OwnRunner::Batching) => batching::run(base).await,
        // Adaptive (each step depends on the last), so not a list of variants.
        Runner::Own(OwnRunner::Capacity | OwnRunner::Threads) => {
            capacity::run(name, base, judged).await
        }
    }
}

/// A scenario made of lab runs: its variants one after the other, then its table, rows and page.
async fn run_lab_runs(kind: LabRuns, base: LabArgs) -> Result<(ScenarioTable, PathBuf)> {
    let variants = variants(kind, &base)?;
    let out = output_folder(kind.name(), &base)?;
    // One database for every variant (the lab empties its tables before each run) — unless a
    // fault plan restarts it: the lab then starts its own, with the settings the plan needs.
    let shared = variants.iter().all(|v| v.args.faults.is_none());
    let db = if shared {
        Some(shared_database(&base).await?)
    } else {
        None
    };
    let mut done: Vec<(Variant, Vec<RunResults>)> = Vec::new();
    // The soak's tables at the end of each run, before the next one empties them.
    let mut sizes = Vec::new();
    for (i, variant) in variants.into_iter().enumerate() {
        eprintln!("scenario {kind}: run {} — {}", i + 1, variant.slug);
        let runs = run_variant(kind, &variant, db.as_ref(), &out).await?;
        if kind == LabRuns::Soak
            && let Some(db) = &db
        {
            sizes.push((variant.slug.clone(), soak::table_sizes(&db.url).await?));
        }
        done.push((variant, runs));
    }
    drop(db);
    let mut table = tables::build(kind, &done, &sizes);
    if let Some(rows) = points::rows(kind, &done) {
        std::fs::write(out.join("scenario.json"), serde_json::to_vec_pretty(&rows)?)?;
        findings::apply(&mut table, kind, &rows)?;
    }
    table.conditions = conditions::conditions();
    std::fs::write(out.join("summary.md"), render_markdown(&table))?;
    std::fs::write(out.join("scenario.html"), render_html(&table))?;
    Ok((table, out))
}

/// One variant's lab run, in its sub-folder of `out`, on the shared database when there is one;
/// its full report written.
async fn run_variant(
    kind: LabRuns,
    variant: &Variant,
    db: Option<&Database>,
    out: &Path,
) -> Result<Vec<RunResults>> {
    let mut args = variant.args.clone();
    args.harness.out = Some(out.join(&variant.slug));
    let shared = db.map(|db| db.shared(args.harness.db_via));
    let (runs, vout) = crate::lab::lab(args, shared)
        .await
        .with_context(|| format!("scenario {kind}, variant {}", variant.slug))?;
    lab_report::write_report(&runs, &vout)?;
    Ok(runs)
}

/// The scenario's folder, created: `--out`, else `reports/<UTC time>-scenario-<name>`.
fn output_folder(name: ScenarioName, base: &LabArgs) -> Result<PathBuf> {
    let out = base.harness.out.clone().unwrap_or_else(|| {
        Path::new("reports").join(format!(
            "{}-scenario-{name}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ))
    });
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    Ok(out)
}

/// The database the scenario's runs share (`--database-url`, else an ephemeral cluster), with
/// `--db-durability`; the lab empties its tables before each run.
async fn shared_database(base: &LabArgs) -> Result<Database> {
    let url = base.harness.database_url.clone();
    let harness = base.harness.clone();
    let open = move || Database::open_for(url.as_deref(), &harness);
    tokio::task::spawn_blocking(open).await?
}
