//! One smoke run of `loadtest lab` against reactive-api alone: the service binaries checked, an
//! output folder and (where `TEST_DATABASE_URL` names a server) a database of its own, both
//! removed by [`SmokeRun::clean_up`]. The test gives the load, the latencies and the faults.

use std::path::PathBuf;
use std::process::Command;

use lab_results::RunResults;

use crate::common::{binaries_present, drop_database, own_database};

pub struct SmokeRun {
    pub out: PathBuf,
    /// The database's URL, its server and its name (dropped by [`SmokeRun::clean_up`]).
    db: Option<(String, String, String)>,
}

impl SmokeRun {
    /// The folder `loadtest-<name>-smoke-<pid>` (emptied) and the database `loadtest_<name>_smoke`.
    pub async fn new(name: &str) -> SmokeRun {
        if let Err(e) = binaries_present() {
            panic!(
                "the {name} smoke test needs the service binaries ({e}); scripts/test.sh builds them"
            );
        }
        let out =
            std::env::temp_dir().join(format!("loadtest-{name}-smoke-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let db = match std::env::var("TEST_DATABASE_URL") {
            Ok(server) => Some(own_database(&server, &format!("loadtest_{name}_smoke")).await),
            Err(_) => None,
        };
        SmokeRun { out, db }
    }

    /// `loadtest lab --apis reactive-api ARGS… --no-progress --out OUT [--database-url URL]`.
    pub fn lab(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_loadtest"));
        cmd.env_remove("CARGO")
            .args(["lab", "--apis", "reactive-api"])
            .args(args)
            .arg("--no-progress")
            .arg("--out")
            .arg(&self.out);
        if let Some((url, _, _)) = &self.db {
            cmd.args(["--database-url", url]);
        }
        cmd
    }

    /// The URL of the run's own database, where `TEST_DATABASE_URL` named a server.
    #[allow(dead_code)] // each test binary compiles this file; not every one reads the database
    pub fn database_url(&self) -> Option<&str> {
        self.db.as_ref().map(|(url, _, _)| url.as_str())
    }

    /// The run's results file.
    pub fn results(&self) -> RunResults {
        RunResults::load(self.out.join("results-reactive-0.json")).unwrap()
    }

    pub async fn clean_up(self) {
        if let Some((_, server, name)) = &self.db {
            drop_database(server, name).await;
        }
        let _ = std::fs::remove_dir_all(&self.out);
    }
}
