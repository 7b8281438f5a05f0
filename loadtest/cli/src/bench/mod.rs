//! `loadtest bench`: the capacity benchmark: CPU, statements and memory per order, each API alone in 1 CPU.
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
//! - [`cell`]: one API at one mock setting, start to stop;
//! - [`probe`]: the counters of every part, pg_stat_statements, mock-deps' request counts, the
//!   API's RSS and busy gauge sampled through the window;
//! - [`render`]: the tables; [`baseline`]: the change against an earlier run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use sqlx::Connection;

pub mod analysis;
pub mod baseline;
mod cell;
mod cost_gate;
mod cost_render;
pub mod harness;
pub mod instructions;
pub mod memory;
pub mod pg_counters;
pub mod probe;
pub mod render;

use crate::lab_args::{HarnessArgs, SEED_LATENCIES, api_names};
use crate::services::{Database, MockDepsProcess};
use lab_results::bench::{BENCH_SCHEMA_VERSION, BenchResults, BenchSettings, Pinning};
use lab_results::{ApiKind, MockLatencies};
use order_core::plumbing::deps_client::DepsClient;
use order_core::plumbing::settings::DepsHttp;

/// A mock-deps latency setting of the bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mocks {
    /// Every dependency answers at once: the API's own cost per order.
    #[value(name = "0ms", alias = "zero")]
    Zero,
    /// The seed's latencies (seller 200 ms, risk 1 s, payment 1 s).
    Seed,
}

impl Mocks {
    pub fn name(self) -> &'static str {
        match self {
            Mocks::Zero => "0ms",
            Mocks::Seed => "seed",
        }
    }

    pub fn latencies(self) -> MockLatencies {
        match self {
            Mocks::Zero => MockLatencies {
                seller: 0,
                risk: 0,
                payment: 0,
            },
            Mocks::Seed => SEED_LATENCIES,
        }
    }
}

/// `loadtest bench`'s options.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    // Each API is measured alone, one after the other; the proxy of --db-rtt-ms is a process of
    // its own, so that its CPU is its own.
    #[command(flatten)]
    pub harness: HarnessArgs,
    /// Mock-deps latency settings, in order: 0ms (alias zero), seed.
    #[arg(long, value_delimiter = ',', value_enum, default_value = "0ms,seed")]
    pub mocks: Vec<Mocks>,
    /// Length of each measured window, seconds.
    #[arg(long, default_value_t = 20.0)]
    pub seconds: f64,
    /// Closed-loop load before each window, seconds (not measured).
    #[arg(long, default_value_t = 5.0)]
    pub warmup: f64,
    /// Closed-loop clients with the mocks at 0 ms.
    #[arg(long, default_value_t = 32)]
    pub clients: u64,
    /// Closed-loop clients at the seed's latencies [default: blocking-api its BLOCKING_THREADS
    /// (more clients would only queue for a thread), reactive-api 1000].
    #[arg(long)]
    pub seed_clients: Option<u64>,
    /// BLOCKING_THREADS of blocking-api.
    #[arg(long, default_value_t = 200)]
    pub blocking_threads: u64,
    /// DEPS_CLIENT of blocking-api: ureq (calls on the request's own thread) or
    /// reqwest-blocking (every call's I/O on one runtime thread of reqwest's); with
    /// `--deps-http h2c`, reqwest-blocking (ureq has no HTTP/2).
    #[arg(long, value_enum, default_value_t = DepsClient::Ureq)]
    pub blocking_client: DepsClient,
    /// DEPS_HTTP of every API: http1 or h2c (cleartext HTTP/2 to mock-deps).
    #[arg(long, value_enum, default_value_t = DepsHttp::Http1)]
    pub deps_http: DepsHttp,
    /// An earlier bench.json: print the change against it.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Count instructions per order instead of CPU time: each API's release build under
    /// valgrind (callgrind), mocks at 0 ms, a fixed number of orders (see --orders).
    #[arg(long)]
    pub instructions: bool,
    /// --instructions: orders in the counted window.
    #[arg(long, default_value_t = 1000)]
    pub orders: u64,
    /// --instructions: orders before the window (not counted).
    #[arg(long, default_value_t = 200)]
    pub warmup_orders: u64,
    /// --instructions: closed-loop clients.
    #[arg(long, default_value_t = 8)]
    pub instruction_clients: u64,
    /// --instructions: hold the figures against this baseline (docs/bench/baseline.json) and
    /// exit 1 if instructions per order rose more than 5 % or WAL bytes per order more than 10 %.
    #[arg(long, requires = "instructions")]
    pub check: Option<PathBuf>,
    /// --instructions: write the figures as a new baseline to this file (a deliberate commit).
    #[arg(long, requires_all = ["instructions", "why"])]
    pub save_baseline: Option<PathBuf>,
    /// Measure RSS per order in flight instead (open model at the seed's latencies, each API a
    /// lab run of its own; see `bench/memory.rs`).
    #[arg(long)]
    pub memory: bool,
    /// --memory: hold the figures against this baseline (docs/bench/memory-baseline.json) and
    /// exit 1 if RSS per thread (blocking-api) or per order in flight rose more than 10 %.
    #[arg(long, requires = "memory")]
    pub memory_check: Option<PathBuf>,
    /// --memory: write the figures as a new memory baseline to this file (a deliberate commit).
    #[arg(long, requires_all = ["memory", "why"])]
    pub save_memory_baseline: Option<PathBuf>,
    /// Measure each harness part's CPU per order instead, beside the API's (open model at the
    /// seed's 750/s, each API a lab run of its own; see `bench/harness.rs`).
    #[arg(long = "harness", conflicts_with_all = ["memory", "instructions"])]
    pub harness_parts: bool,
    /// Why the new baseline (--save-baseline) is right: kept in the file.
    #[arg(long)]
    pub why: Option<String>,
}

