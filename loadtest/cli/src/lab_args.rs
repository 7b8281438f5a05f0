//! What the lab is asked to run: the options of `loadtest lab` (and the load options `run`
//! shares), and the words they are written in (durability, transaction scope, the seed's mock
//! latencies, an API's names). The lab, the bench, the scenarios and the services read these;
//! the command line (`cli.rs`) only puts them under its subcommands. Apart from `cli.rs`, so that
//! the command line can name every subcommand's arguments (`bench::BenchArgs` among them)
//! without the lab importing the command line back.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;

use lab_report::slo::Slo;
use lab_results::faults::FaultPlan;
use lab_results::inject::Injection;
use lab_results::{ApiKind, MockLatencies, ScenarioName, Shedding};
use order_core::plumbing::deps_client::DepsClient;
use order_core::plumbing::settings::DepsHttp;

/// Whether the lab's own PostgreSQL flushes every commit to disk (`--db-durability`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Durability {
    On,
    Off,
}

/// How the APIs reach the lab's own PostgreSQL (`--db-via`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DbVia {
    /// Its Unix-domain socket: no TCP/IP stack on either side of a round trip.
    Socket,
    /// TCP on 127.0.0.1.
    Tcp,
}

impl DbVia {
    pub fn as_str(self) -> &'static str {
        match self {
            DbVia::Socket => "socket",
            DbVia::Tcp => "tcp",
        }
    }
}

/// `DB_TX_SCOPE` of the APIs the lab starts (`--tx-scope`): the APIs' own setting.
pub use order_core::plumbing::settings::TxScope;

/// The seed's mock-deps latencies, and what `--latency` leaves a dependency it does not name at.
pub const SEED_LATENCIES: MockLatencies = MockLatencies {
    seller: 200,
    risk: 1000,
    payment: 1000,
};

impl Durability {
    pub fn as_str(self) -> &'static str {
        match self {
            Durability::On => "on",
            Durability::Off => "off",
        }
    }
}

/// Options of the load itself, shared by `lab` and `run`.
#[derive(Debug, Clone, Args)]
pub struct LoadOpts {
    /// Load profile: ramp-N, seed-gatling, stress, closed-C-N (see `loadtest profiles`).
    #[arg(long, default_value = "ramp-300")]
    pub profile: String,
    /// Multiplies every phase's length (rates are kept); CI smoke runs use e.g. 0.05.
    #[arg(long, default_value_t = 1.0)]
    pub duration_scale: f64,
    /// Per-request timeout in seconds (the original's Gatling timeout was 60 s).
    #[arg(long, default_value_t = 60.0)]
    pub request_timeout_s: f64,
    /// Most requests open at once; an arrival beyond it is counted `not_sent` (the loopback's
    /// ephemeral ports, ~28k, bound what a single target can take anyway).
    #[arg(long, default_value_t = 20_000)]
    pub max_in_flight: u64,
    /// Share of requests that re-send an earlier order (same key and body).
    #[arg(long, default_value_t = 0.0)]
    pub duplicate_ratio: f64,
    /// Number of seller tokens (sk_seller-01 … sk_seller-NN) to spread requests over.
    #[arg(long, default_value_t = 16)]
    pub sellers: u32,
    /// Clients retry (same reference_id and body, honouring Retry-After, capped exponential
    /// backoff) and give up this many seconds after their first attempt; unset = one attempt each.
    #[arg(long)]
    pub retry_for_s: Option<f64>,
    /// Hide the progress bars.
    #[arg(long)]
    pub no_progress: bool,
}

