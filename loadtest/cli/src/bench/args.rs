//! `loadtest bench`'s arguments: the harness flags it shares with `lab`, the mock settings, the
//! windows and clients, and the modes (`--instructions`, `--memory`, `--harness`) with their
//! baselines.

use std::path::PathBuf;

use clap::Args;

use crate::lab_args::{HarnessArgs, SEED_LATENCIES};
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
