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
/// fixed), in the order given but for searches of reactive-api alone, which come last;
/// superseded files left out. A search without blocking-api has no pool among its settings: it
/// joins the cell that agrees with it on the others and has the pool the lab sizes (`auto`,
/// the crossover's), else the first that agrees.
pub fn cells(files: &[CapacityFile]) -> Vec<Vec<&CapacityFile>> {
    let mut cells: Vec<Vec<&CapacityFile>> = Vec::new();
    let (with_pool, without): (Vec<&CapacityFile>, Vec<&CapacityFile>) = files
        .iter()
        .filter(|f| f.superseded.is_none())
        .partition(|f| f.cell_settings.contains_key(POOL));
    for f in with_pool.into_iter().chain(without) {
        let agrees = |c: &Vec<&CapacityFile>| same_cell(c[0], f);
        let auto = |c: &Vec<&CapacityFile>| {
            c[0].cell_settings.get(POOL).map(String::as_str) == Some("auto")
        };
        let at = cells
            .iter()
            .position(|c| agrees(c) && auto(c))
            .or_else(|| cells.iter().position(agrees));
        match at {
            Some(i) => cells[i].push(f),
            None => cells.push(vec![f]),
        }
    }
    cells
}

/// The setting only blocking-api's searches have.
const POOL: &str = "BLOCKING_THREADS";

/// Whether `b` belongs in the cell `a` opened: same critical path, pod and settings (the pool
/// left out where `b` has none).
fn same_cell(a: &CapacityFile, b: &CapacityFile) -> bool {
    let pod = |f: &CapacityFile| f.limits.as_ref().map(lab_results::Limits::pod);
    let settings = |f: &CapacityFile| {
        let mut s = f.cell_settings.clone();
        if !b.cell_settings.contains_key(POOL) {
            s.remove(POOL);
        }
        s
    };
    a.critical_path_ms == b.critical_path_ms && pod(a) == pod(b) && settings(a) == settings(b)
}

/// Each search of `api` in the cell (every file's every point of that API: a file holds one
/// search of each API it ran), but those superseded on their own.
fn searches_of<'a>(cell: &[&'a CapacityFile], api: &str) -> Vec<&'a CapacityPoint> {
    cell.iter()
        .flat_map(|f| &f.capacities)
        .filter(|c| c.api == api && c.superseded.is_none())
        .collect()
}

fn range_of(cell: &[&CapacityFile], api: &str) -> Option<Range> {
    Range::of(searches_of(cell, api))
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

/// The settings that set the cell apart, ` (NAME=value, …)`, or nothing.
fn settings_text(f: &CapacityFile) -> String {
    if f.cell_settings.is_empty() {
        return String::new();
    }
    let named: Vec<String> = f
        .cell_settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!(" ({})", named.join(", "))
}

fn conclusion(f: &CapacityFile, b: &Range, r: &Range) -> String {
    let at = match &f.limits {
        Some(l) => format!("At {} ms in a pod of {}", f.critical_path_ms, l.pod()),
        None => format!("At {} ms", f.critical_path_ms),
    };
    let at = format!("{at}{}", settings_text(f));
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

/// The page's table of ranges (capacity.md quotes it as printed): for each cell, a row per API
/// searched there twice or more — each search's highest rate met and lowest missed in the order
/// given (`≥ R` for a search the rig stopped), the range, and what stopped the API at the first
/// rate missed, counted over the searches. Empty when no cell has two searches of an API.
pub fn table(files: &[CapacityFile]) -> String {
    let mut rows = Vec::new();
    for cell in cells(files) {
        for api in ["blocking-api", "reactive-api"] {
            let points = searches_of(&cell, api);
            if points.len() < 2 {
                continue;
            }
            let range = Range::of(points.iter().copied())
                .map_or("only lower bounds".to_owned(), |r| {
                    format!("**{}**", r.text())
                });
            let searches: Vec<String> = points.iter().map(|p| search_text(p)).collect();
            rows.push(format!(
                "| {} | {api} | {} | {range} | {} |",
                cell_label(cell[0]),
                searches.join(" · "),
                causes(&points)
            ));
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "| cell | API | each search: met / missed, orders/s | median (min–max) | stopped by, at \
         the first rate missed |\n|---|---|---|---|---|\n{}\n",
        rows.join("\n")
    )
}

/// `220 ms, 0.125 CPU (period 10 ms), 128 MiB (PG_DURABILITY=off, …)`.
fn cell_label(f: &CapacityFile) -> String {
    let pod = f
        .limits
        .as_ref()
        .map(|l| format!(", {}", l.pod()))
        .unwrap_or_default();
    format!("{} ms{pod}{}", f.critical_path_ms, settings_text(f))
}

/// `130 / 135`, `≥ 283` for a search the rig stopped, `— / 50` for one that met no rate.
fn search_text(p: &CapacityPoint) -> String {
    let rate = |r: Option<f64>| r.map_or("—".to_owned(), |r| format!("{r:.0}"));
    if p.is_lower_bound() {
        format!("≥ {}", rate(p.capacity_rps))
    } else {
        format!(
            "{} / {}",
            rate(p.capacity_rps),
            rate(p.lowest_missed_rps.or(p.first_failing_rps))
        )
    }
}

/// What stopped the API in each search, counted in the order first seen: `cpu ×2, postgres ×1`.
fn causes(points: &[&CapacityPoint]) -> String {
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for p in points {
        let word = p.stopped_by.as_str();
        match counted.iter_mut().find(|(w, _)| *w == word) {
            Some((_, n)) => *n += 1,
            None => counted.push((word, 1)),
        }
    }
    let parts: Vec<String> = counted.iter().map(|(w, n)| format!("{w} ×{n}")).collect();
    parts.join(", ")
}

#[cfg(test)]
#[path = "ranges_tests.rs"]
mod tests;
