//! Two shards make one run: `loadtest run --shard 0/2` and `--shard 1/2` as two processes with
//! one `--start-at`, against one API, then `loadtest merge` — against a one-generator run of the
//! same profile on the same API. The counts must agree exactly (offered, sent, completed, 201s,
//! per phase), every merge check must hold (each shard offered its arrivals, together the whole
//! schedule once, the orders in the database, the ledger, the money), and the plateau's latency
//! must agree within the tolerance below.
//!
//! Needs the service binaries (`scripts/test.sh` builds them); PostgreSQL: a fresh database on
//! `TEST_DATABASE_URL`'s server, else an ephemeral cluster.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lab_results::{MockLatencies, RunResults};
use loadtest::run::{reset_mock, set_mock_latencies};
use loadtest::services::{ApiProcess, Database, MockDepsProcess};

mod common;

/// 50 arrivals/s for 8 s, all of it the plateau: 400 orders, 200 per shard.
const PROFILE: &str = "constant-50-8";
/// The merged plateau's percentiles are checked against the shards' own: a percentile of two
/// histograms added up lies between the two shards' (each is a weighted mean of their
/// distributions), within the histograms' 3 significant digits — an exact property of a merge,
/// which no neighbour's compile can move. Against the one-generator run (another run, not the
/// same measurement added up two ways) they are only required to be of the same order (within a
/// factor of 2): enough to catch a merged histogram that is one shard's or a sum of percentiles.
const HDR_PRECISION: f64 = 0.001;

