//! Which table each scenario made of lab runs gets (`lab_report::scenario`'s builders), handed
//! the runs as plain data: each variant's slug and its results.

use lab_report::scenario::{ScenarioTable, faults, overload, tables};
use lab_results::RunResults;

use super::soak::TableSize;
use super::{LabRuns, Variant, faults_plan, plain};

/// Scenario `kind`'s table, with a link to each variant's full report and its runs' checks;
/// `soak_sizes`: the soak's tables at the end of each run (empty for the others).
pub fn build(
    kind: LabRuns,
    done: &[(Variant, Vec<RunResults>)],
    soak_sizes: &[(String, Vec<TableSize>)],
) -> ScenarioTable {
    let runs = plain(done);
    let table = match kind {
        LabRuns::Remotecall => tables::remotecall(&runs),
        LabRuns::DbLatency => tables::db_latency(&runs),
        LabRuns::SlowDependency => tables::slow_dependency(&runs),
        LabRuns::Faults => faults::table(&runs, &faults_plan::page_plan()),
        LabRuns::Overload => overload::table(&runs),
        LabRuns::Soak => super::soak::table(done, soak_sizes),
    };
    tables::with_links_and_checks(table, &runs)
}
