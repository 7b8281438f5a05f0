//! How each scenario runs: a list of ordinary lab runs the scenario module plans and tabulates
//! ([`LabRuns`]), or runs of its own ([`OwnRunner`]). The names themselves, their descriptions
//! and rough lengths are the registry in the results' crate ([`ScenarioName`]), which the report
//! reads too; [`runner`] is the one `match` that sorts them, so a scenario with its own runner
//! costs no arm in the plan, the table or the rows of the others.

pub use lab_results::ScenarioName;

/// How scenario `name` is run.
pub fn runner(name: ScenarioName) -> Runner {
    match name {
        ScenarioName::Remotecall => Runner::LabRuns(LabRuns::Remotecall),
        ScenarioName::DbLatency => Runner::LabRuns(LabRuns::DbLatency),
        ScenarioName::SlowDependency => Runner::LabRuns(LabRuns::SlowDependency),
        ScenarioName::Faults => Runner::LabRuns(LabRuns::Faults),
        ScenarioName::Overload => Runner::LabRuns(LabRuns::Overload),
        ScenarioName::Soak => Runner::LabRuns(LabRuns::Soak),
        ScenarioName::Events => Runner::Own(OwnRunner::Events),
        ScenarioName::Batching => Runner::Own(OwnRunner::Batching),
        ScenarioName::Capacity => Runner::Own(OwnRunner::Capacity),
        ScenarioName::Threads => Runner::Own(OwnRunner::Threads),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    LabRuns(LabRuns),
    Own(OwnRunner),
}

/// The scenarios made of ordinary lab runs: `scenario::variants` plans them, `scenario::run`
/// runs them one after the other and builds the table (`tables.rs`) and the rows (`points.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabRuns {
    Remotecall,
    DbLatency,
    SlowDependency,
    Faults,
    Overload,
    Soak,
}

/// The scenarios that run themselves: events' closed-model runs with NATS and crashes
/// (`events/`), batching's runs after its fsync measurement (`batching/`), and capacity's and
/// threads' searches, each step chosen from the last (`capacity/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnRunner {
    Events,
    Batching,
    Capacity,
    Threads,
}

impl LabRuns {
    pub fn name(self) -> ScenarioName {
        match self {
            LabRuns::Remotecall => ScenarioName::Remotecall,
            LabRuns::DbLatency => ScenarioName::DbLatency,
            LabRuns::SlowDependency => ScenarioName::SlowDependency,
            LabRuns::Faults => ScenarioName::Faults,
            LabRuns::Overload => ScenarioName::Overload,
            LabRuns::Soak => ScenarioName::Soak,
        }
    }
}

impl std::fmt::Display for LabRuns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.name().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_made_of_lab_runs_is_the_one_its_name_names() {
        for &name in ScenarioName::ALL {
            if let Runner::LabRuns(kind) = runner(name) {
                assert_eq!(kind.name(), name);
            }
        }
    }
}