/// The harness options `lab` and `bench` share: which APIs, how each is confined, the database
/// and where the output goes.
#[derive(Debug, Clone, Args)]
pub struct HarnessArgs {
    /// APIs to run, in order, one after the other (each started by the lab unless --targets is
    /// given): blocking-api, reactive-api (or blocking, reactive).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "blocking-api,reactive-api",
        value_parser = api_name
    )]
    pub apis: Vec<String>,
    /// DB_POOL_SIZE of every API (the seed's apps had 100).
    #[arg(long, default_value_t = 100)]
    pub db_pool_size: u32,
    /// The ephemeral PostgreSQL is durable, as in production (`on`: fsync, synchronous_commit and
    /// full_page_writes on, so every commit waits for its WAL flush and a committed order survives
    /// a crash); `off` trades that for less disk noise (stated in the report's settings).
    #[arg(long, value_enum, default_value_t = Durability::On)]
    pub db_durability: Durability,
    /// A server setting of the lab's own PostgreSQL, NAME=VALUE (repeatable), on top of the lab's
    /// (durability's among them): what a team tries on its harness, recorded with the run's
    /// settings (`PG_SETTINGS`). Not applied to --database-url's server.
    #[arg(long = "pg-setting", value_name = "NAME=VALUE", value_parser = pg_setting)]
    pub pg_settings: Vec<String>,
    /// Round-trip time a TCP latency proxy adds between the APIs and PostgreSQL, in ms.
    #[arg(long, default_value_t = 0.0)]
    pub db_rtt_ms: f64,
    /// How the APIs reach the lab's own PostgreSQL: its Unix-domain socket (both APIs alike), or
    /// TCP on 127.0.0.1 (recorded as `PG_VIA`). A `--db-rtt-ms` proxy is TCP whatever this says;
    /// `--database-url`'s server is reached as its URL says.
    #[arg(long, value_enum, default_value_t = DbVia::Socket)]
    pub db_via: DbVia,
    /// Use this PostgreSQL instead of an ephemeral cluster (its CPU is then not measured; the
    /// order tables are emptied before every run).
    #[arg(long)]
    pub database_url: Option<String>,
    /// Do not put the APIs in cgroups (the results then say limits NOT enforced).
    #[arg(long)]
    pub no_limits: bool,
    /// The CPU quota of each API's cgroup, in cores: 1 (the seed's container), 0.5, 0.125 (an
    /// eighth of a core)… At least 0.001. Its CFS period is max(10 ms, 1 ms ÷ cores), recorded,
    /// unless --api-cfs-period-ms says otherwise.
    #[arg(long, default_value_t = 1.0, value_parser = crate::pod::api_cpus)]
    pub api_cpus: f64,
    /// The CFS period each API's quota is counted over, ms: 100 is the kernel's default, which
    /// Kubernetes and docker use (1–1000; the quota is cores × period and stays at least 1 ms).
    #[arg(long, value_parser = crate::pod::period_ms)]
    pub api_cfs_period_ms: Option<f64>,
    /// The CFS burst of each API's cgroup, ms: quota left unused in earlier periods that the API
    /// may spend at once (0: none, the kernel's default; at most the quota).
    #[arg(long, default_value_t = 0.0, value_parser = crate::pod::burst_ms)]
    pub api_cfs_burst_ms: f64,
    /// The memory limit of each API's cgroup, MiB (no swap beyond it).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub api_memory_mib: u64,
    /// Do not pin each API to the last CPU and the harness (PostgreSQL, mock-deps, NATS, the
    /// generator, the latency proxy) to the others (done by default with two CPUs or more).
    #[arg(long)]
    pub no_pin: bool,
    /// Output folder [default: reports/<UTC timestamp>-<profile>/, for the bench
    /// reports/<UTC timestamp>-bench/].
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `--pg-setting`: `NAME=VALUE` with a setting's name (letters, digits, `_` and `.`).
fn pg_setting(text: &str) -> Result<String, String> {
    let (name, _) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: expected NAME=VALUE"))?;
    let named = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    named
        .then(|| text.to_owned())
        .ok_or_else(|| format!("{name:?} is not a PostgreSQL setting's name"))
}

/// `--resolution`: a positive rate.
fn positive_rate(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && *r > 0.0)
        .ok_or_else(|| format!("{text:?} is not a positive rate"))
}

