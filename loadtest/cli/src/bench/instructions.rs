//! `loadtest bench --instructions`: what an order costs in instructions, a figure two machines
//! agree on. CPU time per order moves with the machine's speed, its other tenants and how busy
//! the API is (the same commit measured 586 µs here and 156 µs on another VM); the instructions
//! the API executes for the same orders do not.
//!
//! For each API, its release build runs under valgrind's callgrind (`labkit::callgrind`), with
//! every dependency at 0 ms and PostgreSQL as the bench has it (durable), and a closed loop of
//! `--instruction-clients` clients sends first `--warmup-orders` orders (connections opened,
//! caches and pages warm), then exactly `--orders` orders: the window.
//!
//! **Only the window is counted**: callgrind's counters are zeroed when the warm-up has ended and
//! dumped when the window's last order has returned (vgdb monitor commands, which reach the API
//! even while it is idle), so start-up, migrations and the warm-up are outside; the instructions
//! of the window's orders, and whatever the process did in between (timers, its pools), inside.
//! This was chosen over the difference of two runs of different sizes, which needs two runs per
//! API under valgrind and subtracts two large noisy figures. Time-driven work would be charged
//! to orders ~50 times over under valgrind (a window lasts that much longer than natively), so
//! the periodic reconciler is set to run hourly, outside any window.
//!
//! PostgreSQL's share comes from its own counters over the same window (`pg_counters`): read
//! after its backends have published the warm-up's counts, and again once the API has stopped
//! and its backends have exited. For the figures to follow the orders and not the clock, the
//! cluster runs without autovacuum and timed checkpoints (a checkpoint is made before the
//! warm-up, so full-page images in the window are those of pages the warm-up did not touch).
//!
//! User-space instructions only: the kernel's work in system calls is not in these figures (the
//! CPU-time bench shows it as system time).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use lab_results::cost::{CostShare, FrameCost, InstructionCell};

use super::cost_gate::group_of;
use lab_results::{ApiKind, OUTCOME_CREATED};
use loadgen::driver::LoopControl;

use super::{BenchArgs, Harness, Mocks, cell, pg_counters, probe};
use crate::api_env::ApiSettings;
use crate::run::set_mock_latencies;
use crate::services::ApiProcess;

/// PostgreSQL settings of an instruction run, on top of the bench's: nothing that follows the
/// clock rather than the orders (see the module docs).
pub const PG_SETTINGS: &[(&str, &str)] = &[
    ("autovacuum", "off"),
    ("checkpoint_timeout", "1d"),
    ("max_wal_size", "10GB"),
];

/// Groups kept in the results, and the top inclusive frames kept of each.
const GROUPS_KEPT: usize = 14;
const FRAMES_PER_GROUP: usize = 2;

/// `valgrind --version`, or why it cannot run.
pub fn valgrind_version() -> Result<String> {
    let out = std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .context("running valgrind (apt-get install valgrind)")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Whether `perf stat -e instructions` counts here: a VM often hides the hardware counters.
/// Where they exist they would give a second, native count to hold valgrind's against; where
/// they do not, the results say so.
pub fn hardware_counters() -> String {
    let out = std::process::Command::new("perf")
        .args(["stat", "-x,", "-e", "instructions", "true"])
        .output();
    match out {
        Err(e) => format!("not measured: perf could not run ({e})"),
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stderr);
            let line = text
                .lines()
                .find(|l| l.contains("instructions"))
                .unwrap_or("no instructions line");
            if line.starts_with(|c: char| c.is_ascii_digit()) {
                format!("available (perf stat: {line}); not used by this bench yet")
            } else {
                format!("not available on this machine (perf stat: {line})")
            }
        }
    }
}

