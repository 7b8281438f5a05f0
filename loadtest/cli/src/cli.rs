//! Command-line interface. `main.rs` only parses this and calls [`crate::commands::run`]. The
//! lab's own options are in [`crate::lab_args`]; this puts them, and every other command's, under
//! the subcommands.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::SystemTime;

use anyhow::{Result, bail};
use clap::{Args, Parser, Subcommand};

use loadgen::shard::Shard;

use crate::lab_args::{LabCommand, LoadOpts};

/// Load lab: drives the order APIs with goose under an honest open model and compares them.
#[derive(Debug, Parser)]
#[command(name = "loadtest", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the comparison: start PostgreSQL, mock-deps and each API (1 CPU / 1 GiB, or
    /// --api-cpus / --api-memory-mib), load them one after the other, write results, goose reports and the report. No arguments = the seed's run.
    Lab(Box<LabCommand>),
    /// Load one already-running target and write its results file.
    Run(Box<RunArgs>),
    /// Build report.html and summary.md from any number of results files.
    Compare(CompareArgs),
    /// Add up the results files of one run's shards (`run --shard I/N`) into the run's results
    /// file, report.html and summary.md.
    Merge(MergeArgs),
    /// Capacity against the dependencies' critical path: the `scenario.json` of several
    /// `lab --scenario capacity` runs (each at its own `--latency`) in one table and chart.
    Crossover(CrossoverArgs),
    /// Capacity predicted for pods and critical paths not measured: a model on the unit costs of
    /// measured `lab --scenario capacity` searches, its arithmetic printed. Writes
    /// predictions.json and predictions.md.
    Predict(crate::predict::PredictArgs),
    /// Cost-per-order benchmark: each API alone in its pod (1 CPU by default), a closed loop at
    /// mocks 0 ms and at the seed's latencies; CPU, context switches, SQL and HTTP calls per order, RSS, and the
    /// harness's CPU per order. Writes bench.json and bench.md.
    Bench(Box<crate::bench::BenchArgs>),
    /// List the scenarios `lab --scenario` runs: each one's name, rough length at
    /// `--duration-scale 1` and what it measures.
    Scenarios,
    /// List the built-in profiles and their shapes.
    Profiles {
        /// Show the phases as they would run with this scale.
        #[arg(long, default_value_t = 1.0)]
        duration_scale: f64,
    },
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Base URL of the API.
    #[arg(long)]
    pub target: String,
    #[command(flatten)]
    pub load: LoadOpts,
    /// Results file to write (goose's reports go beside it).
    #[arg(long, default_value = "results.json")]
    pub out: PathBuf,
    /// Label in the results (default: the target's host:port).
    #[arg(long)]
    pub label: Option<String>,
    /// PID of the API process, to sample its CPU, memory, threads and files.
    #[arg(long)]
    pub api_pid: Option<u32>,
    /// mock-deps URL, to record its latencies and check its ledger.
    #[arg(long)]
    pub deps_url: Option<String>,
    /// PostgreSQL URL, to check that the orders in the database match the 201s.
    #[arg(long)]
    pub database_url: Option<String>,
    #[command(flatten)]
    pub sharding: ShardOpts,
}

/// One generator's share of a run and its start (`loadtest run`; docs: loadtest/README.md).
#[derive(Debug, Clone, Args)]
pub struct ShardOpts {
    /// Send arrivals j with j mod N = I of the whole schedule (0/1: all of it); the shards'
    /// results files make one run with `loadtest merge`. Open profiles only.
    #[arg(long, default_value = "0/1", value_parser = Shard::parse)]
    pub shard: Shard,
    /// Seed of every arrival's body, key and retry jitter (with the arrival's index) [derived
    /// from the run id].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Prefix of every reference_id [a fresh one]: the shards of one run must share it (and
    /// the seed), so that together they send the keys of one run.
    #[arg(long, value_parser = parse_run_id)]
    pub run_id: Option<String>,
    /// Start the schedule at this instant (RFC 3339, or Unix ms), ready before it.
    #[arg(long, value_parser = parse_start_at, conflicts_with = "wait_for_start")]
    pub start_at: Option<SystemTime>,
    /// Listen on this address (GET /ready) and start the schedule on POST /start (its body: an
    /// instant as for --start-at, or empty for now).
    #[arg(long)]
    pub wait_for_start: Option<SocketAddr>,
}