impl HarnessArgs {
    /// Each API's pod: its cgroup's limits, `None` with `--no-limits`.
    pub fn pod(&self) -> Option<labkit::cgroup::ResourceLimits> {
        let flags = crate::pod::PodFlags {
            cpus: self.api_cpus,
            memory_mib: self.api_memory_mib,
            cfs_period_ms: self.api_cfs_period_ms,
            cfs_burst_ms: self.api_cfs_burst_ms,
        };
        crate::pod::of(self.no_limits, flags)
    }

    /// `--pg-setting`s as (name, value) pairs.
    pub fn pg_setting_pairs(&self) -> Vec<(&str, &str)> {
        self.pg_settings
            .iter()
            .filter_map(|s| s.split_once('='))
            .collect()
    }
}

/// `--apis`: a name the lab can start, kept as written.
fn api_name(name: &str) -> Result<String, String> {
    name.parse::<ApiKind>().map(|_| name.to_owned())
}

/// The options of a lab run, as the command line gives them: what `loadtest lab` runs every API
/// with, and what a scenario derives each of its runs from. Nothing the lab works out while it
/// runs is written back here (the resolved thread count, a scenario's shared database: [`crate::lab::lab`]'s).
#[derive(Debug, Clone, Args)]
pub struct LabArgs {
    #[command(flatten)]
    pub load: LoadOpts,
    #[command(flatten)]
    pub harness: HarnessArgs,
    /// mock-deps latencies in ms.
    #[arg(long, default_value = "seller=200,risk=1000,pay=1000", value_parser = parse_latency)]
    pub latency: MockLatencies,
    /// DB_POOL_TIMEOUT_MS for every API.
    #[arg(long, default_value_t = 5000)]
    pub db_pool_timeout_ms: u64,
    /// DEPS_TIMEOUT_MS for every API.
    #[arg(long, default_value_t = 10_000)]
    pub deps_timeout_ms: u64,
    /// HTTP_WORKERS for every API (1: one CPU each).
    #[arg(long, default_value_t = 1)]
    pub http_workers: u32,
    /// BLOCKING_THREADS for blocking-api (the seed's Tomcat had 200), or `auto`: Erlang B on
    /// Little's law — the profile's peak rate × the dependencies' critical path are the threads
    /// busy on average, and the pool gets the fewest threads that would turn away at most 0.1 %
    /// of random arrivals if none could wait for a thread (blocking-api lets one wait
    /// `QUEUE_TIMEOUT_MS`, so it turns away fewer).
    #[arg(long, default_value = "200", value_parser = BlockingThreads::parse)]
    pub blocking_threads: BlockingThreads,
    /// With `--blocking-threads auto`: size the pool by this time a request holds its thread,
    /// ms, instead of the critical path (in a pod of a fraction of a core an order holds its
    /// thread for its own CPU work and its wait for the CPU too: 30 ms against a 22 ms critical
    /// path at 0.125 CPU). `--scenario capacity` sets it from each met step's measurement.
    #[arg(long)]
    pub thread_hold_ms: Option<f64>,
    /// DEPS_CLIENT for blocking-api: `ureq` (each dependency call's I/O on the request's own
    /// thread, the thread-per-request model) or `reqwest-blocking` (every call's I/O on one
    /// runtime thread of reqwest's). Recorded with the runs' settings.
    #[arg(long, value_enum, default_value_t = DepsClient::Ureq)]
    pub blocking_client: DepsClient,
    /// DEPS_HTTP for every API: `http1` (a connection per call in flight) or `h2c` (cleartext
    /// HTTP/2, every call multiplexed on one connection; blocking-api then needs
    /// `--blocking-client reqwest-blocking`, as ureq speaks HTTP/1.1 only). Unset: the APIs'
    /// default, http1, and nothing recorded.
    #[arg(long, value_enum)]
    pub deps_http: Option<DepsHttp>,
    /// DB_TX_SCOPE for every API: short or request.
    #[arg(long, value_enum, default_value_t = TxScope::Short)]
    pub tx_scope: TxScope,
    /// Runs per API, interleaved (blocking, reactive, blocking, …).
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Already-running APIs as name=url,… (docker compose); nothing is started or stopped.
    #[arg(long, value_delimiter = ',', value_parser = parse_target)]
    pub targets: Vec<(String, String)>,
    /// Already-running mock-deps (with --targets).
    #[arg(long)]
    pub deps_url: Option<String>,
    /// Warm-up before each measured run, seconds at 10 requests/s (excluded from the results).
    #[arg(long, default_value_t = 5.0)]
    pub warmup_s: f64,
    /// Changes a mock's latency mid-run: DEP=MS@START+DURATION, seconds into the measured run
    /// (e.g. pay=5000@30+30: payment answers in 5 s from t=30 s to t=60 s). `broker=MS@…` (only
    /// with --scenario events) adds MS to every round trip to NATS in its healthy runs.
    // Parsed here with its times as given; the lab multiplies them by --duration-scale.
    #[arg(long, value_parser = |spec: &str| Injection::parse(spec, 1.0))]
    pub inject: Option<Injection>,
    /// LEASE_MS for every API: how long an attempt owns its key (also bounds the end-of-run wait
    /// for CHARGING keys, with two recovery intervals).
    #[arg(long, default_value_t = 30_000)]
    pub lease_ms: u64,
    /// RECONCILE_INTERVAL_MS for every API: the period of its recovery loop.
    #[arg(long, default_value_t = 5000)]
    pub reconcile_interval_ms: u64,
    /// Faults during the measured run: pay-error=R,pay-hang=R,pay-charged-error=R,pay-cut=R,
    /// hang-ms=MS, kill-api@S[+DOWN],rolling-restart@S,restart-db@S, and outages db-freeze@S+LEN,
    /// slow-uploads=N@S+LEN,
    /// gateway-down@S+LEN, broker-ack=MS@S+LEN (the API with EVENTS_MODE=outbox, its NATS behind
    /// a proxy adding MS to each round trip) (seconds into the run; lengths unscaled; see
    /// docs/lab-interfaces.md).
    // Parsed here with its times as given; the lab multiplies them by --duration-scale.
    #[arg(long, value_parser = |spec: &str| FaultPlan::parse(spec, 1.0))]
    pub faults: Option<FaultPlan>,
    /// PERSIST_BATCH_MAX for every API: most orders per persist transaction (1: no batching).
    #[arg(long, default_value_t = 1)]
    pub persist_batch_max: usize,
    /// PERSIST_BATCH_WAIT_MS for every API: how long a persist batch waits for more orders.
    #[arg(long, default_value_t = 5)]
    pub persist_batch_wait_ms: u64,
    /// Admission control of the APIs the lab starts: `on` keeps each API's own MAX_IN_FLIGHT
    /// (blocking-api: its BLOCKING_THREADS; reactive-api: 4096), beyond which a request waits at
    /// most QUEUE_TIMEOUT_MS, then gets 503 overloaded; `off` sets MAX_IN_FLIGHT=0 (unlimited: every
    /// request queues, as in the original experiment).
    #[arg(long, value_enum, default_value_t = Shedding::On)]
    pub shedding: Shedding,
    /// QUEUE_TIMEOUT_MS for every API: the longest wait for admission (shedding on).
    #[arg(long, default_value_t = 100)]
    pub queue_timeout_ms: u64,
    /// MAX_LOOP_LAG_MS for every API with shedding on: new orders are refused while the event
    /// loop runs woken tasks later than this (the CPU is saturated). Shedding off sets 0.
    #[arg(long, default_value_t = 5)]
    pub max_loop_lag_ms: u64,
    /// REQUEST_DEADLINE_MS for every API: work not at the charge by then stops with 503
    /// [30000 with shedding on; with shedding off an hour, i.e. none: the original's behaviour].
    #[arg(long)]
    pub request_deadline_ms: Option<u64>,
    /// DB_STATEMENT_TIMEOUT_MS for every API (statement, lock and idle-in-transaction timeouts).
    #[arg(long, default_value_t = 5000)]
    pub db_statement_timeout_ms: u64,
}