/// The harness options read as the bench's own (`args.out`), as they are on its command line.
impl std::ops::Deref for BenchArgs {
    type Target = HarnessArgs;

    fn deref(&self) -> &HarnessArgs {
        &self.harness
    }
}

impl BenchArgs {
    /// Closed-loop clients of `api` at `mocks`.
    pub fn clients_for(&self, api: &str, mocks: Mocks) -> u64 {
        match mocks {
            Mocks::Zero => self.clients,
            Mocks::Seed => self.seed_clients.unwrap_or(match ApiKind::of(api) {
                Some(kind) if kind.has_thread_pool() => self.blocking_threads,
                _ => 1000,
            }),
        }
        .max(1)
    }
}

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
    let results = run(&args, &out).await?;
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

/// The harness every cell shares.
pub(crate) struct Harness {
    pub db: Database,
    /// The bench's own session (counts, pg_stat_statements), open for the whole bench so no
    /// connection is made inside a window.
    pub conn: tokio::sync::Mutex<sqlx::PgConnection>,
    /// pg_stat_statements is there to read.
    pub statements: bool,
    pub deps: MockDepsProcess,
    /// The URL the APIs get: the database's, or the latency proxy's in front of it.
    pub api_database_url: String,
    pub proxy: Option<labkit::process::ServiceProcess>,
    pub api_cpus: Option<Vec<usize>>,
    /// How many CPUs the harness is pinned to (`None`: not pinned).
    pub harness_cpus: Option<usize>,
    pub logs: PathBuf,
}