fn loadtest(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_loadtest"))
        .args(args)
        .output()
        .expect("running loadtest");
    assert!(
        out.status.success(),
        "loadtest {args:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shards_merge_into_the_run_one_generator_makes() {
    if let Err(e) = common::binaries_present() {
        panic!("needs the service binaries ({e}); scripts/test.sh builds them");
    }
    let dir = std::env::temp_dir().join(format!("loadtest-shards-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let own = match std::env::var("TEST_DATABASE_URL") {
        Ok(server) => Some(common::own_database(&server, "loadtest_shards").await),
        Err(_) => None,
    };
    let db = Database::open(own.as_ref().map(|(url, _, _)| url.as_str())).unwrap();
    let mock = MockDepsProcess::start(&dir).unwrap();
    let api = start_api(&db, &mock, &dir).await;
    let rig = Rig {
        dir: &dir,
        api_url: &api.url,
        checked: ["--database-url", &db.url, "--deps-url", &mock.url].map(str::to_owned),
    };

    let one = rig.one_generator();
    loadtest::invariants::truncate(&db.url).await.unwrap();
    reset_mock(&mock.url).await.unwrap();
    let (two, merged_dir) = rig.two_shards_merged();

    counts_and_checks_agree(&one, &two);
    latencies_agree(&one, &two, &rig);
    let summary = std::fs::read_to_string(merged_dir.join("summary.md")).unwrap();
    assert!(summary.contains("2 shards"), "{summary}");
    let html = std::fs::read_to_string(merged_dir.join("report.html")).unwrap();
    assert!(html.contains("id=\"shards\""));

    api.stop().unwrap();
    drop(mock);
    if let Some((_, server, name)) = own {
        common::drop_database(&server, &name).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// reactive-api on `db`, its dependencies at 20 ms each.
async fn start_api(db: &Database, mock: &MockDepsProcess, dir: &Path) -> ApiProcess {
    let mocks = MockLatencies {
        seller: 20,
        risk: 20,
        payment: 20,
    };
    set_mock_latencies(&mock.url, mocks).await.unwrap();
    let settings: BTreeMap<String, String> = [
        ("DATABASE_URL", db.url.as_str()),
        ("DEPS_URL", mock.url.as_str()),
        ("REQUEST_HASH_KEY", "shard-test-request-hash-key"),
        ("DB_POOL_SIZE", "10"),
        // A descheduled API on a shared machine must not refuse orders: not what is tested here.
        ("MAX_LOOP_LAG_MS", "0"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    ApiProcess::start("reactive-api", &settings, None, dir).unwrap()
}

/// The test's folder, the API the runs load, and the checks' flags (database and ledger).
struct Rig<'a> {
    dir: &'a Path,
    api_url: &'a str,
    checked: [String; 4],
}

impl Rig<'_> {
    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// `loadtest run` of the profile with run id `run_id` and the seed both runs share.
    fn run_args(&self, run_id: &str) -> Vec<String> {
        [
            "run",
            "--target",
            self.api_url,
            "--profile",
            PROFILE,
            "--run-id",
            run_id,
            "--seed",
            "7",
            "--no-progress",
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// The run with one generator, checked against the database and the ledger.
    fn one_generator(&self) -> RunResults {
        let one_path = self.path("one.json");
        let mut args = self.run_args("one");
        args.extend(self.checked.clone());
        args.extend(["--out".to_owned(), one_path.clone()]);
        loadtest(&args.iter().map(String::as_str).collect::<Vec<_>>());
        RunResults::load(&one_path).unwrap()
    }

    /// Two generators with one start, then `loadtest merge` of their results with the checks;
    /// the merged results and their folder.
    fn two_shards_merged(&self) -> (RunResults, std::path::PathBuf) {
        let start_at = SystemTime::now() + Duration::from_secs(4);
        let start_ms = start_at
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis()
            .to_string();
        let shards: Vec<_> = (0..2)
            .map(|i| {
                let mut args = self.run_args("two");
                args.extend(["--shard".to_owned(), format!("{i}/2")]);
                args.extend(["--start-at".to_owned(), start_ms.clone()]);
                args.extend(["--out".to_owned(), self.path(&format!("shard-{i}.json"))]);
                Command::new(env!("CARGO_BIN_EXE_loadtest"))
                    .args(&args)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("starting a shard")
            })
            .collect::<Vec<_>>();
        for (i, s) in shards.into_iter().enumerate() {
            let s = s.wait_with_output().expect("a shard ran");
            assert!(
                s.status.success(),
                "shard {i}/2:\n{}",
                String::from_utf8_lossy(&s.stderr)
            );
        }
        let merged_dir = self.path("merged");
        let mut args = vec![
            "merge".to_owned(),
            self.path("shard-0.json"),
            self.path("shard-1.json"),
        ];
        args.extend(self.checked.clone());
        args.extend(["--out".to_owned(), merged_dir.clone()]);
        loadtest(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let merged_dir = std::path::PathBuf::from(merged_dir);
        let two = RunResults::load(merged_dir.join("results.json")).unwrap();
        (two, merged_dir)
    }
}

/// The merged counts are the one generator's, exactly, and every merge check holds.
fn counts_and_checks_agree(one: &RunResults, two: &RunResults) {
    let counts = |r: &RunResults| {
        let s = &r.summary;
        let p = r.plateau.as_ref().expect("a plateau");
        (
            s.offered,
            s.sent,
            s.not_sent,
            s.completed,
            s.ok,
            p.offered,
            p.ok,
        )
    };
    assert_eq!(counts(two), counts(one), "merged counts = one generator's");
    assert_eq!(one.summary.ok, 400, "{:?}", one.summary.errors_by_kind);
    assert_eq!(two.shards.len(), 2);
    for c in &two.invariants {
        assert_eq!(c.ok, Some(true), "merged: {} — {}", c.name, c.detail);
    }
    let names: Vec<&str> = two.invariants.iter().map(|c| c.name.as_str()).collect();
    assert!(
        names
            .iter()
            .any(|n| n.contains("every arrival of the schedule once"))
    );
    let money = two.money.as_ref().expect("money counted");
    assert!(money.balanced() && money.orders == 400, "{money:?}");
}

/// The merged plateau's percentiles lie between the shards' own, and are of the order of the
/// one generator's.
fn latencies_agree(one: &RunResults, two: &RunResults, rig: &Rig) {
    let (p1, p2) = (
        one.plateau.as_ref().unwrap().ok_latency_ms.unwrap(),
        two.plateau.as_ref().unwrap().ok_latency_ms.unwrap(),
    );
    let parts: Vec<_> = (0..2)
        .map(|i| {
            let r = RunResults::load(rig.path(&format!("shard-{i}.json"))).unwrap();
            r.plateau.unwrap().ok_latency_ms.unwrap()
        })
        .collect();
    println!(
        "plateau p50/p99 ms: one generator {:.1}/{:.1}, two shards {:.1}/{:.1} (shards {:.1}/{:.1} \
         and {:.1}/{:.1})",
        p1.p50, p1.p99, p2.p50, p2.p99, parts[0].p50, parts[0].p99, parts[1].p50, parts[1].p99
    );
    for (name, merged, a, b) in [
        ("p50", p2.p50, parts[0].p50, parts[1].p50),
        ("p99", p2.p99, parts[0].p99, parts[1].p99),
    ] {
        let (low, high) = (a.min(b), a.max(b));
        assert!(
            merged >= low * (1.0 - HDR_PRECISION) && merged <= high * (1.0 + HDR_PRECISION),
            "merged {name} {merged:.2} ms outside the shards' {low:.2}–{high:.2} ms"
        );
    }
    assert!(
        (0.5..=2.0).contains(&(p2.p50 / p1.p50)),
        "p50 {:.1} vs {:.1} ms",
        p2.p50,
        p1.p50
    );
    assert!(
        (0.5..=2.0).contains(&(p2.p99 / p1.p99)),
        "p99 {:.1} vs {:.1} ms",
        p2.p99,
        p1.p99
    );
}