/// `loadtest lab`'s command line: the options of every lab run ([`LabArgs`]), then what to run
/// and how to judge it, read once into a [`LabPlan`].
#[derive(Debug, Clone, Args)]
pub struct LabCommand {
    #[command(flatten)]
    pub run: LabArgs,
    /// Runs one of the scenarios instead: several lab runs, one comparison table (`loadtest
    /// scenarios` lists them too).
    #[arg(long, value_enum)]
    pub scenario: Option<ScenarioName>,
    /// `--scenario capacity`: narrow each search until the highest rate that met the objective
    /// and the lowest that missed it are at most R/s apart [default: 5 % of the rate found].
    #[arg(long, value_name = "R", value_parser = positive_rate)]
    pub resolution: Option<f64>,
    /// Service-level objective the verdict judges each API by, e.g. `p99<=2.5s,success>=99%`
    /// (percentile of every answer to the span's arrivals; 2xx share of the arrivals) [default:
    /// p99 ≤ the dependencies' critical path × 1.15, success ≥ 99 %].
    #[arg(long, value_parser = Slo::parse)]
    pub slo: Option<Slo>,
    /// Exit with status 4 when an API misses the objective (for CI).
    #[arg(long)]
    pub fail_on_slo: bool,
}

/// What `loadtest lab` runs, read once from its command line ([`LabCommand::plan`]).
#[derive(Debug, Clone)]
pub enum LabPlan {
    /// Every API under one load, its report judged by `slo` (default: derived from the runs);
    /// `fail_on_slo` makes a missed objective exit status 4.
    Comparison {
        runs: LabArgs,
        slo: Option<Slo>,
        fail_on_slo: bool,
    },
    /// A scenario: its lab runs derived from `base` ([`crate::scenario::run`]).
    Scenario {
        name: ScenarioName,
        base: LabArgs,
        judged: ScenarioJudging,
    },
}

