//! What every run of one `loadtest lab` shares, set up once before the first ([`super::lab`]
//! calls these in order): blocking-api's pool size, the services built and the harness placed,
//! the database (pinned to the harness's CPUs), the flags checked against what the lab controls,
//! mock-deps, the latency proxy in front of the database and the slowed broker of a fault plan.

use super::*;

/// The pool of blocking-api's threads: `--blocking-threads`, with `auto` resolved for this run's
/// profile and latencies (Erlang B on Little's law), said on stderr and returned with the rule as
/// a condition of the run.
pub(super) fn pool_threads(args: &LabArgs, profile: &Profile) -> (u32, Option<String>) {
    let auto = match args.blocking_threads {
        BlockingThreads::Fixed(n) => return (n, None),
        BlockingThreads::Auto => BlockingThreads::Auto,
    };
    let peak = profile
        .phases
        .iter()
        .map(|p| p.from_rate.max(p.to_rate))
        .fold(0.0, f64::max);
    let clients = match profile.model {
        loadgen::profile::Model::Closed { clients, .. }
        | loadgen::profile::Model::ClosedFor { clients, .. } => Some(clients),
        loadgen::profile::Model::Open => None,
    };
    let path = args.latency.critical_path_ms();
    let (held_ms, held_by) = match args.thread_hold_ms {
        Some(ms) => (ms.ceil() as u64, "measured hold of a thread"),
        None => (path, "critical path"),
    };
    let n = auto.resolve(peak, clients, held_ms);
    let rule = match clients {
        Some(c) => format!("auto: one per closed-model client ({c})"),
        None => format!(
            "auto: Erlang B, {peak:.0}/s peak × {:.3} s {held_by} = {:.1} threads busy, at most \
             {}% of arrivals finding all busy",
            held_ms as f64 / 1000.0,
            peak * held_ms as f64 / 1000.0,
            AUTO_THREADS_LOSS * 100.0
        ),
    };
    eprintln!("lab: --blocking-threads {n} ({rule})");
    (n, Some(rule))
}

/// Builds the APIs and mock-deps the lab starts, and places the harness on its CPUs before any
/// harness process starts: each inherits them.
pub(super) async fn build_and_place(args: &LabArgs) -> Result<()> {
    let apis = args.harness.apis.clone();
    tokio::task::spawn_blocking(move || crate::services::build_services(&apis)).await??;
    if let Err(why) = crate::services::place_harness(!args.harness.no_pin)? {
        eprintln!("lab: {why}");
    }
    Ok(())
}

/// The scenario's shared database, else `--database-url`'s PostgreSQL, else the lab's own when
/// it starts the APIs; none for `--targets` alone.
pub(super) async fn open_database(
    args: &LabArgs,
    shared: Option<&SharedDatabase>,
) -> Result<Option<Arc<Database>>> {
    let db_url = shared
        .map(|s| s.url.clone())
        .or_else(|| args.harness.database_url.clone());
    let ephemeral = args.targets.is_empty();
    if db_url.is_none() && !ephemeral {
        return Ok(None);
    }
    let harness = args.harness.clone();
    let open = move || Database::open_for(db_url.as_deref(), &harness);
    Ok(Some(Arc::new(tokio::task::spawn_blocking(open).await??)))
}

/// PostgreSQL on the harness's CPUs, never the API's, wherever it was started: a scenario starts
/// the database its runs share before any run placed the harness, and a process keeps the CPUs
/// it started with (its backends fork from the postmaster and inherit them).
pub(super) fn pin_database(args: &LabArgs, postgres_pid: Option<u32>) -> Result<()> {
    if let Some(pid) = postgres_pid
        && args.targets.is_empty()
        && let Ok(p) = crate::services::place_harness(!args.harness.no_pin)?
    {
        labkit::affinity::pin_tree(pid, &p.harness_cpus).with_context(|| {
            format!("pinning PostgreSQL (pid {pid}) to CPU {:?}", p.harness_cpus)
        })?;
    }
    Ok(())
}

