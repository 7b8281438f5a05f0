//! The harness every cell of a bench shares, started once: PostgreSQL (pinned with the harness)
//! and the bench's own session to it, mock-deps, and the latency proxy of `--db-rtt-ms`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sqlx::Connection;

use super::{BenchArgs, probe};
use crate::services::{Database, MockDepsProcess};
use lab_results::bench::Pinning;

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

pub(super) async fn start_harness(
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