/// How a scenario that judges its runs does (capacity's search: `--slo`, `--resolution`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ScenarioJudging {
    pub slo: Option<Slo>,
    pub resolution: Option<f64>,
}

impl LabCommand {
    pub fn plan(self) -> LabPlan {
        match self.scenario {
            Some(name) => LabPlan::Scenario {
                name,
                base: self.run,
                judged: ScenarioJudging {
                    slo: self.slo,
                    resolution: self.resolution,
                },
            },
            None => LabPlan::Comparison {
                runs: self.run,
                slo: self.slo,
                fail_on_slo: self.fail_on_slo,
            },
        }
    }
}

impl LabArgs {
    /// The options of `loadtest lab FLAGS…` (what a scenario, the bench's memory runs and the
    /// tests start from).
    pub fn from_flags<I, T>(flags: I) -> Result<LabArgs, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        #[derive(clap::Parser)]
        struct Lab {
            #[command(flatten)]
            lab: LabArgs,
        }
        let argv = std::iter::once(std::ffi::OsString::from("lab"))
            .chain(flags.into_iter().map(Into::into));
        <Lab as clap::Parser>::try_parse_from(argv).map(|l| l.lab)
    }

    /// `--inject broker=MS@START+DURATION` as (start s, duration s, ms), scaled like the profile.
    pub fn inject_broker(&self) -> Option<(f64, f64, u64)> {
        use lab_results::inject::Dep;
        let i = self.inject.filter(|i| i.dependency == Dep::Broker)?;
        let scale = self.load.duration_scale;
        Some((i.start_s * scale, i.duration_s * scale, i.latency_ms))
    }
}

