//! The scenarios' names: the registry `loadtest lab --scenario` parses (its `--help` and
//! `loadtest scenarios` list it) and the name a scenario's `scenario.json` holds
//! ([`crate::scenario::CapacityFile::scenario`]), read into this enum once, so that the lab
//! dispatches and the report chooses a page by matching on it, never by comparing text. Here in
//! the schema's crate because both the lab (`loadtest/cli`) and the report read it; how each
//! scenario runs is the lab's (`loadtest/cli/src/scenario/registry.rs`).

use serde::{Deserialize, Serialize};

/// The scenarios: one registry, so that a scenario added here is listed, described and timed
/// wherever it can be named, and every `match` on it stops the build until it says what the new
/// one does there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::VariantArray, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
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
    /// Every scenario, in the order they are listed: the derive's list of the variants, so none
    /// can be left out.
    pub const ALL: &'static [ScenarioName] = <ScenarioName as strum::VariantArray>::VARIANTS;

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

impl std::str::FromStr for ScenarioName {
    type Err = String;

    fn from_str(name: &str) -> Result<ScenarioName, String> {
        ScenarioName::ALL
            .iter()
            .copied()
            .find(|s| s.as_str() == name)
            .ok_or_else(|| format!("{name:?} is not a scenario"))
    }
}

impl From<ScenarioName> for &'static str {
    fn from(name: ScenarioName) -> &'static str {
        name.as_str()
    }
}

impl TryFrom<String> for ScenarioName {
    type Error = String;

    fn try_from(name: String) -> Result<ScenarioName, String> {
        name.parse()
    }
}

/// `--scenario`'s parser and its `--help` list: each name with its line and its rough length.
#[cfg(feature = "clap")]
impl clap::ValueEnum for ScenarioName {
    fn value_variants<'a>() -> &'a [Self] {
        Self::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = format!("{} [≈ {} min]", self.description(), self.rough_minutes());
        Some(clap::builder::PossibleValue::new(self.as_str()).help(help))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_reads_back_as_the_scenario_it_names() {
        for &s in ScenarioName::ALL {
            assert_eq!(s.as_str().parse::<ScenarioName>(), Ok(s));
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
            assert_eq!(serde_json::from_str::<ScenarioName>(&json).unwrap(), s);
        }
        assert!(
            "Capacity".parse::<ScenarioName>().is_err(),
            "as written, not a variant"
        );
        assert!(serde_json::from_str::<ScenarioName>("\"nope\"").is_err());
    }
}
