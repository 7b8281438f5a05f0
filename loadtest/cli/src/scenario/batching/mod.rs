//! `--scenario batching` (experiment E): orders per second against the persist batch
//! size, with durable commits — the application's group commit beside PostgreSQL's own.
//!
//! The source (a directory server's mailing list) measured adds/s against updates per
//! transaction: every commit pays a synchronous flush, so more work per commit is more work per
//! second. Here: PostgreSQL durable (`fsync`, `synchronous_commit` on, the lab's default), its flush
//! cost measured first with `pg_test_fsync`; mocks at 0 ms, so the write path is all there is;
//! a closed model with `CLIENTS` clients for `CELL_S` s (× `--duration-scale`) after the usual
//! warm-up; `PERSIST_BATCH_MAX` {1, 2, 10, 100, 1000} × database RTT {0, 6.5 ms} × both APIs, then
//! per API one run with `PERSIST_BATCH_MAX` 1 and PostgreSQL's `commit_delay`/`commit_siblings`;
//! then, to show what batching costs one order when nothing queues, batch 1 and 100 at an
//! unsaturated `LOW_RATE` orders/s (open model) per API.
//! Pool of `POOL` (the db-latency scenario's), admission control off (the closed model bounds
//! what is in flight). The runs and these constants are planned in `plan.rs`; the rows
//! and `scenario.json` are computed in `rows.rs`, the table formatted by
//! `lab_report::scenario::batching`.

mod ceiling;
mod fsync;
pub(super) mod plan;
mod rows;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use lab_results::RunResults;
use sqlx::Connection;

use crate::lab_args::{Durability, LabArgs};
use crate::services::Database;
use lab_report::scenario::{ScenarioTable, render_html, render_markdown};
use plan::{COMMIT_SIBLINGS, Cell, ServerSettings, cells, commit_delay_us};

/// Runs the scenario: the flush figure, the database once for all runs, each run with its
/// `commit_delay`, then `summary.md`, `scenario.html` and `scenario.json`.
pub async fn run(base: LabArgs) -> Result<(ScenarioTable, PathBuf)> {
    let out = base.harness.out.clone().unwrap_or_else(|| {
        Path::new("reports").join(format!(
            "{}-scenario-batching",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ))
    });
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    eprintln!("scenario batching: measuring the flush cost with pg_test_fsync");
    let fsync = tokio::task::spawn_blocking(fsync::measure).await?;
    if let Err(why) = &fsync {
        eprintln!("scenario batching: no flush figure: {why}");
    }
    let url = base.harness.database_url.clone();
    let harness = base.harness.clone();
    let open = move || {
        Database::open_with_settings(url.as_deref(), Durability::On, &harness.pg_setting_pairs())
    };
    let db = tokio::task::spawn_blocking(open).await??;
    let server = server_settings(&db.url).await?;
    let cells = cells(&base, commit_delay_us(fsync.as_ref().ok()));
    let mut done: Vec<(Cell, Vec<RunResults>)> = Vec::new();
    let total = cells.len();
    for (i, cell) in cells.into_iter().enumerate() {
        eprintln!(
            "scenario batching: run {}/{total} — {}",
            i + 1,
            cell.variant.slug
        );
        set_commit_delay(&db.url, cell.commit_delay_us).await?;
        let mut args = cell.variant.args.clone();
        args.harness.out = Some(out.join(&cell.variant.slug));
        let shared = db.shared(args.harness.db_via);
        let ran = crate::lab::lab(args, Some(shared)).await;
        set_commit_delay(&db.url, None).await?;
        let (runs, vout) =
            ran.with_context(|| format!("scenario batching, {}", cell.variant.slug))?;
        lab_report::write_report(&runs, &vout)?;
        done.push((cell, runs));
    }
    drop(db);
    let mut table = rows::table(&done, fsync.as_ref(), &server);
    let json = serde_json::to_value(rows::json(&done, fsync.as_ref(), &server))?;
    std::fs::write(
        out.join("scenario.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    super::findings::apply_batching(&mut table, &json)?;
    table.conditions = super::conditions::conditions();
    std::fs::write(out.join("summary.md"), render_markdown(&table))?;
    std::fs::write(out.join("scenario.html"), render_html(&table))?;
    Ok((table, out))
}

/// `commit_delay` (µs; `None`: PostgreSQL's default, 0) and `commit_siblings` for the next run,
/// with `ALTER SYSTEM` and a reload (the lab's cluster: a superuser). The API connects afresh for
/// each run, so its sessions start with the new value.
async fn set_commit_delay(url: &str, delay_us: Option<u64>) -> Result<()> {
    let set = apply_commit_delay(url, delay_us).await;
    match (set, delay_us) {
        // Back to the default on a server the lab may not alter: it was never changed there.
        (Err(e), None) => {
            eprintln!("scenario batching: commit_delay left as it is: {e:#}");
            Ok(())
        }
        (set, _) => set,
    }
}

async fn apply_commit_delay(url: &str, delay_us: Option<u64>) -> Result<()> {
    let mut conn = sqlx::PgConnection::connect(url)
        .await
        .context("connecting to PostgreSQL to set commit_delay")?;
    let statements: Vec<String> = match delay_us {
        Some(us) => vec![
            format!("ALTER SYSTEM SET commit_delay = {us}"),
            format!("ALTER SYSTEM SET commit_siblings = {COMMIT_SIBLINGS}"),
        ],
        None => vec![
            "ALTER SYSTEM RESET commit_delay".to_owned(),
            "ALTER SYSTEM RESET commit_siblings".to_owned(),
        ],
    };
    for sql in statements
        .into_iter()
        .chain(["SELECT pg_reload_conf()".to_owned()])
    {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.clone()))
            .execute(&mut conn)
            .await
            .with_context(|| format!("{sql} (needs a superuser: the lab's own cluster is one)"))?;
    }
    conn.close().await.ok();
    // The reload is asynchronous: give the postmaster a moment before the API connects.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    Ok(())
}

/// The durability settings in force, read from the server.
async fn server_settings(url: &str) -> Result<ServerSettings> {
    let mut conn = sqlx::PgConnection::connect(url)
        .await
        .context("connecting to PostgreSQL")?;
    let mut s = Vec::new();
    for name in [
        "server_version",
        "fsync",
        "synchronous_commit",
        "full_page_writes",
        "wal_sync_method",
        "commit_delay",
        "commit_siblings",
    ] {
        let value: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SHOW {name}")))
            .fetch_one(&mut conn)
            .await
            .with_context(|| format!("SHOW {name}"))?;
        s.push((name.to_owned(), value));
    }
    conn.close().await.ok();
    Ok(ServerSettings(s))
}
