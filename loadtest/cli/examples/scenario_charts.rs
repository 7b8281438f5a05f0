//! The chart files of a `loadtest lab --scenario capacity` or `--scenario threads` run, drawn
//! again by this build from the run's `scenario.json` alone, as the run writes them beside its
//! page (`write_charts`): nothing is measured. How the charts committed under docs/results/ are
//! redrawn when the chart module changes (`loadtest crossover` does the same for its own):
//!
//! `cargo run -p loadtest --example scenario_charts -- SCENARIO_JSON OUT_DIR`

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use lab_results::scenario::CapacityFile;

fn main() -> Result<()> {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [file, out] = args.as_slice() else {
        bail!("usage: scenario_charts SCENARIO_JSON OUT_DIR");
    };
    let text = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let file: CapacityFile =
        serde_json::from_slice(&text).with_context(|| format!("parsing {}", file.display()))?;
    std::fs::create_dir_all(out)?;
    let table = lab_report::scenario::capacity_table::table(&file);
    loadtest::scenario::capacity::write_charts(&table, out)?;
    for c in &table.charts {
        println!("{}", c.title);
    }
    Ok(())
}