/// Parses `seller=200,risk=1000,pay=1000` (any order, `payment` also accepted, missing = seed value).
pub fn parse_latency(text: &str) -> Result<MockLatencies> {
    let mut l = SEED_LATENCIES;
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .with_context(|| format!("--latency: {part:?} is not name=ms"))?;
        let ms: u64 = v
            .trim()
            .trim_end_matches("ms")
            .parse()
            .with_context(|| format!("--latency: {v:?} is not a number of ms"))?;
        match k.trim() {
            "seller" => l.seller = ms,
            "risk" => l.risk = ms,
            "pay" | "payment" => l.payment = ms,
            other => bail!("--latency: unknown dependency {other:?} (seller, risk, pay)"),
        }
    }
    Ok(l)
}

/// Parses one `name=url` pair of `--targets`.
pub fn parse_target(t: &str) -> Result<(String, String)> {
    let (name, url) = t
        .split_once('=')
        .with_context(|| format!("--targets: {t:?} is not name=url"))?;
    if !url.starts_with("http://") && !url.starts_with("https://") {
        bail!("--targets: {url:?} is not an http(s) URL");
    }
    Ok((
        name.trim().to_owned(),
        url.trim().trim_end_matches('/').to_owned(),
    ))
}

/// `blocking` → (`blocking-api`, `blocking`); `blocking-api` → same; any other name is kept as
/// the API's, and without an `-api` suffix as its label.
pub fn api_names(name: &str) -> (String, String) {
    match ApiKind::of(name) {
        Some(kind) => (kind.name().to_owned(), kind.label().to_owned()),
        None => (
            name.to_owned(),
            name.strip_suffix("-api").unwrap_or(name).to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_and_targets() {
        let l = parse_latency("risk=500, seller=100").unwrap();
        assert_eq!((l.seller, l.risk, l.payment), (100, 500, 1000));
        assert_eq!(parse_latency("pay=5ms").unwrap().payment, 5);
        assert!(parse_latency("db=1").is_err());
        let t = parse_target("blocking=http://blocking-api:8081/").unwrap();
        assert_eq!(
            t,
            ("blocking".to_owned(), "http://blocking-api:8081".to_owned())
        );
        assert!(parse_target("x").is_err());
        assert_eq!(pg_setting("commit_delay=10").unwrap(), "commit_delay=10");
        assert_eq!(
            pg_setting("pg_stat_statements.track=none").unwrap(),
            "pg_stat_statements.track=none"
        );
        assert!(pg_setting("fsync").is_err(), "no value");
        assert!(pg_setting("x;drop=1").is_err(), "not a name");
        assert_eq!(
            api_names("reactive"),
            ("reactive-api".into(), "reactive".into())
        );
        assert_eq!(
            api_names("blocking-api"),
            ("blocking-api".into(), "blocking".into())
        );
    }
}

/// `--blocking-threads`: a number, or `auto` (sized by Little's law when the run's profile and
/// latencies are known).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockingThreads {
    Fixed(u32),
    Auto,
}

/// The share of arrivals `auto`'s pool may turn away at the profile's peak: a tenth of the
/// objective's 1 % allowance. With `MAX_IN_FLIGHT` = `BLOCKING_THREADS` (blocking-api's
/// default) an order that finds every thread busy waits at most `QUEUE_TIMEOUT_MS` (100 ms)
/// for one, then is refused: against a hold of seconds that is Erlang's loss system, against
/// one of 30 ms a short queue that refuses fewer. Little's law gives the mean busy threads,
/// Erlang B the threads random arrivals need on top with no wait at all — exact at long
/// paths, on the safe side at short ones (for 2.5 busy 3 threads would turn away 28 %, 9
/// threads 0.09 %; for 194 busy, 231 threads).
pub const AUTO_THREADS_LOSS: f64 = 0.001;

/// The fewest servers that turn away at most `loss` of Poisson arrivals offering `erlangs`
/// (rate × hold), by Erlang B's recursion `B(c) = a·B(c−1) ÷ (c + a·B(c−1))`, `B(0) = 1`.
pub fn erlang_b_servers(erlangs: f64, loss: f64) -> u32 {
    let (mut servers, mut b) = (0_u32, 1.0_f64);
    while b > loss && servers < 1_000_000 {
        servers += 1;
        b = erlangs * b / (f64::from(servers) + erlangs * b);
    }
    servers.max(1)
}

impl BlockingThreads {
    pub fn parse(s: &str) -> Result<BlockingThreads, String> {
        if s == "auto" {
            return Ok(BlockingThreads::Auto);
        }
        s.parse::<u32>()
            .ok()
            .filter(|n| *n > 0)
            .map(BlockingThreads::Fixed)
            .ok_or_else(|| format!("--blocking-threads {s:?}: a thread count (> 0) or auto"))
    }

    /// The thread count for a profile whose peak arrival rate is `peak_rps` (open model) or
    /// whose clients are `clients` (closed model), with dependencies on `critical_path_ms`.
    pub fn resolve(self, peak_rps: f64, clients: Option<u64>, critical_path_ms: u64) -> u32 {
        match self {
            BlockingThreads::Fixed(n) => n,
            BlockingThreads::Auto => match clients {
                Some(c) => c.clamp(1, u64::from(u32::MAX)) as u32,
                None => erlang_b_servers(
                    peak_rps * critical_path_ms as f64 / 1000.0,
                    AUTO_THREADS_LOSS,
                ),
            },
        }
    }

    /// The count, `None` for `auto` before it is resolved.
    pub fn fixed(self) -> Option<u32> {
        match self {
            BlockingThreads::Fixed(n) => Some(n),
            BlockingThreads::Auto => None,
        }
    }
}

impl std::fmt::Display for BlockingThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BlockingThreads::Fixed(n) => write!(f, "{n}"),
            BlockingThreads::Auto => f.write_str("auto"),
        }
    }
}