/// The faults and the dependency client the flags ask for, against what the lab controls.
pub(super) fn check_faults_and_clients(
    args: &LabArgs,
    faults: Option<FaultPlan>,
    db: Option<&Database>,
) -> Result<()> {
    if faults.is_some_and(|f| f.restart_db_at_s.is_some()) && !db.is_some_and(|d| d.is_ephemeral())
    {
        bail!(
            "--faults restart-db needs the lab's own PostgreSQL (no --database-url, no --targets)"
        );
    }
    if args.deps_http == Some(DepsHttp::H2c)
        && args.blocking_client == DepsClient::Ureq
        && args
            .harness
            .apis
            .iter()
            .any(|a| ApiKind::of(a).is_some_and(|k| k.has_thread_pool()))
    {
        bail!(
            "--deps-http h2c: blocking-api's ureq client speaks HTTP/1.1 only; add \
             --blocking-client reqwest-blocking"
        );
    }
    if faults.is_some_and(|f| f.ends_the_api()) && !args.targets.is_empty() {
        bail!(
            "--faults kill-api and rolling-restart need APIs the lab starts itself (no --targets)"
        );
    }
    Ok(())
}

/// The lab's own mock-deps, unless `--deps-url` names one (which `--targets` needs).
pub(super) async fn start_mock_deps(
    args: &LabArgs,
    logs: &Path,
) -> Result<Option<MockDepsProcess>> {
    match (&args.deps_url, args.targets.is_empty()) {
        (Some(_), _) => Ok(None),
        (None, true) => {
            let logs = logs.to_owned();
            Ok(Some(
                tokio::task::spawn_blocking(move || MockDepsProcess::start(&logs)).await??,
            ))
        }
        (None, false) => bail!("--targets needs --deps-url (the mock-deps the APIs call)"),
    }
}

/// Each API to run as (name, label, its URL when it is already running).
pub(super) fn apis_to_run(args: &LabArgs) -> Vec<(String, String, Option<String>)> {
    if args.targets.is_empty() {
        args.harness
            .apis
            .iter()
            .map(|a| {
                let (api, label) = api_names(a);
                (api, label, None)
            })
            .collect()
    } else {
        args.targets
            .iter()
            .map(|(n, url)| {
                let (api, label) = api_names(n);
                (api, label, Some(url.clone()))
            })
            .collect()
    }
}

/// Experiment D: a TCP proxy adds the round-trip time of a farther database. A database freeze
/// needs one too (at the RTT asked for, zero included): it is what freezes.
pub(super) async fn database_proxy(
    args: &LabArgs,
    faults: Option<FaultPlan>,
    db: Option<&Database>,
) -> Result<Option<Arc<latency_proxy::LatencyProxy>>> {
    let freezes = faults.is_some_and(|f| f.db_freeze.is_some());
    if freezes && db.is_none() {
        bail!("--faults db-freeze needs a database the lab knows (not --targets alone)");
    }
    let Some(db) = db.filter(|_| args.harness.db_rtt_ms > 0.0 || freezes) else {
        return Ok(None);
    };
    let (upstream, rtt) = (
        latency_proxy::upstream_of(&db.url)?,
        Duration::from_secs_f64(args.harness.db_rtt_ms / 1000.0),
    );
    let started = if freezes {
        latency_proxy::LatencyProxy::start_adjustable(upstream, rtt).await
    } else {
        latency_proxy::LatencyProxy::start(upstream, rtt).await
    };
    Ok(Some(Arc::new(
        started.context("starting the database latency proxy")?,
    )))
}

/// Where the APIs find the database: through the proxy when there is one, else the URL a
/// scenario's shared database gave, else the database's own for `--db-via`.
pub(super) fn api_database_url(
    args: &LabArgs,
    db: Option<&Database>,
    proxy: Option<&latency_proxy::LatencyProxy>,
    shared: Option<&SharedDatabase>,
) -> Result<Option<String>> {
    Ok(match (db, proxy) {
        (Some(db), Some(p)) => Some(latency_proxy::proxied_url(&db.url, p.local_addr())?),
        (Some(db), None) => Some(
            shared
                .map(|s| s.api_url.clone())
                .unwrap_or_else(|| db.api_url(args.harness.db_via)),
        ),
        _ => None,
    })
}

/// NATS behind its latency proxy, for a fault plan that slows the broker's acknowledgements.
pub(super) async fn broker_for(
    faults: Option<FaultPlan>,
    has_db: bool,
    starts_apis: bool,
) -> Result<Option<slow_broker::SlowBroker>> {
    if faults.is_none_or(|f| f.broker_ack.is_none()) {
        return Ok(None);
    }
    if !has_db || !starts_apis {
        bail!("--faults broker-ack needs APIs and a database the lab starts itself (no --targets)");
    }
    Ok(Some(slow_broker::SlowBroker::start().await?))
}
