//! PostgreSQL: the database the APIs use, the lab's own ephemeral cluster or one it is given.

use anyhow::{Context, Result};
use labkit::pg::EphemeralPostgres;

use crate::lab_args::Durability;

/// The database the APIs use.
#[derive(Debug)]
pub struct Database {
    pub url: String,
    /// The postmaster, when the lab started the cluster (sampled with its backends).
    pub pid: Option<u32>,
    cluster: Option<EphemeralPostgres>,
}

impl Database {
    /// `url` if given, else an ephemeral cluster from the system's PostgreSQL binaries.
    pub fn open(url: Option<&str>) -> Result<Database> {
        Self::open_with(url, Durability::On)
    }

    /// [`Database::open_with`] with the harness's `--pg-setting`s.
    pub fn open_for(url: Option<&str>, harness: &crate::lab_args::HarnessArgs) -> Result<Database> {
        Self::open_with_settings(url, harness.db_durability, &harness.pg_setting_pairs())
    }

    /// [`Database::open`]; an ephemeral cluster is durable with [`Durability::On`] (`fsync`,
    /// `synchronous_commit` and `full_page_writes` on, which labkit turns off by default): every
    /// commit waits for its WAL flush, and a committed order survives an immediate restart.
    pub fn open_with(url: Option<&str>, durability: Durability) -> Result<Database> {
        Self::open_with_settings(url, durability, &[])
    }

    /// [`Database::open_with`] with more server settings for an ephemeral cluster.
    pub fn open_with_settings(
        url: Option<&str>,
        durability: Durability,
        extra: &[(&str, &str)],
    ) -> Result<Database> {
        if let Some(url) = url {
            return Ok(Database {
                url: url.to_owned(),
                pid: None,
                cluster: None,
            });
        }
        let mut overrides: Vec<(&str, &str)> = match durability {
            Durability::On => vec![
                ("fsync", "on"),
                ("synchronous_commit", "on"),
                ("full_page_writes", "on"),
            ],
            Durability::Off => Vec::new(),
        };
        overrides.extend_from_slice(extra);
        let pg = EphemeralPostgres::start_with_settings(&overrides).context(
            "starting an ephemeral PostgreSQL (install the PostgreSQL server package, e.g. \
             `apt-get install postgresql`, or pass --database-url postgres://…)",
        )?;
        Ok(Database {
            url: pg.url(),
            pid: Some(pg.pid()),
            cluster: Some(pg),
        })
    }

    /// The URL the APIs are given: the lab's own cluster over its Unix-domain socket (both APIs
    /// alike; the harness's PostgreSQL CPU per order is what it saves) unless `via` says TCP, any
    /// other database at `url`. A `--db-rtt-ms` proxy is TCP and takes [`Database::url`] instead.
    pub fn api_url(&self, via: crate::lab_args::DbVia) -> String {
        match (&self.cluster, via) {
            (Some(pg), crate::lab_args::DbVia::Socket) => pg.socket_url(),
            _ => self.url.clone(),
        }
    }

    /// This database as a scenario's runs share it (the scenario started it for all of them),
    /// its APIs reaching it as `via` says.
    pub fn shared(&self, via: crate::lab_args::DbVia) -> SharedDatabase {
        SharedDatabase {
            url: self.url.clone(),
            api_url: self.api_url(via),
            lab_owned: self.is_ephemeral(),
            pid: self.pid,
        }
    }

    /// `true` when the lab started this cluster (and so may restart it).
    pub fn is_ephemeral(&self) -> bool {
        self.cluster.is_some()
    }

    /// `pg_ctl restart -m immediate` of the lab's own cluster (a crash and recovery).
    pub fn restart_immediate(&self) -> Result<u32> {
        self.cluster
            .as_ref()
            .context("the database is not the lab's own cluster: it cannot be restarted")?
            .restart_immediate()
    }
}

/// A database a scenario started for all its runs, as a run ([`crate::lab::lab`]) is pointed at
/// it: the lab's own connections at `url`, the APIs at `api_url`, its postmaster sampled and its
/// durability stated as when the lab starts it.
#[derive(Debug, Clone)]
pub struct SharedDatabase {
    pub url: String,
    /// The cluster's Unix-domain socket ([`Database::api_url`]), where `url` is TCP.
    pub api_url: String,
    /// The lab started it: its durability is the lab's to state.
    pub lab_owned: bool,
    pub pid: Option<u32>,
}
