//! `loadtest merge`: the results files of one run's shards (`loadtest run --shard I/N`) added up
//! into the run's own results file, summary.md and report.html.
//!
//! Nothing is averaged. Each shard's file carries its histograms (per second, per phase, for the
//! run; per outcome; lateness), and the merged run is rebuilt from their sums (`Histogram::add`)
//! by the same assembly as a single run, so every percentile is one of the union of the values.
//! Seconds are aligned by absolute time: a shard whose schedule started `k` whole seconds after
//! the earliest one lands on seconds `t + k` (with `--start-at` every shard has the same origin).
//!
//! Checked before anything is written: the files are shards of one run (same run id, seed,
//! profile, API, N) and every index 0…N−1 is there once; and, as invariants of the merged run,
//! that each shard offered exactly its arrivals and the shards together every arrival of the
//! schedule once (counts and fingerprints, see `loadgen::shard`).
//!
//! The per-second samples of the API (`/proc`, `/metrics`) and of mock-deps, PostgreSQL and the
//! machine are the same process seen by every shard: the first shard's that has them is kept.
//! The generator's CPU is the sum of the shards' (on one machine that is the harness's share;
//! across machines it overstates any one machine's). A shard that fell behind — its own
//! harness-bound verdict, or a start later than the lateness limit — makes the merged run
//! harness-bound, and the report shows each shard's start and lateness.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use lab_results::{InvariantCheck, RunResults, SecondSample, ShardRecord};
use loadgen::assemble::{LATE_P99_MS, RunMeta, assemble};
use loadgen::driver::DriverOutput;
use loadgen::profile::Profile;
use loadgen::recorder::Recorder;
use loadgen::sampler::SampleRow;
use loadgen::shard::{Shard, Tally};

use crate::cli::MergeArgs;

/// Writes the merged run into `args.out`; exit status 3 when an invariant failed.
pub async fn command(args: MergeArgs) -> Result<ExitCode> {
    let shards = args
        .files
        .iter()
        .map(|f| RunResults::load(f).map(|r| (f.clone(), r)))
        .collect::<Result<Vec<_>>>()?;
    let mut run = merge(shards)?;
    let metrics = format!("{}/metrics", run.target_url);
    let db = crate::invariants::database(&run, args.database_url.as_deref(), Some(&metrics)).await;
    run.invariants.extend(db);
    run.invariants
        .push(crate::invariants::ledger(args.deps_url.as_deref()).await);
    let (database_url, deps_url) = (args.database_url.as_deref(), args.deps_url.as_deref());
    crate::money::count_into(&mut run, database_url, deps_url).await;
    let path = results_path(&args.out);
    run.save(&path)?;
    let (paths, summary) = lab_report::write_report(std::slice::from_ref(&run), &args.out)?;
    println!("{summary}");
    println!(
        "results: {}\nreport: {}",
        path.display(),
        paths.html.display()
    );
    let mut ok = true;
    for c in run.invariants.iter().filter(|c| c.ok == Some(false)) {
        eprintln!("INVARIANT VIOLATED: {} — {}", c.name, c.detail);
        ok = false;
    }
    if let Some(why) = &run.harness_bound {
        eprintln!("HARNESS-BOUND: {why}");
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit_status::INVARIANT_VIOLATED)
    })
}

