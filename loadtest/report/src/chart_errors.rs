//! The errors-per-second charts: one per API (small multiples), one line per error kind that
//! API had, each kind in its own colour and dash in every chart and never in an API's colour.

use lab_results::{OUTCOME_CREATED, OUTCOME_REPLAYED, RunResults};

use super::chart_specs::{NEUTRAL, figure};
use super::model::ApiRuns;
use super::svg::{Dash, Figure, Marker, PALETTE, Series, TickFormat};

/// One errors-per-second chart per API, one line per error kind that API had. A kind keeps its
/// colour and dash in every chart.
pub fn figures(groups: &[ApiRuns<'_>], m: &[Marker]) -> Vec<Figure> {
    let kinds_of = |runs: &[&RunResults]| {
        let mut k: Vec<String> = runs
            .iter()
            .flat_map(|r| &r.seconds)
            .flat_map(|s| s.outcomes.iter().filter(|(_, n)| **n > 0).map(|(k, _)| k))
            .filter(|k| k.as_str() != OUTCOME_CREATED && k.as_str() != OUTCOME_REPLAYED)
            .cloned()
            .collect();
        k.sort_unstable();
        k.dedup();
        k
    };
    let all_kinds = kinds_of(
        &groups
            .iter()
            .flat_map(|g| g.runs.iter().copied())
            .collect::<Vec<_>>(),
    );
    // Error kinds never take an API's colour: a kind's line must not read as an API's.
    let colours: Vec<&'static str> = PALETTE
        .into_iter()
        .filter(|c| !groups.iter().any(|g| g.colour == *c))
        .collect();
    let colours = if colours.is_empty() {
        vec![NEUTRAL]
    } else {
        colours
    };
    groups
        .iter()
        .map(|g| {
            let mut series = Vec::new();
            for kind in kinds_of(&g.runs) {
                let ki = all_kinds.iter().position(|k| *k == kind).unwrap_or(0);
                for (i, run) in g.runs.iter().enumerate() {
                    let points = run.seconds.iter().map(|s| (f64::from(s.t), s.outcomes.get(&kind).copied().unwrap_or(0) as f64)).collect();
                    let mut s = Series::new(kind.clone(), points, colours[ki % colours.len()], Dash::ALL[ki % Dash::ALL.len()]);
                    s.secondary = i > 0;
                    series.push(s);
                }
            }
            let caption = if series.is_empty() {
                "No request failed."
            } else {
                "Failed requests per second by kind: an error code from the API, http_<status>, or a transport failure (timeout, connect_error, io_error)."
            };
            let title = format!("Errors per second — {}", g.api);
            figure(&format!("errors-{}", g.api), &title, caption, "errors per second", TickFormat::PerSecond, series, m)
        })
        .collect()
}
