//! One run of the CPU bench (or of `--instructions`): the services built, the harness pinned and
//! started ([`super::startup`]), each API measured cell after cell (or counted under callgrind),
//! the harness stopped, and everything the results file holds put together.

use std::path::Path;

use anyhow::{Context, Result};

use super::conditions::{build_profile, contention_notes};
use super::startup::{Harness, start_harness};
use super::{BenchArgs, analysis, cell, instructions, render};
use crate::lab_args::api_names;
use lab_results::bench::{BENCH_SCHEMA_VERSION, BenchCell, BenchResults, BenchSettings};
use lab_results::cost::{InstructionCell, InstructionSettings};

pub(super) async fn run(args: &BenchArgs, out: &Path) -> Result<BenchResults> {
    anyhow::ensure!(
        args.seconds > 0.0 && args.warmup >= 0.0,
        "--seconds must be > 0 and --warmup ≥ 0"
    );
    let started_at = chrono::Utc::now().to_rfc3339();
    let apis: Vec<String> = args.apis.iter().map(|a| api_names(a).0).collect();
    {
        let apis = apis.clone();
        tokio::task::spawn_blocking(move || crate::services::build_services(&apis)).await??;
    }
    // Thousands of client connections; children inherit the raised limit.
    let _ = labkit::process::raise_nofile_limit();
    let mut notes = Vec::new();
    // Pin this process first: every child started from now on inherits the harness's CPUs.
    let pinning = match crate::services::place_harness(!args.no_pin)? {
        Ok(p) => Some(p),
        Err(why) => {
            notes.push(why);
            None
        }
    };
    let logs = out.join("logs");
    let mut pg_settings: Vec<(&str, &str)> = if args.instructions {
        instructions::PG_SETTINGS.to_vec()
    } else {
        Vec::new()
    };
    pg_settings.extend(args.pg_setting_pairs());
    let harness = start_harness(args, &logs, pinning.as_ref(), &pg_settings, &mut notes).await?;
    let (counted, instruction_settings) = if args.instructions {
        count_instructions(args, &harness, &apis).await?
    } else {
        (Vec::new(), None)
    };
    let cells = if args.instructions {
        Vec::new()
    } else {
        measure_cells(args, &harness, &apis).await?
    };
    if let Some(p) = harness.proxy {
        let _ = tokio::task::spawn_blocking(move || p.stop(labkit::process::STOP_GRACE)).await;
    }
    drop(harness.deps);
    drop(harness.db);
    notes.extend(contention_notes(&cells));
    let slopes = analysis::memory_slopes(&cells);
    let targets = analysis::targets(&cells, &slopes);
    let mut environment = crate::run::environment("");
    environment.build_profile = build_profile(apis.first().map_or("", String::as_str));
    Ok(BenchResults {
        schema_version: BENCH_SCHEMA_VERSION,
        started_at,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        environment,
        settings: BenchSettings {
            warmup_s: args.warmup,
            seconds: args.seconds,
            db_durability: if args.database_url.is_some() {
                "external".to_owned()
            } else {
                args.db_durability.as_str().to_owned()
            },
            db_rtt_ms: args.db_rtt_ms,
            api_settings: cell::common_settings(args, None).to_env(),
            pinning,
        },
        cells,
        memory_slopes: slopes,
        targets,
        notes,
        instruction_settings,
        instructions: counted,
    })
}

/// `--instructions`: each API counted under callgrind, and how.
async fn count_instructions(
    args: &BenchArgs,
    harness: &Harness,
    apis: &[String],
) -> Result<(Vec<InstructionCell>, Option<InstructionSettings>)> {
    let valgrind = instructions::valgrind_version()?;
    let mut counted = Vec::new();
    for api in apis {
        eprintln!(
            "bench: {api} under callgrind, {} clients: {} orders of warm-up, {} counted",
            args.instruction_clients, args.warmup_orders, args.orders
        );
        let c = instructions::run(args, harness, api)
            .await
            .with_context(|| format!("{api} under callgrind"))?;
        eprintln!(
            "  {api}: {:.0} instructions per order ({} orders, {:.1} s under valgrind)",
            c.instructions_per_order, c.orders, c.window_s
        );
        counted.push(c);
    }
    let settings = InstructionSettings {
        warmup_orders: args.warmup_orders,
        orders: args.orders,
        clients: args.instruction_clients,
        valgrind: format!("{valgrind}, callgrind"),
        hardware_counters: instructions::hardware_counters(),
    };
    Ok((counted, Some(settings)))
}

/// Each API measured at each `--mocks` setting, cell after cell.
async fn measure_cells(
    args: &BenchArgs,
    harness: &Harness,
    apis: &[String],
) -> Result<Vec<BenchCell>> {
    let mut cells = Vec::new();
    for api in apis {
        for &mocks in &args.mocks {
            eprintln!(
                "bench: {api}, mocks {}, {} clients: {} s warm-up, {} s measured",
                mocks.name(),
                args.clients_for(api, mocks),
                args.warmup,
                args.seconds
            );
            let c = cell::run(args, harness, api, mocks)
                .await
                .with_context(|| format!("{api}, mocks {}", mocks.name()))?;
            eprintln!("{}", render::one_line(&c));
            cells.push(c);
        }
    }
    Ok(cells)
}