/// The run the shards add up to, with the counting and schedule invariants (no database checks).
pub fn merge(mut shards: Vec<(PathBuf, RunResults)>) -> Result<RunResults> {
    shards.sort_by_key(|(_, r)| r.shard.as_ref().map_or(u32::MAX, |s| s.index));
    let records = same_run(&shards)?;
    let first = &shards[0].1;
    let info = &first.config.profile;
    let profile = Profile::parse(&info.name, info.duration_scale)?;
    let origin = records
        .iter()
        .map(|s| s.intended_start_unix_ms)
        .fold(f64::INFINITY, f64::min);
    let shift = |s: &ShardRecord| ((s.intended_start_unix_ms - origin) / 1000.0).round() as usize;
    let mut recorder = Recorder::new(profile.phases.len());
    for ((path, r), s) in shards.iter().zip(&records) {
        let set = r.histograms.as_ref().with_context(|| {
            format!(
                "{} has no histograms (written by `loadtest run`)",
                path.display()
            )
        })?;
        let rec = loadgen::histograms::decode(set)
            .with_context(|| format!("reading the histograms of {}", path.display()))?;
        recorder.add(&rec, shift(s));
    }
    let seconds = recorder.seconds.len();
    let rows: Vec<SampleRow> = (0..seconds)
        .map(|t| {
            let at: Vec<&SecondSample> = shards
                .iter()
                .zip(&records)
                .filter_map(|((_, r), s)| r.seconds.get(t.checked_sub(shift(s))?))
                .collect();
            row(&at)
        })
        .collect();
    let tally = records.iter().fold(Tally::default(), |t, s| {
        t.plus(Tally {
            arrivals: s.offered_arrivals,
            fingerprint: s.arrival_fingerprint,
        })
    });
    let out = DriverOutput {
        recorder,
        phases_run: shards
            .iter()
            .map(|(_, r)| r.config.profile.phases.len())
            .max()
            .unwrap_or(0),
        started_at: chrono::DateTime::from_timestamp_millis(origin as i64)
            .context("the shards' start is not a valid time")?,
        elapsed_s: shards
            .iter()
            .zip(&records)
            .filter_map(|((_, r), s)| Some(r.elapsed_s? + shift(s) as f64))
            .reduce(f64::max),
        last_answer_s: None, // not in a results file, and assembly does not read it
        retries: None,
        start: None,
        tally,
        shard: Shard::WHOLE,
        seed: first.shard.as_ref().map_or(0, |s| s.seed),
    };
    let mut config = first.config.clone();
    config.profile = profile.info();
    let meta = RunMeta {
        api: first.api.clone(),
        label: first.label.clone(),
        target_url: first.target_url.clone(),
        run_id: first.run_id.clone(),
        repeat_index: first.repeat_index,
        repeats: first.repeats,
        config,
        environment: first.environment.clone(),
        goose_reports: Vec::new(),
        timeline: records
            .iter()
            .map(|s| lab_results::TimelineMark {
                t: shift(s) as f64,
                label: format!(
                    "shard {}/{} starts ({:.0} ms late)",
                    s.index,
                    s.count,
                    s.start_lateness_ms()
                ),
            })
            .collect(),
        keep_histograms: true,
    };
    let mut run = assemble(meta, &profile, &out, &rows);
    run.invariants = crate::invariants::counts(&run);
    run.invariants
        .extend(schedule_checks(&profile, &records, tally));
    run.harness_bound = harness_bound(run.harness_bound.take(), &records);
    run.shard = None;
    run.shards = records;
    Ok(run)
}

/// The shards' records, each with its file and verdict, after checking they make one run.
fn same_run(shards: &[(PathBuf, RunResults)]) -> Result<Vec<ShardRecord>> {
    let Some((_, first)) = shards.first() else {
        bail!("no results files given");
    };
    let mut records = Vec::new();
    for (path, r) in shards {
        let shown = path.display();
        let Some(s) = &r.shard else {
            bail!("{shown} is not a shard's results (written by `loadtest run --shard I/N`)");
        };
        let key = |r: &RunResults| {
            let p = &r.config.profile;
            let seed = r.shard.as_ref().map(|s| (s.seed, s.count));
            (
                r.run_id.clone(),
                r.api.clone(),
                p.name.clone(),
                p.duration_scale,
                seed,
            )
        };
        if key(r) != key(first) {
            bail!(
                "{shown} is not a shard of the same run as {}: run id, API, profile, \
                 --duration-scale, seed and N must agree ({:?} vs {:?})",
                shards[0].0.display(),
                key(r),
                key(first)
            );
        }
        let mut s = s.clone();
        s.file = Some(shown.to_string());
        s.harness_bound = r.harness_bound.clone();
        records.push(s);
    }
    let n = records[0].count;
    let indices: Vec<u32> = records.iter().map(|s| s.index).collect();
    if indices != (0..n).collect::<Vec<_>>() {
        bail!(
            "a run of {n} shards needs shards 0…{} once each, got {indices:?}",
            n - 1
        );
    }
    Ok(records)
}

