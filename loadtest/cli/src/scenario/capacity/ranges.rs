//! A capacity as a range: the searches of one cell (one pod, one critical path) put together,
//! each API's capacity as the median and min–max of its searches, blocking-api's share of
//! reactive-api's as the range the two ranges allow, and a verdict only where the ranges do not
//! overlap. One search lands up to a quarter away from the next (three searches of one cell at
//! 2.2 s: 191, 218 and 238/s), while its bracket says only how finely it narrowed; so the
//! crossover speaks of cells, not of searches.

use std::path::Path;

use anyhow::{Context, Result};
use lab_results::scenario::{CapacityFile, CapacityPoint};

/// How far a cell's min and max may lie from its median before the page must say what moved it.
pub const SPREAD: f64 = 0.20;

/// A capacity search's `scenario.json` in its folder.
pub fn read(dir: &Path) -> Result<CapacityFile> {
    let path = dir.join("scenario.json");
    let text = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&text).with_context(|| format!("parsing {}", path.display()))
}

/// The searches of one API in one cell, by their capacity.
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Searches counted: stopped by the API itself (a search that ended at the rig's limit, or
    /// at its top rate, is a lower bound and counted apart).
    pub searches: usize,
    pub lower_bounds: usize,
}

impl Range {
    /// The capacities found by `points` (one per search); `None` without a search that the API
    /// itself stopped.
    pub fn of<'a>(points: impl IntoIterator<Item = &'a CapacityPoint>) -> Option<Range> {
        let (mut found, mut lower_bounds) = (Vec::new(), 0);
        for p in points {
            match p.capacity_rps {
                _ if p.is_lower_bound() => lower_bounds += 1,
                Some(c) => found.push(c),
                // Missed even the lowest rate tried: a capacity below it, counted as 0.
                None => found.push(0.0),
            }
        }
        Some(Range {
            median: lab_results::median(found.iter().copied())?,
            min: found.iter().copied().fold(f64::INFINITY, f64::min),
            max: found.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            searches: found.len(),
            lower_bounds,
        })
    }

    /// Min and max within [`SPREAD`] of the median.
    pub fn is_tight(&self) -> bool {
        self.min >= (1.0 - SPREAD) * self.median && self.max <= (1.0 + SPREAD) * self.median
    }

    pub fn overlaps(&self, other: &Range) -> bool {
        self.min <= other.max && other.min <= self.max
    }

    /// `218/s (191–238, 3 searches)`.
    pub fn text(&self) -> String {
        let bounds = match self.lower_bounds {
            0 => String::new(),
            n => format!(", {n} more only a lower bound"),
        };
        let searches = match self.searches {
            1 => "1 search".to_owned(),
            n => format!("{n} searches"),
        };
        format!(
            "{:.0}/s ({:.0}–{:.0}, {searches}{bounds})",
            self.median, self.min, self.max
        )
    }
}

/// The searches that share a pod, a critical path and the settings that set a search apart
/// (`cell_settings`: a durable database or not, the loop-lag rule, a pool sized by the lab or
/// fixed), in the order given; superseded files left out.
pub fn cells(files: &[CapacityFile]) -> Vec<Vec<&CapacityFile>> {
    let mut cells: Vec<Vec<&CapacityFile>> = Vec::new();
    for f in files.iter().filter(|f| f.superseded.is_none()) {
        match cells.iter_mut().find(|c| same_cell(c[0], f)) {
            Some(cell) => cell.push(f),
            None => cells.push(vec![f]),
        }
    }
    cells
}

fn same_cell(a: &CapacityFile, b: &CapacityFile) -> bool {
    let pod = |f: &CapacityFile| f.limits.as_ref().map(lab_results::Limits::pod);
    a.critical_path_ms == b.critical_path_ms
        && pod(a) == pod(b)
        && a.cell_settings == b.cell_settings
}

/// Each search of `api` in the cell (every file's every point of that API: a file holds one
/// search of each API it ran).
fn range_of(cell: &[&CapacityFile], api: &str) -> Option<Range> {
    Range::of(
        cell.iter()
            .flat_map(|f| &f.capacities)
            .filter(|c| c.api == api),
    )
}

/// One line per cell with at least two searches of each API: both ranges, blocking-api's share
/// as a range, and a verdict only where the ranges do not overlap; a spread past [`SPREAD`] of a
/// median is said.
pub fn conclusions(files: &[CapacityFile]) -> Vec<String> {
    cells(files)
        .iter()
        .filter_map(|c| cell_conclusion(c))
        .collect()
}

/// A cell's line, where both APIs were searched at least twice in it.
pub fn cell_conclusion(cell: &[&CapacityFile]) -> Option<String> {
    let (b, r) = (
        range_of(cell, "blocking-api")?,
        range_of(cell, "reactive-api")?,
    );
    (b.searches >= 2 && r.searches >= 2).then(|| conclusion(cell[0], &b, &r))
}

