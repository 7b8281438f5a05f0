//! Which table each scenario made of lab runs gets (`lab_report::scenario`'s builders), handed
//! the runs as plain data: each variant's slug and its results.

use lab_report::scenario::{ScenarioTable, VariantRuns, faults, overload, tables};
use lab_results::RunResults;

use super::{ScenarioName, Variant, faults_plan};

/// Scenario `name`'s table, with a link to each variant's full report and its runs' checks.
pub fn build(name: ScenarioName, done: &[(Variant, Vec<RunResults>)]) -> ScenarioTable {
    let done = plain(done);
    let table = match name {
        ScenarioName::Remotecall => tables::remotecall(&done),
        ScenarioName::DbLatency => tables::db_latency(&done),
        ScenarioName::Faults => faults::table(&done, &faults_plan::page_plan()),
        ScenarioName::Overload => overload::table(&done),
        // Events, Capacity, Threads and Batching have runners of their own and never come here
        // (`scenario::run` returns first); named, so that a new scenario stops the build here.
        ScenarioName::SlowDependency
        | ScenarioName::Events
        | ScenarioName::Capacity
        | ScenarioName::Threads
        | ScenarioName::Soak
        | ScenarioName::Batching => tables::slow_dependency(&done),
    };
    tables::with_links_and_checks(table, &done)
}

/// The runs as the tables read them: each variant's slug, not its plan.
pub(super) fn plain(done: &[(Variant, Vec<RunResults>)]) -> Vec<VariantRuns<'_>> {
    done.iter()
        .map(|(v, runs)| (v.slug.as_str(), runs.as_slice()))
        .collect()
}
