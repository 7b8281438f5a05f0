//! What each subcommand does, given its parsed arguments.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::cli::{Cli, Command, RunArgs};
use crate::exit_status::{INVARIANT_VIOLATED, SLO_MISSED};
use crate::gave_up::orders_after_give_up;
use crate::lab_args::{LabArgs, LabPlan};
use crate::run::{environment, measure, mock_latencies, new_run_id};
use crate::services::not_enforced;
use crate::{invariants, lab};
use lab_report::slo::Slo;
use lab_results::{RunConfig, RunResults};
use loadgen::assemble::RunMeta;
use loadgen::driver::{DriverConfig, Sharding};
use loadgen::profile::{BUILTIN, Profile};
use loadgen::sampler::SampleTargets;
use loadgen::start::StartGate;

/// Runs the command; the exit status says whether every invariant held.
pub async fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Profiles { duration_scale } => {
            for name in BUILTIN {
                println!("{}", Profile::parse(name, duration_scale)?.describe());
            }
            println!(
                "(ramp-N and closed-C-N accept any N and C; --duration-scale F multiplies every phase)"
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench(args) => crate::bench::command(*args).await,
        Command::Merge(args) => crate::merge::command(args).await,
        Command::Crossover(args) => crate::scenario::capacity::crossover::command(&args),
        Command::Predict(args) => crate::predict::command(&args),
        Command::Compare(args) => {
            let runs = args
                .files
                .iter()
                .map(RunResults::load)
                .collect::<Result<Vec<_>>>()?;
            if let Some((path, r)) = args.files.iter().zip(&runs).find(|(_, r)| r.is_partial()) {
                let shard = r.shard.as_ref().map(|s| format!("{}/{}", s.index, s.count));
                bail!(
                    "{} is shard {} of a run, not a run: `loadtest merge` its shards first",
                    path.display(),
                    shard.unwrap_or_default()
                );
            }
            let (paths, summary) = lab_report::write_report(&runs, &args.out)?;
            println!("{summary}");
            println!(
                "report: {}\nsummary: {}",
                paths.html.display(),
                paths.markdown.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Run(args) => {
            let results = run_one((*args).clone()).await?;
            results.save(&args.out)?;
            println!(
                "{}",
                lab_report::render_markdown(std::slice::from_ref(&results))
            );
            println!("results: {}", args.out.display());
            if let Some(s) = results.shard.as_ref().filter(|s| s.count > 1) {
                println!(
                    "shard {}/{} of run {}: `loadtest merge` its {} results files into the run",
                    s.index, s.count, results.run_id, s.count
                );
            }
            Ok(verdict(std::slice::from_ref(&results)))
        }
        Command::Scenarios => {
            print!("{}", crate::scenario::list());
            Ok(ExitCode::SUCCESS)
        }
        Command::Lab(args) => match args.plan() {
            LabPlan::Scenario { name, base, judged } => {
                let (table, out) = crate::scenario::run(name, base, judged).await?;
                println!("{}", crate::scenario::render_markdown(&table));
                println!("page: {}", out.join("scenario.html").display());
                Ok(if table.check_failed() {
                    ExitCode::from(INVARIANT_VIOLATED)
                } else {
                    ExitCode::SUCCESS
                })
            }
            LabPlan::Comparison {
                runs,
                slo,
                fail_on_slo,
            } => comparison(runs, slo, fail_on_slo).await,
        },
    }
}

/// `loadtest lab`: the runs, their report, and the exit status (invariants, then the objective
/// with `--fail-on-slo`).
async fn comparison(args: LabArgs, slo: Option<Slo>, fail_on_slo: bool) -> Result<ExitCode> {
    let (runs, out) = lab::lab(args, None).await?;
    let (paths, summary) = lab_report::write_report_with_slo(&runs, &out, slo.as_ref())?;
    println!("{summary}");
    println!("report: {}", paths.html.display());
    let status = verdict(&runs);
    let missed = lab_report::slo_missed(&runs, slo.as_ref());
    for line in &missed {
        eprintln!("{line}");
    }
    Ok(
        if fail_on_slo && !missed.is_empty() && status == ExitCode::SUCCESS {
            ExitCode::from(SLO_MISSED)
        } else {
            status
        },
    )
}

fn verdict(runs: &[RunResults]) -> ExitCode {
    let mut ok = true;
    for r in runs {
        for c in r.invariants.iter().filter(|c| c.ok == Some(false)) {
            eprintln!(
                "INVARIANT VIOLATED ({} #{}): {} — {}",
                r.label,
                r.repeat_index + 1,
                c.name,
                c.detail
            );
            ok = false;
        }
        if let Some(why) = &r.harness_bound {
            eprintln!("HARNESS-BOUND ({} #{}): {why}", r.label, r.repeat_index + 1);
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(INVARIANT_VIOLATED)
    }
}

async fn run_one(mut args: RunArgs) -> Result<RunResults> {
    args.load.max_in_flight = crate::run::fit_in_flight_cap(args.load.max_in_flight);
    let profile = Profile::parse(&args.load.profile, args.load.duration_scale)?;
    let sharding = sharding(&args).await?;
    let partial = !sharding.shard.is_whole();
    let label = args.label.clone().unwrap_or_else(|| {
        args.target
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .trim_end_matches('/')
            .to_owned()
    });
    let latency = match &args.deps_url {
        Some(url) => Some(
            mock_latencies(url)
                .await
                .context("reading mock-deps latencies")?,
        ),
        None => None,
    };
    let (dir, goose) = goose_reports(&args.out)?;
    let driver = driver_config(&args, &profile, sharding, &label, &dir, &goose);
    let meta = run_meta(&args, &driver, &profile, label, latency, goose);
    let metrics_url = format!("{}/metrics", driver.target);
    let targets = SampleTargets {
        api_pid: args.api_pid,
        metrics_url: Some(metrics_url.clone()),
        ..Default::default()
    };
    let (mut results, gave_up) = measure(driver, meta, targets).await?;
    if partial {
        // The database, the ledger and the money hold every shard's orders: only the merged run
        // can be checked against them (`loadtest merge --database-url --deps-url`).
        results.invariants = invariants::counts(&results);
        results.invariants.push(lab_results::InvariantCheck {
            name: "orders, ledger and money".to_owned(),
            ok: None,
            detail: "one shard of a run: checked by `loadtest merge` over all its shards"
                .to_owned(),
        });
        return Ok(results);
    }
    let (database_url, deps_url) = (args.database_url.as_deref(), args.deps_url.as_deref());
    results.invariants =
        invariants::all(&results, database_url, deps_url, Some(&metrics_url)).await;
    crate::money::count_into(&mut results, database_url, deps_url).await;
    results.after_give_up = Some(orders_after_give_up(database_url, &gave_up).await);
    Ok(results)
}

/// The folder of the results file `out` (created) and the names of goose's reports beside it.
fn goose_reports(out: &std::path::Path) -> Result<(std::path::PathBuf, Vec<String>)> {
    let stem = out
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("results")
        .to_owned();
    let dir = out
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let goose: Vec<String> = ["html", "json", "md"]
        .iter()
        .map(|e| format!("{stem}-goose.{e}"))
        .collect();
    std::fs::create_dir_all(if dir.as_os_str().is_empty() {
        std::path::Path::new(".")
    } else {
        &dir
    })?;
    Ok((dir, goose))
}

/// The generator's configuration for `loadtest run`.
fn driver_config(
    args: &RunArgs,
    profile: &Profile,
    sharding: Sharding,
    label: &str,
    dir: &std::path::Path,
    goose: &[String],
) -> DriverConfig {
    let load = &args.load;
    DriverConfig {
        target: args.target.trim_end_matches('/').to_owned(),
        profile: profile.clone(),
        request_timeout: Duration::from_secs_f64(load.request_timeout_s),
        max_in_flight: load.max_in_flight,
        run_id: args.sharding.run_id.clone().unwrap_or_else(new_run_id),
        sellers: load.sellers,
        duplicate_ratio: load.duplicate_ratio,
        goose_reports: goose
            .iter()
            .map(|g| dir.join(g).display().to_string())
            .collect(),
        progress: (!load.no_progress).then(|| label.to_owned()),
        retry: load
            .retry_for_s
            .map(loadgen::retry::RetryPolicy::giving_up_after),
        sharding,
        transport_pause: None,
    }
}

/// What the results of `loadtest run` say besides the measurements: a target the lab neither
/// started nor limits.
fn run_meta(
    args: &RunArgs,
    driver: &DriverConfig,
    profile: &Profile,
    label: String,
    latency: Option<lab_results::MockLatencies>,
    goose: Vec<String>,
) -> RunMeta {
    let load = &args.load;
    RunMeta {
        api: label.clone(),
        label,
        target_url: driver.target.clone(),
        run_id: driver.run_id.clone(),
        repeat_index: 0,
        repeats: 1,
        config: RunConfig {
            profile: profile.info(),
            mock_latency_ms: latency,
            injection: None,
            faults: None,
            api_settings: Default::default(),
            limits: not_enforced("`loadtest run` does not manage the target's limits"),
            tx_scope: "unknown".to_owned(),
            request_timeout_ms: (load.request_timeout_s * 1000.0) as u64,
            max_in_flight: load.max_in_flight,
            duplicate_ratio: load.duplicate_ratio,
            sellers: load.sellers,
            warmup_s: 0.0,
            shedding: None,
        },
        environment: environment("unknown"),
        goose_reports: goose,
        timeline: Vec::new(),
        keep_histograms: true,
    }
}

/// `--shard`, `--seed`, `--start-at` / `--wait-for-start` as the driver takes them; a shard of
/// several needs the run id its siblings use, and a synchronised start a target that answers.
async fn sharding(args: &RunArgs) -> Result<Sharding> {
    let o = &args.sharding;
    if !o.shard.is_whole() {
        if o.run_id.is_none() {
            bail!(
                "--shard {}: give every shard the same --run-id (and --seed, if any), so that \
                 together they send the keys of one run",
                o.shard
            );
        }
        if args.load.retry_for_s.is_some() {
            bail!("--retry-for-s with --shard: retrying clients' records cannot be merged yet");
        }
    }
    let start = match (o.start_at, o.wait_for_start) {
        (Some(at), _) => StartGate::At(at),
        (None, Some(addr)) => StartGate::Signal(addr),
        (None, None) => StartGate::Now,
    };
    if start != StartGate::Now {
        wait_for_target(&args.target).await?;
    }
    Ok(Sharding {
        shard: o.shard,
        seed: o.seed,
        start,
    })
}

/// How long a shard with a synchronised start waits for its target's `/health` (a Job's pods may
/// start before the API they load is up).
const TARGET_WAIT: Duration = Duration::from_secs(120);

/// Ready before the start: a target that never answers fails here, not at t = 0.
async fn wait_for_target(target: &str) -> Result<()> {
    let health = format!("{}/health", target.trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .no_proxy()
        .build()?;
    let deadline = std::time::Instant::now() + TARGET_WAIT;
    loop {
        let answer = client.get(&health).send().await;
        match answer.and_then(reqwest::Response::error_for_status) {
            Ok(_) => return Ok(()),
            Err(e) if std::time::Instant::now() > deadline => {
                return Err(e).with_context(|| {
                    format!("the target did not answer {health} within {TARGET_WAIT:?}")
                });
            }
            Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}