fn conclusion(f: &CapacityFile, b: &Range, r: &Range) -> String {
    let at = match &f.limits {
        Some(l) => format!("At {} ms in a pod of {}", f.critical_path_ms, l.pod()),
        None => format!("At {} ms", f.critical_path_ms),
    };
    let at = if f.cell_settings.is_empty() {
        at
    } else {
        let named: Vec<String> = f
            .cell_settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{at} ({})", named.join(", "))
    };
    let verdict = if b.overlaps(r) {
        "the ranges overlap: no verdict".to_owned()
    } else if b.min > r.max {
        "blocking-api served more, the ranges apart".to_owned()
    } else {
        "reactive-api served more, the ranges apart".to_owned()
    };
    let share = if r.min > 0.0 {
        format!(
            "; blocking-api's share {:.0}–{:.0} % (median {:.0} %)",
            100.0 * b.min / r.max,
            100.0 * b.max / r.min,
            100.0 * b.median / r.median
        )
    } else {
        String::new()
    };
    let spread: Vec<&str> = [("blocking-api", b), ("reactive-api", r)]
        .iter()
        .filter(|(_, range)| !range.is_tight())
        .map(|(api, _)| *api)
        .collect();
    let spread = match spread.as_slice() {
        [] => String::new(),
        apis => format!(
            " Spread past {:.0} % of the median: {}.",
            100.0 * SPREAD,
            apis.join(", ")
        ),
    };
    format!(
        "{at}: blocking-api {}, reactive-api {}{share}; {verdict}.{spread}",
        b.text(),
        r.text()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab_results::scenario::StoppedBy;

    fn point(api: &str, rps: Option<f64>, by: StoppedBy) -> CapacityPoint {
        serde_json::from_value(serde_json::json!({
            "api": api, "blocking_threads": null, "allocator": null, "capacity_rps": rps,
            "resolution_rps": 5.0, "first_failing_rps": null, "stopped_by": by,
            "evidence": null, "steps": [],
        }))
        .unwrap()
    }

    fn search(path_ms: u64, blocking: f64, reactive: f64) -> CapacityFile {
        CapacityFile {
            superseded: None,
            scenario: lab_results::ScenarioName::Capacity,
            objective: String::new(),
            critical_path_ms: path_ms,
            limits: None,
            capacities: vec![
                point("blocking-api", Some(blocking), StoppedBy::Cpu),
                point("reactive-api", Some(reactive), StoppedBy::Cpu),
            ],
            sweep: Vec::new(),
            cell_settings: std::collections::BTreeMap::new(),
        }
    }

    #[test]
    fn a_range_is_the_median_and_the_extremes_of_the_searches_the_api_stopped() {
        let points = [
            point("reactive-api", Some(238.0), StoppedBy::Cpu),
            point("reactive-api", Some(191.0), StoppedBy::Cpu),
            point("reactive-api", Some(218.0), StoppedBy::Memory),
            point("reactive-api", Some(400.0), StoppedBy::Harness),
        ];
        let r = Range::of(&points).unwrap();
        assert_eq!((r.median, r.min, r.max), (218.0, 191.0, 238.0));
        assert_eq!((r.searches, r.lower_bounds), (3, 1));
        assert!(r.is_tight(), "191 and 238 lie within 20 % of 218");
        assert_eq!(
            r.text(),
            "218/s (191–238, 3 searches, 1 more only a lower bound)"
        );
        let even = Range::of(&points[..2]).unwrap();
        assert_eq!(even.median, 214.5);
        assert!(Range::of(&points[3..]).is_none(), "only a lower bound");
        let wide = Range::of(&[
            point("reactive-api", Some(96.0), StoppedBy::Cpu),
            point("reactive-api", Some(218.0), StoppedBy::Cpu),
            point("reactive-api", Some(238.0), StoppedBy::Cpu),
        ])
        .unwrap();
        assert!(!wide.is_tight(), "96 is far below 218");
    }

    #[test]
    fn a_verdict_only_where_the_ranges_do_not_overlap() {
        let apart = [
            search(2200, 88.0, 218.0),
            search(2200, 92.0, 191.0),
            search(2200, 84.0, 238.0),
        ];
        let lines = conclusions(&apart);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains("reactive-api served more, the ranges apart"),
            "{lines:?}"
        );
        // 84/238 = 35 %, 92/191 = 48 %, median 88/218 = 40 %.
        assert!(
            lines[0].contains("share 35–48 % (median 40 %)"),
            "{lines:?}"
        );
        assert!(!lines[0].contains("Spread"), "{lines:?}");

        let close = [search(22, 300.0, 322.0), search(22, 330.0, 310.0)];
        let lines = conclusions(&close);
        assert!(
            lines[0].contains("the ranges overlap: no verdict"),
            "{lines:?}"
        );

        let mut old = search(22, 500.0, 100.0);
        old.superseded = Some("the lag rule counted the pod's own stalls".to_owned());
        let with_old = [close[0].clone(), close[1].clone(), old];
        assert_eq!(
            conclusions(&with_old),
            lines,
            "a superseded search is left out"
        );
        assert!(
            conclusions(&close[..1]).is_empty(),
            "one search is no range"
        );
    }

    #[test]
    fn cells_part_by_critical_path() {
        let files = [
            search(2200, 1.0, 2.0),
            search(22, 1.0, 2.0),
            search(2200, 1.0, 2.0),
        ];
        let sizes: Vec<usize> = cells(&files).iter().map(Vec::len).collect();
        assert_eq!(sizes, [2, 1]);
    }

    /// A search on a non-durable database, or of a fixed pool, is not one more search of the
    /// cell searched durable with the lab's pool: each is a cell of its own, named on its line.
    #[test]
    fn cells_part_by_the_settings_that_set_a_search_apart() {
        let with = |durability: &str, pool: &str| {
            let mut f = search(220, 100.0, 200.0);
            f.cell_settings = [("PG_DURABILITY", durability), ("BLOCKING_THREADS", pool)]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .into();
            f
        };
        let files = [
            with("off", "auto"),
            with("on", "auto"),
            with("off", "auto"),
            with("off", "16"),
        ];
        let sizes: Vec<usize> = cells(&files).iter().map(Vec::len).collect();
        assert_eq!(sizes, [2, 1, 1]);
        let lines = conclusions(&files);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("At 220 ms (BLOCKING_THREADS=auto, PG_DURABILITY=off):"),
            "{lines:?}"
        );
    }
}
