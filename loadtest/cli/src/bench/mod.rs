//! `loadtest bench`: the cost-per-order benchmark — CPU, statements and memory per order, each API
//! alone in 1 CPU. Not `--scenario capacity`, the search for the highest rate within the objective.
//!
//! For each API alone in its CPU — its own cgroup (1 CPU / 1 GiB, or `--api-cpus` /
//! `--api-memory-mib`), and (with two CPUs or more) pinned
//! to the last CPU while the load generator, mock-deps and PostgreSQL share the others — a closed
//! loop of clients at each mock setting (0 ms, the seed's latencies): a warm-up, then a measured
//! window. Cumulative counters are read at the window's two ends ([`probe`]); their deltas divided
//! by the orders persisted in between give the per-order figures (`lab_results::bench`). The API
//! is started afresh for every cell, so its peak RSS belongs to that cell.
//!
//! Output: a table on stdout, `bench.md` and `bench.json` (versioned, `lab_results::bench`) in the
//! output folder; `--baseline FILE` adds the change against an earlier `bench.json`.
//!
//! - [`command`] (here): the entry point — the mode to run, then the results written, printed
//!   and held against a baseline; `args.rs`: its arguments;
//! - `orchestrate.rs`: one run of the bench, API after API; `startup.rs`: the harness every cell
//!   shares (PostgreSQL, mock-deps, the latency proxy); `conditions.rs`: the build profile and
//!   the notes on other load on the machine;
//! - [`cell`]: one API at one mock setting, start to stop;
//! - [`probe`]: the counters of every part, pg_stat_statements, mock-deps' request counts, the
//!   API's RSS and busy gauge sampled through the window;
//! - [`render`]: the tables; [`baseline`]: the change against an earlier run;
//! - [`instructions`], [`memory`], [`harness`]: the other modes (instructions per order under
//!   callgrind, RSS per order in flight, the harness's CPU per order), the last two as lab runs
//!   ([`lab_runs()`]).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

pub mod analysis;
mod args;
pub mod baseline;
mod cell;
mod conditions;
mod cost_gate;
mod cost_render;
pub mod harness;
pub mod instructions;
mod lab_runs;
pub mod memory;
mod orchestrate;
pub mod pg_counters;
pub mod probe;
pub mod render;
mod startup;

pub use args::{BenchArgs, Mocks};
pub use lab_runs::lab_runs;
pub(crate) use startup::Harness;

use lab_results::bench::BenchResults;

/// Runs the bench, writes bench.json and bench.md, prints the tables.
pub async fn command(args: BenchArgs) -> Result<ExitCode> {
    if args.memory {
        return memory::command(&args).await;
    }
    if args.harness_parts {
        return harness::command(&args).await;
    }
    let baseline = match &args.baseline {
        Some(p) => Some(BenchResults::load(p)?),
        None => None,
    };
    let out = args.out.clone().unwrap_or_else(|| {
        Path::new("reports").join(format!(
            "{}-bench",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ))
    });
    std::fs::create_dir_all(out.join("logs"))
        .with_context(|| format!("creating {}", out.display()))?;
    let results = orchestrate::run(&args, &out).await?;
    let json = out.join("bench.json");
    results.save(&json)?;
    let mut md = render::markdown(&results);
    let mut gate_ok = true;
    if let Some(path) = &args.check {
        let (ok, text) = instructions::check(path, &results.instructions)?;
        gate_ok = ok;
        md.push_str(&text);
    }
    if let Some(path) = &args.save_baseline {
        let b = lab_results::cost::CostBaseline::of(
            &results.instructions,
            args.why.as_deref().unwrap_or_default(),
            &results.command,
            &results.environment.git_sha,
            &results.started_at,
        );
        std::fs::write(path, serde_json::to_string_pretty(&b)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("baseline written to {}", path.display());
    }
    if let Some(base) = &baseline {
        md.push_str(&baseline::render(
            &baseline::diff(base, &results),
            args.baseline.as_deref(),
        ));
    }
    std::fs::write(out.join("bench.md"), &md)?;
    println!("{md}");
    println!(
        "bench: {}\ntable: {}",
        json.display(),
        out.join("bench.md").display()
    );
    let empty = results.cells.iter().any(|c| c.window.orders == 0);
    if !gate_ok {
        eprintln!(
            "bench: instructions or WAL bytes per order rose past the baseline's tolerance (table \
             above)"
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(if empty {
        eprintln!(
            "a cell completed no order in its window: see the logs in {}",
            out.display()
        );
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