/// One API's window.
pub(super) async fn run(args: &BenchArgs, h: &Harness, api: &str) -> Result<InstructionCell> {
    set_mock_latencies(&h.deps.url, Mocks::Zero.latencies()).await?;
    let kind: ApiKind = api.parse().map_err(anyhow::Error::msg)?;
    let env = ApiSettings {
        reconcile_interval_ms: 3_600_000,
        ..cell::api_settings(args, &h.deps.url, kind)
    }
    .env_at(&h.api_database_url);
    let out_file = h.logs.join(format!("callgrind.{api}.out"));
    let (name, logs, out) = (api.to_owned(), h.logs.clone(), out_file.clone());
    let process = tokio::task::spawn_blocking(move || {
        ApiProcess::start_under_callgrind(&name, &env, &logs, &out)
    })
    .await??;
    cell::prepare_window(h, api, process.pid).await?;
    let clients = args.instruction_clients.max(1);
    closed_loop(&process.url, clients, args.warmup_orders, "warm-up").await?;
    // Every backend has published the warm-up's counters after this.
    tokio::time::sleep(pg_counters::PUBLISH_DELAY).await;
    let mut conn = h.conn.lock().await;
    let (orders_before, pg_before) = (
        probe::count_orders(&mut conn).await?,
        pg_counters::read(&mut conn).await.ok(),
    );
    let pid = process.pid;
    tokio::task::spawn_blocking(move || labkit::callgrind::monitor(pid, "zero")).await??;
    let started = Instant::now();
    let window = closed_loop(&process.url, clients, args.orders, "window").await;
    let window_s = started.elapsed().as_secs_f64();
    let dumped =
        tokio::task::spawn_blocking(move || labkit::callgrind::monitor(pid, "dump")).await?;
    let orders = probe::count_orders(&mut conn)
        .await?
        .saturating_sub(orders_before);
    tokio::task::spawn_blocking(move || process.stop()).await??;
    let gone = pg_counters::wait_for_backends_gone(&mut conn, Duration::from_secs(15)).await;
    let pg_after = pg_counters::read(&mut conn).await.ok();
    drop(conn);
    window?;
    dumped?;
    let dump = labkit::callgrind::last_dump(&out_file)?
        .with_context(|| format!("callgrind wrote no dump next to {}", out_file.display()))?;
    let profile = labkit::callgrind::parse(&std::fs::read_to_string(&dump)?)
        .with_context(|| format!("reading {}", dump.display()))?;
    anyhow::ensure!(orders > 0, "{api}: no order was persisted in the window");
    let postgres = match (pg_before, pg_after, gone) {
        (Some(a), Some(b), true) => Some(a.delta(&b)),
        _ => None,
    };
    Ok(summarise(api, orders, window_s, &profile, postgres))
}

/// A closed loop of `requests` orders run to its end; fails unless every one was created.
async fn closed_loop(target: &str, clients: u64, requests: u64, what: &str) -> Result<()> {
    if requests == 0 {
        return Ok(());
    }
    let driver = cell::closed_loop(target, clients.min(requests), requests);
    let out = loadgen::driver::drive_with(
        driver,
        Arc::new(OnceLock::new()),
        Arc::new(LoopControl::default()),
    )
    .await
    .with_context(|| format!("the {what}'s closed loop"))?;
    let outcomes = &out.recorder.total.outcomes;
    let created = outcomes.get(OUTCOME_CREATED).copied().unwrap_or(0);
    if created != requests {
        bail!("the {what}'s {requests} orders ended {outcomes:?}: not all created");
    }
    Ok(())
}

