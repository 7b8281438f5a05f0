//! The orders an API refused over a run's plateau, by the reason it counted them under
//! (`orders_shed_total{reason}`): what a step records (`points.rs`) and the causes quote
//! (`cause.rs`).

use lab_results::{Refusals, RunResults};

/// The plateau's refusals by reason as the API counted them, in all and second by second (each
/// sample's counters against the one before it, the plateau's first against the last before the
/// plateau).
pub fn refusals(r: &RunResults) -> (Option<Refusals>, Vec<Refusals>) {
    let counted: Vec<(bool, Refusals)> = r
        .seconds
        .iter()
        .filter_map(|s| Some((s.phase == "constant", s.api_metrics?.refusals?)))
        .collect();
    let per_second: Vec<Refusals> = counted
        .windows(2)
        .filter(|w| w[1].0)
        .map(|w| w[1].1.since(&w[0].1))
        .collect();
    let total = per_second.iter().fold(None, |sum: Option<Refusals>, s| {
        Some(sum.map_or(*s, |sum| sum.plus(s)))
    });
    (total, per_second)
}
