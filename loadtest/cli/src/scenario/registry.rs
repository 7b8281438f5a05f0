//! The registry of the scenarios, a leaf of the module tree (it imports nothing of the lab):
//! `lab_args` parses `--scenario` with it and `scenario` dispatches on it.

/// The scenarios: what `lab --scenario` parses into (clap refuses any other name, listing these),
/// what `lab --help` and `loadtest scenarios` list, and what [`run`] dispatches on — one registry,
/// so that a scenario added here is listed, described and timed wherever it can be named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::EnumIter)]
pub enum ScenarioName {
    Remotecall,
    DbLatency,
    SlowDependency,
    Faults,
    Overload,
    Events,
    Capacity,
    Threads,
    Soak,
    Batching,
}

impl ScenarioName {
    /// Every scenario, in the order they are listed (a test checks that none is missing).
    pub const ALL: [ScenarioName; 10] = [
        ScenarioName::Remotecall,
        ScenarioName::DbLatency,
        ScenarioName::SlowDependency,
        ScenarioName::Faults,
        ScenarioName::Overload,
        ScenarioName::Events,
        ScenarioName::Capacity,
        ScenarioName::Threads,
        ScenarioName::Soak,
        ScenarioName::Batching,
    ];

    /// The name `--scenario` takes, and the scenario's name in its folder and `scenario.json`.
    pub fn as_str(self) -> &'static str {
        match self {
            ScenarioName::Remotecall => "remotecall",
            ScenarioName::DbLatency => "db-latency",
            ScenarioName::SlowDependency => "slow-dependency",
            ScenarioName::Faults => "faults",
            ScenarioName::Overload => "overload",
            ScenarioName::Events => "events",
            ScenarioName::Capacity => "capacity",
            ScenarioName::Threads => "threads",
            ScenarioName::Soak => "soak",
            ScenarioName::Batching => "batching",
        }
    }

    /// What it measures, in one line.
    pub fn description(self) -> &'static str {
        match self {
            ScenarioName::Remotecall => {
                "experiment B: a connection held across a remote call (8 runs)"
            }
            ScenarioName::DbLatency => {
                "experiment D: 0 / 0.3 / 0.6 / 6.5 ms between the APIs and PostgreSQL (8 runs)"
            }
            ScenarioName::SlowDependency => {
                "payment 1000→5000 ms for 30 s in the middle of the default profile (2 runs)"
            }
            ScenarioName::Faults => {
                "money safety: retrying clients through payment faults, kill -9 of the API and a \
                 PostgreSQL crash restart; a frozen database, 300 slow uploads, an unreachable \
                 gateway, a broker acknowledging in 7 s, a rolling restart (12 runs)"
            }
            ScenarioName::Overload => {
                "ramp-750, both APIs, shedding off and on: refuse early or queue (4 runs)"
            }
            ScenarioName::Events => {
                "experiment C: the order event under a slow broker — two-phase, after-commit, \
                 outbox on NATS JetStream, healthy / slowed / crash (18 runs)"
            }
            ScenarioName::Capacity => {
                "each API's capacity by search: open-model steps (10 s ramp, 20 s hold) doubling \
                 from 100/s, then narrowed to 5 % of the rate found; the highest rate that met \
                 the objective, the lowest that missed it, and what stopped the API (6–12 runs \
                 per API)"
            }
            ScenarioName::Threads => {
                "blocking-api at BLOCKING_THREADS 200/500/1000/2000/4000 at 300/s and 750/s, \
                 reactive-api beside it: Little's law against what was measured (12 runs)"
            }
            ScenarioName::Soak => {
                "each API 30 min at a steady 75/s, the seed's latencies: RSS, open files, threads, \
                 p99 and orders/s in the first and the last minute, its tables at the end (2 runs)"
            }
            ScenarioName::Batching => {
                "experiment E: persist batch max 1/2/10/100/1000 × DB RTT 0/6.5 ms, durable \
                 commits, plus PostgreSQL's commit_delay and two unsaturated runs per API (26 runs)"
            }
        }
    }

    /// About how long it takes at `--duration-scale 1`, in minutes: estimated from its plan (runs
    /// × each run's profile), plus about 15 s a run for starting the API, its warm-up and the
    /// end-of-run checks; not measured.
    pub fn rough_minutes(self) -> u32 {
        match self {
            // closed-30-300 × 8: per API ≈ 60 s (request scope, payment 3 s: 4.9/s), 30 s (short
            // scope: 9.8/s) and seconds at payment 50 ms; + 8 × 15 s.
            ScenarioName::Remotecall => 6,
            // ramp-200 (90 s) × 8 + 8 × 15 s.
            ScenarioName::DbLatency => 14,
            // ramp-300 (90 s) × 2 + 2 × 15 s.
            ScenarioName::SlowDependency => 4,
            // constant-30-60 × 12, each with its faults' recovery and settling.
            ScenarioName::Faults => 18,
            // ramp-750 (90 s) × 4, plus the queue draining with shedding off (p99 ≈ 60 s).
            ScenarioName::Overload => 9,
            // 18 closed runs of 30 clients: 3,000 orders at 0 ms (seconds each), 300 through a
            // 3 s broker (≈ 30 s each), the crashes' restarts and census.
            ScenarioName::Events => 10,
            // hold-R-S (40 s at 2.2 s: ramp, settling, plateau) × 6–13 steps × 2 APIs + 15 s
            // each (11 min measured in a 0.125 CPU pod at the seed's latencies, 2026-12-07;
            // longer at a slow critical path: a 22 s step settles 49 s).
            ScenarioName::Capacity => 12,
            // hold-R (30 s) × 12 + 12 × 15 s.
            ScenarioName::Threads => 9,
            // constant-75-1800 × 2.
            ScenarioName::Soak => 62,
            // 26 runs of 12 s + 3 s warm-up + 15 s, and the fsync measurement first.
            ScenarioName::Batching => 14,
        }
    }
}

impl std::fmt::Display for ScenarioName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `--scenario`'s parser and its `--help` list: each name with its line and its rough length.
impl clap::ValueEnum for ScenarioName {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = format!("{} [≈ {} min]", self.description(), self.rough_minutes());
        Some(clap::builder::PossibleValue::new(self.as_str()).help(help))
    }
}