/// The cell of a window: totals, groups and frames per order.
pub fn summarise(
    api: &str,
    orders: u64,
    window_s: f64,
    profile: &labkit::callgrind::Profile,
    postgres: Option<lab_results::cost::PgCounters>,
) -> InstructionCell {
    let n = orders.max(1) as f64;
    let total = profile.total_ir;
    let mut groups: HashMap<String, u64> = HashMap::new();
    for f in &profile.functions {
        *groups.entry(group_of(&f.name, &f.object)).or_default() += f.self_ir;
    }
    let mut groups: Vec<CostShare> = groups
        .into_iter()
        .map(|(name, ir)| CostShare {
            name,
            per_order: ir as f64 / n,
            share: if total > 0 {
                ir as f64 / total as f64
            } else {
                0.0
            },
        })
        .collect();
    groups.sort_by(|a, b| b.per_order.total_cmp(&a.per_order));
    groups.truncate(GROUPS_KEPT);
    // Each kept group's outermost frames: the functions of the group with the most inclusive
    // instructions (for tokio, the runtime that runs everything; for actix-web, its dispatcher).
    let mut functions: Vec<&labkit::callgrind::FunctionCost> = profile.functions.iter().collect();
    functions.sort_by_key(|f| std::cmp::Reverse(f.inclusive_ir));
    let mut frames: Vec<FrameCost> = Vec::new();
    for g in &groups {
        frames.extend(
            functions
                .iter()
                .filter(|f| group_of(&f.name, &f.object) == g.name)
                .take(FRAMES_PER_GROUP)
                .map(|f| FrameCost {
                    name: f.name.clone(),
                    group: g.name.clone(),
                    inclusive_per_order: f.inclusive_ir as f64 / n,
                    self_per_order: f.self_ir as f64 / n,
                }),
        );
    }
    frames.sort_by(|a, b| b.inclusive_per_order.total_cmp(&a.inclusive_per_order));
    InstructionCell {
        api: api.to_owned(),
        orders,
        window_s,
        instructions: total,
        instructions_per_order: total as f64 / n,
        groups,
        frames,
        postgres_per_order: postgres.and_then(|p| p.per_order(orders)),
        postgres,
    }
}

/// The results' cells as a baseline-style check, printed: `Ok(true)` when every figure is within
/// its tolerance.
pub fn check(baseline_path: &Path, cells: &[InstructionCell]) -> Result<(bool, String)> {
    let text = std::fs::read_to_string(baseline_path)
        .with_context(|| format!("reading {}", baseline_path.display()))?;
    let baseline: lab_results::cost::CostBaseline = serde_json::from_str(&text)
        .with_context(|| format!("parsing {}", baseline_path.display()))?;
    let lines = super::cost_gate::gate(&baseline, cells);
    let ok = lines.iter().all(|l| l.passes());
    Ok((
        ok,
        super::cost_render::gate(&lines, &baseline, baseline_path),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use labkit::callgrind::{FunctionCost, Profile};

    #[test]
    fn a_window_is_divided_by_its_orders_and_grouped() {
        let f = |name: &str, object: &str, self_ir, inclusive_ir| FunctionCost {
            name: name.to_owned(),
            object: object.to_owned(),
            self_ir,
            inclusive_ir,
        };
        let profile = Profile {
            total_ir: 10_000,
            functions: vec![
                f("tokio::runtime::park", "/bin/api", 1000, 10_000),
                f("reactive_api::service::create", "/bin/api", 3000, 8000),
                f("serde_json::de::from_slice", "/bin/api", 1000, 1500),
                f("serde_json::ser::to_vec", "/bin/api", 1000, 1000),
                f("malloc", "/lib/libc.so.6", 4000, 4000),
            ],
        };
        let c = summarise("reactive-api", 10, 3.0, &profile, None);
        assert_eq!(c.instructions_per_order, 1000.0);
        let g: Vec<(&str, f64)> = c
            .groups
            .iter()
            .map(|g| (g.name.as_str(), g.per_order))
            .collect();
        assert_eq!(
            g[0],
            ("libc (malloc/free, memcpy, system-call stubs)", 400.0)
        );
        assert_eq!(g[1].1, 300.0);
        assert!(g.contains(&("serde, serde_json", 200.0)));
        assert!((c.groups.iter().map(|g| g.share).sum::<f64>() - 1.0).abs() < 1e-9);
        assert_eq!(c.frames[0].name, "tokio::runtime::park");
        assert_eq!(c.frames[1].inclusive_per_order, 800.0);
        // Two frames per group at most, each under its group.
        assert_eq!(c.frames.len(), 5);
        assert!(
            c.frames
                .iter()
                .all(|f| f.group == group_of(&f.name, "/bin/api") || f.name == "malloc")
        );
        assert_eq!(c.postgres_per_order, None);
    }
}