#[derive(Debug, Clone, Args)]
pub struct CrossoverArgs {
    /// The folders of `lab --scenario capacity` runs (each holding its scenario.json).
    #[arg(required = true)]
    pub folders: Vec<PathBuf>,
    /// Folder for crossover.md, crossover.html, the chart's SVG and ranges.md (the cells' ranges).
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The shards' results files (`loadtest run --shard I/N`), one per shard, any order.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Folder for results.json, report.html and summary.md.
    #[arg(long)]
    pub out: PathBuf,
    /// PostgreSQL URL: check the orders in the database against the merged 201s, and the money.
    #[arg(long)]
    pub database_url: Option<String>,
    /// mock-deps URL: check its ledger (no key charged twice) and the money.
    #[arg(long)]
    pub deps_url: Option<String>,
}

/// `--start-at`: an instant not already past (a start in the past would fire its first arrivals
/// at once, all late).
pub fn parse_start_at(text: &str) -> Result<SystemTime> {
    let at = loadgen::start::parse_instant(text)?;
    if let Ok(past) = SystemTime::now().duration_since(at)
        && past.as_secs_f64() > 1.0
    {
        bail!("--start-at {text}: {:.1} s ago", past.as_secs_f64());
    }
    Ok(at)
}

/// `--run-id`: it prefixes every reference_id, so short and plain.
pub fn parse_run_id(text: &str) -> Result<String> {
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if text.is_empty() || text.len() > 40 || !plain {
        bail!("--run-id {text:?}: 1 to 40 of [A-Za-z0-9_-]");
    }
    Ok(text.to_owned())
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// results.json files (any number, any APIs, any repeats).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Folder for report.html and summary.md.
    #[arg(long, default_value = "report")]
    pub out: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab_args::{SEED_LATENCIES, TxScope};
    use lab_report::slo::Slo;

    #[test]
    fn the_compose_command_line_parses() {
        let cli = Cli::try_parse_from([
            "loadtest",
            "lab",
            "--targets",
            "blocking=http://blocking-api:8081,reactive=http://reactive-api:8082",
            "--deps-url",
            "http://mock-deps:9090",
            "--database-url",
            "postgres://x@postgres/y",
            "--out",
            "/reports",
        ])
        .unwrap();
        let Command::Lab(lab) = cli.command else {
            panic!("not lab")
        };
        let lab = lab.run;
        assert_eq!(lab.targets.len(), 2);
        assert_eq!(
            lab.latency, SEED_LATENCIES,
            "one default, two spellings: they agree"
        );
        assert_eq!(lab.tx_scope, TxScope::Short);
        assert_eq!((lab.inject, lab.faults), (None, None));
        assert_eq!(lab.load.profile, "ramp-300");
        assert_eq!(lab.harness.apis, ["blocking-api", "reactive-api"]);
    }

    /// `lab` and `bench` read the same harness flags, with the same defaults.
    #[test]
    fn lab_and_bench_take_one_set_of_harness_flags() {
        let harness = |args: &[&str]| -> Vec<crate::lab_args::HarnessArgs> {
            ["lab", "bench"]
                .iter()
                .map(|command| {
                    let argv = [&["loadtest", command], args].concat();
                    match Cli::try_parse_from(argv).unwrap().command {
                        Command::Lab(l) => l.run.harness,
                        Command::Bench(b) => b.harness,
                        _ => unreachable!("parsed as {command}"),
                    }
                })
                .collect()
        };
        for h in harness(&[]) {
            assert_eq!(h.apis, ["blocking-api", "reactive-api"]);
            assert_eq!(h.db_pool_size, 100);
            assert_eq!(h.db_durability, crate::lab_args::Durability::On);
            assert_eq!(h.db_rtt_ms, 0.0);
            assert_eq!((&h.database_url, &h.out), (&None, &None));
            assert!(!h.no_limits && !h.no_pin);
            assert_eq!((h.api_cpus, h.api_memory_mib), (1.0, 1024));
            assert_eq!(
                h.pod().map(|p| (p.cpus, p.memory_bytes)),
                Some((1.0, 1 << 30))
            );
        }
        let given = [
            "--apis",
            "reactive",
            "--db-pool-size",
            "9",
            "--db-durability",
            "off",
            "--db-rtt-ms",
            "2.5",
            "--database-url",
            "postgres://x@h/db",
            "--no-limits",
            "--no-pin",
            "--out",
            "/tmp/o",
            "--api-cpus",
            "0.125",
            "--api-memory-mib",
            "128",
        ];
        for h in harness(&given) {
            assert_eq!(h.apis, ["reactive"]);
            assert_eq!(h.db_pool_size, 9);
            assert_eq!(h.db_durability, crate::lab_args::Durability::Off);
            assert_eq!(h.db_rtt_ms, 2.5);
            assert_eq!(h.database_url.as_deref(), Some("postgres://x@h/db"));
            assert_eq!(h.out, Some(PathBuf::from("/tmp/o")));
            assert!(h.no_limits && h.no_pin);
            assert_eq!((h.api_cpus, h.api_memory_mib), (0.125, 128));
            assert_eq!(h.pod(), None, "--no-limits");
        }
        for bad in [
            ["--api-cpus", "0"],
            ["--api-cpus", "0.0001"],
            ["--api-memory-mib", "0"],
            ["--api-cfs-period-ms", "0.5"],
            ["--api-cfs-period-ms", "1001"],
            ["--api-cfs-burst-ms", "-1"],
        ] {
            for command in ["lab", "bench"] {
                let argv = [&["loadtest", command], &bad[..]].concat();
                assert!(Cli::try_parse_from(argv).is_err(), "{command} {bad:?}");
            }
        }
        for command in ["lab", "bench"] {
            let err = Cli::try_parse_from(["loadtest", command, "--apis", "mock-deps"])
                .unwrap_err()
                .to_string();
            assert!(err.contains("not an API of the lab"), "{command}: {err}");
        }
    }

    #[test]
    fn a_pod_as_kubernetes_runs_it_is_asked_for_by_its_period_and_burst() {
        for command in ["lab", "bench"] {
            let argv = |extra: &[&str]| {
                let base = ["loadtest", command, "--api-cpus", "0.125"];
                match Cli::try_parse_from([&base[..], extra].concat())
                    .unwrap()
                    .command
                {
                    Command::Lab(l) => l.run.harness,
                    Command::Bench(b) => b.harness,
                    _ => panic!("parsed as another command"),
                }
            };
            let lab_rule = argv(&[]).pod().unwrap();
            assert_eq!((lab_rule.period_us(), lab_rule.cfs_burst_us), (10_000, 0));
            let k8s = ["--api-cfs-period-ms", "100", "--api-cfs-burst-ms", "12.5"];
            let pod = argv(&k8s).pod().unwrap();
            assert_eq!((pod.period_us(), pod.quota_us()), (100_000, 12_500));
            assert_eq!(pod.cfs_burst_us, 12_500);
            assert!(pod.check().is_ok());
            // More burst than quota parses, and is refused with the reason before any run.
            let over = argv(&["--api-cfs-burst-ms", "2"]).pod().unwrap();
            let why = over.check().unwrap_err();
            assert!(
                why.contains("more than the quota, 1.25 ms per 10 ms"),
                "{why}"
            );
        }
    }

    #[test]
    fn the_objective_is_parsed_into_the_reports_type() {
        let lab = |args: &[&str]| {
            let cli = Cli::try_parse_from([&["loadtest", "lab"], args].concat())?;
            let Command::Lab(lab) = cli.command else {
                panic!("not lab")
            };
            Ok::<_, clap::Error>(lab)
        };
        let l = lab(&["--slo", "p99<=2.5s,success>=99%", "--fail-on-slo"]).unwrap();
        assert_eq!(l.slo, Some(Slo::parse("p99<=2.5s,success>=99%").unwrap()));
        assert!(l.fail_on_slo);
        let l = lab(&[]).unwrap();
        assert_eq!(
            (l.slo, l.fail_on_slo),
            (None, false),
            "the report derives the default"
        );
        let err = lab(&["--slo", "p99<=2.5"]).unwrap_err().to_string();
        assert!(err.contains("is not a duration"), "{err}");
    }

    /// `lab --help` names every scenario with its line and rough length, from the registry that
    /// also parses `--scenario`: the two cannot drift.
    #[test]
    fn lab_help_lists_every_scenario() {
        use crate::scenario::ScenarioName;
        let err = Cli::try_parse_from(["loadtest", "lab", "--help"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp);
        // clap wraps long lines: compare with every run of whitespace as one space.
        let help = err
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for &scenario in ScenarioName::ALL {
            let line = format!(
                "- {scenario}: {} [≈ {} min]",
                scenario.description(),
                scenario.rough_minutes()
            );
            assert!(help.contains(&line), "`lab --help` lacks {line:?}:\n{help}");
            assert!(crate::scenario::list().contains(scenario.description()));
            let parsed = Cli::try_parse_from(["loadtest", "lab", "--scenario", scenario.as_str()]);
            let Command::Lab(lab) = parsed.unwrap().command else {
                panic!("not lab")
            };
            assert_eq!(lab.scenario, Some(scenario));
        }
    }

    #[test]
    fn an_unknown_scenario_is_refused_listing_the_valid_ones() {
        let err = Cli::try_parse_from(["loadtest", "lab", "--scenario", "nope"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::InvalidValue);
        let message = err.to_string();
        for scenario in crate::scenario::ScenarioName::ALL {
            assert!(message.contains(scenario.as_str()), "{message}");
        }
    }
}