#[cfg(test)]
mod blocking_threads_tests {
    use super::*;

    #[test]
    fn auto_is_erlang_b_on_littles_law() {
        let auto = BlockingThreads::parse("auto").unwrap();
        // 750/s × 2.2 s = 1,650 threads busy on average; random arrivals need 88 more for
        // at most 0.1 % to find all of them busy.
        assert_eq!(auto.resolve(750.0, None, 2200), 1738);
        assert_eq!(auto.resolve(300.0, None, 2200), 721);
        // A small pool needs far more than its mean: 84/s held 30 ms is 2.5 busy, and 3 threads
        // would turn away 28 % of the orders.
        assert_eq!(auto.resolve(84.0, None, 30), 9);
        assert_eq!(auto.resolve(0.0, None, 2200), 1, "never an empty pool");
        assert_eq!(
            auto.resolve(0.0, Some(30), 2200),
            30,
            "closed: one per client"
        );
        assert_eq!(
            BlockingThreads::parse("200")
                .unwrap()
                .resolve(750.0, None, 2200),
            200
        );
        assert!(BlockingThreads::parse("0").is_err());
        assert!(BlockingThreads::parse("many").is_err());
    }

    /// Erlang B's tables: 1 erlang on 1 server loses 50 %, on 2 servers 20 %; 10 erlangs need
    /// 18 servers for 1 % and 21 for 0.1 % (B(20, 10) = 0.19 %, B(21, 10) = 0.089 %).
    #[test]
    fn erlang_b_matches_its_tables() {
        assert_eq!(erlang_b_servers(1.0, 0.5), 1);
        assert_eq!(erlang_b_servers(1.0, 0.49), 2);
        assert_eq!(erlang_b_servers(1.0, 0.25), 2);
        assert_eq!(erlang_b_servers(10.0, 0.01), 18);
        assert_eq!(erlang_b_servers(10.0, 0.001), 21);
    }
}