async fn run(args: &BenchArgs, out: &Path) -> Result<BenchResults> {
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
    let mut cells = Vec::new();
    let mut counted = Vec::new();
    let instruction_settings = if args.instructions {
        let valgrind = instructions::valgrind_version()?;
        for api in &apis {
            eprintln!(
                "bench: {api} under callgrind, {} clients: {} orders of warm-up, {} counted",
                args.instruction_clients, args.warmup_orders, args.orders
            );
            let c = instructions::run(args, &harness, api)
                .await
                .with_context(|| format!("{api} under callgrind"))?;
            eprintln!(
                "  {api}: {:.0} instructions per order ({} orders, {:.1} s under valgrind)",
                c.instructions_per_order, c.orders, c.window_s
            );
            counted.push(c);
        }
        Some(lab_results::cost::InstructionSettings {
            warmup_orders: args.warmup_orders,
            orders: args.orders,
            clients: args.instruction_clients,
            valgrind: format!("{valgrind}, callgrind"),
            hardware_counters: instructions::hardware_counters(),
        })
    } else {
        None
    };
    for api in apis.iter().filter(|_| !args.instructions) {
        for &mocks in &args.mocks {
            eprintln!(
                "bench: {api}, mocks {}, {} clients: {} s warm-up, {} s measured",
                mocks.name(),
                args.clients_for(api, mocks),
                args.warmup,
                args.seconds
            );
            let c = cell::run(args, &harness, api, mocks)
                .await
                .with_context(|| format!("{api}, mocks {}", mocks.name()))?;
            eprintln!("{}", render::one_line(&c));
            cells.push(c);
        }
    }
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

async fn start_harness(
    args: &BenchArgs,
    logs: &Path,
    pinning: Option<&Pinning>,
    pg_settings: &[(&str, &str)],
    notes: &mut Vec<String>,
) -> Result<Harness> {
    let (url, durability) = (args.database_url.clone(), args.db_durability);
    let owned: Vec<(String, String)> = pg_settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let db = tokio::task::spawn_blocking(move || {
        let settings: Vec<(&str, &str)> = owned
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        Database::open_with_settings(url.as_deref(), durability, &settings)
    })
    .await??;
    if let (Some(pid), Some(p)) = (db.pid, pinning) {
        // Started by this (pinned) process, but pg_ctl may have daemonised it: pin it all.
        let _ = labkit::affinity::pin_tree(pid, &p.harness_cpus);
    }
    let mut conn = sqlx::PgConnection::connect(&db.url)
        .await
        .context("connecting to PostgreSQL")?;
    let statements = match sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .execute(&mut conn)
        .await
    {
        Ok(_) => probe::statements_readable(&mut conn).await,
        Err(e) => {
            notes.push(format!(
                "SQL statements not counted: pg_stat_statements: {e}"
            ));
            false
        }
    };
    if db.pid.is_none() {
        notes.push(
            "PostgreSQL not started by the bench (--database-url): its CPU is not measured"
                .to_owned(),
        );
    }
    let deps = {
        let logs = logs.to_owned();
        tokio::task::spawn_blocking(move || MockDepsProcess::start(&logs)).await??
    };
    let (proxy, api_database_url) = if args.db_rtt_ms > 0.0 {
        let (p, url) = start_proxy(&db.url, args.db_rtt_ms, logs)?;
        (Some(p), url)
    } else {
        (None, db.api_url(args.db_via))
    };
    Ok(Harness {
        db,
        conn: tokio::sync::Mutex::new(conn),
        statements,
        deps,
        api_database_url,
        proxy,
        api_cpus: pinning.map(|p| p.api_cpus.clone()),
        harness_cpus: pinning.map(|p| p.harness_cpus.len()),
        logs: logs.to_owned(),
    })
}

/// The latency-proxy binary in front of PostgreSQL (a process of its own, so its CPU is its own).
fn start_proxy(
    db_url: &str,
    rtt_ms: f64,
    logs: &Path,
) -> Result<(labkit::process::ServiceProcess, String)> {
    let upstream = latency_proxy::upstream_of(db_url)?;
    let port = crate::services::free_port()?;
    let listen: std::net::SocketAddr = format!("127.0.0.1:{port}").parse()?;
    let bin = labkit::process::find_binary("latency-proxy")?;
    let env = vec![
        ("LISTEN_ADDR".to_owned(), listen.to_string()),
        ("UPSTREAM_ADDR".to_owned(), upstream.to_string()),
        ("RTT_MS".to_owned(), rtt_ms.to_string()),
        ("RUST_LOG".to_owned(), "warn".to_owned()),
    ];
    let p = labkit::process::ServiceProcess::spawn(
        "latency-proxy",
        &bin,
        Vec::<String>::new(),
        env,
        &logs.join("latency-proxy.log"),
    )?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(listen).is_err() {
        anyhow::ensure!(
            std::time::Instant::now() < deadline && p.try_wait()?.is_none(),
            "latency-proxy did not listen on {listen}: {}",
            p.log_tail(10)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok((p, latency_proxy::proxied_url(db_url, listen)?))
}

/// `release` or `debug`: where the API binary was found.
fn build_profile(api: &str) -> String {
    labkit::process::find_binary(api)
        .ok()
        .map(|b| {
            if b.components().any(|c| c.as_os_str() == "release") {
                "release"
            } else {
                "debug"
            }
        })
        .unwrap_or("unknown")
        .to_owned()
}

/// What the windows say about other load on the machine.
fn contention_notes(cells: &[lab_results::bench::BenchCell]) -> Vec<String> {
    let mut notes = Vec::new();
    for c in cells {
        let w = &c.window;
        if let Some(wait) = w.api_cpu_wait_s.filter(|s| *s / w.seconds >= 0.05) {
            notes.push(format!(
                "{} mocks {}: on average {:.2} of the API's threads were runnable without a CPU \
                 (other processes on its CPU, or its own threads queueing for it)",
                c.api,
                c.mocks,
                wait / w.seconds
            ));
        }
        if let Some(other) = w.other_cpu_s().filter(|s| *s / w.seconds >= 0.1) {
            notes.push(format!(
                "{} mocks {}: {:.0} % of a CPU was busy outside the measured processes (other \
                 tenants of this machine, kernel threads — PostgreSQL's disk flushes among them)",
                c.api,
                c.mocks,
                100.0 * other / w.seconds
            ));
        }
    }
    notes
}

/// One lab run of each of `args.apis` under `plan` (the profile and its flags) with the harness
/// flags the bench was given, each in `<out>/<api>/`, `out` being `--out` or
/// `reports/<UTC timestamp>-bench-<what>`: the benches that measure under the open model
/// (`--memory`, `--harness`). Returns the folder and each API's run.
pub async fn lab_runs(
    args: &BenchArgs,
    what: &str,
    plan: &[&str],
) -> Result<(PathBuf, Vec<(String, lab_results::RunResults)>)> {
    let out = args.out.clone().unwrap_or_else(|| {
        Path::new("reports").join(format!(
            "{}-bench-{what}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ))
    });
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut runs = Vec::new();
    for api in &args.apis {
        let mut argv: Vec<String> = ["--apis", api.as_str(), "--no-progress"]
            .iter()
            .chain(plan)
            .map(|s| s.to_string())
            .collect();
        argv.extend(["--db-pool-size".to_owned(), args.db_pool_size.to_string()]);
        argv.extend(args.pg_settings.iter().map(|s| format!("--pg-setting={s}")));
        if args.no_limits {
            argv.push("--no-limits".to_owned());
        }
        if args.no_pin {
            argv.push("--no-pin".to_owned());
        }
        let mut lab = crate::lab_args::LabArgs::from_flags(argv)?;
        // The bench's pod, as given (`--api-cpus`, `--api-memory-mib`).
        (lab.api_cpus, lab.api_memory_mib) = (args.api_cpus, args.api_memory_mib);
        // And its clients (`--blocking-client`, `--deps-http`).
        (lab.blocking_client, lab.deps_http) = (args.blocking_client, Some(args.deps_http));
        lab.out = Some(out.join(api));
        let (mut done, _) = crate::lab::lab(lab).await?;
        anyhow::ensure!(!done.is_empty(), "{api}: the {what} run made no results");
        runs.push((api.clone(), done.remove(0)));
    }
    Ok((out, runs))
}