/// Each shard offered its own arrivals, and together every arrival of the schedule exactly once.
fn schedule_checks(
    profile: &Profile,
    records: &[ShardRecord],
    total: Tally,
) -> Vec<InvariantCheck> {
    let check = |name: String, ok: bool, detail: String| InvariantCheck {
        name,
        ok: Some(ok),
        detail,
    };
    let mut checks: Vec<InvariantCheck> = records
        .iter()
        .map(|s| {
            let shard = Shard {
                index: s.index,
                count: s.count,
            };
            let want = shard.expected(profile);
            check(
                format!(
                    "shard {shard} offered exactly its arrivals (j mod {} = {})",
                    s.count, s.index
                ),
                s.offered_arrivals == want.arrivals && s.arrival_fingerprint == want.fingerprint,
                format!(
                    "{} offered of {} scheduled; fingerprint {:016x}, expected {:016x}",
                    s.offered_arrivals, want.arrivals, s.arrival_fingerprint, want.fingerprint
                ),
            )
        })
        .collect();
    let whole = Shard::WHOLE.expected(profile);
    checks.push(check(
        "the shards together offered every arrival of the schedule once".to_owned(),
        total == whole,
        format!(
            "{} offered by {} shards, {} scheduled; fingerprints {} the schedule's",
            total.arrivals,
            records.len(),
            whole.arrivals,
            if total.fingerprint == whole.fingerprint {
                "add up to"
            } else {
                "do NOT add up to"
            }
        ),
    ));
    checks
}

/// The merged verdict: the merged seconds' own, plus every shard that fell behind.
fn harness_bound(merged: Option<String>, records: &[ShardRecord]) -> Option<String> {
    let mut reasons: Vec<String> = merged.into_iter().collect();
    for s in records {
        if let Some(why) = &s.harness_bound {
            reasons.push(format!("shard {}/{}: {why}", s.index, s.count));
        }
        let late = s.start_lateness_ms();
        if late > LATE_P99_MS {
            reasons.push(format!(
                "shard {}/{} started {late:.0} ms after the agreed start",
                s.index, s.count
            ));
        }
    }
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// One merged second's samples: the API, mock-deps, PostgreSQL and the machine as the first shard
/// that saw them; the generator's CPU (and its sampler's) summed over the shards.
fn row(at: &[&SecondSample]) -> SampleRow {
    let first = |f: fn(&SecondSample) -> Option<f64>| at.iter().find_map(|s| f(s));
    let api = at.iter().find_map(|s| s.api_process);
    let generators: Vec<f64> = at
        .iter()
        .filter_map(|s| s.harness.generator_cpu_percent)
        .collect();
    SampleRow {
        api,
        // The sampler's CPU % is the same counter's delta over the second.
        api_cpu_seconds: api.map(|p| p.cpu_percent / 100.0),
        metrics: at.iter().find_map(|s| s.api_metrics),
        harness: lab_results::HarnessSample {
            generator_cpu_percent: (!generators.is_empty()).then(|| generators.iter().sum()),
            mock_deps_cpu_percent: first(|s| s.harness.mock_deps_cpu_percent),
            postgres_cpu_percent: first(|s| s.harness.postgres_cpu_percent),
            machine_cpu_percent: first(|s| s.harness.machine_cpu_percent),
            machine_steal_percent: first(|s| s.harness.machine_steal_percent),
            sampler_cpu_percent: at
                .iter()
                .filter_map(|s| s.harness.sampler_cpu_percent)
                .reduce(|a, b| a + b),
            postgres_jobs: at.iter().find_map(|s| s.harness.postgres_jobs),
        },
    }
}

/// `DIR/results.json`, where `merge` writes the run.
pub fn results_path(out: &Path) -> PathBuf {
    out.join("results.json")
}
