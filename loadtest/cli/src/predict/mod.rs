//! `loadtest predict DIR…`: each API's capacity in pods and at critical paths not measured yet,
//! from the unit costs of the capacity searches in DIR… ([`costs`]), by a model whose every step
//! is printed ([`model`]). Predictions are committed before the cells they predict are searched,
//! and then set against what the searches find (docs/results/capacity.md).

pub mod check;
pub mod costs;
pub mod model;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use model::{Cell, Prediction};

#[derive(Debug, Clone, Args)]
pub struct PredictArgs {
    /// The folders of the measured `lab --scenario capacity` searches (each with its
    /// scenario.json): the unit costs come from them.
    #[arg(required = true)]
    pub folders: Vec<PathBuf>,
    /// A cell to predict, `API,CORES,MIB,PATH_MS[,PERIOD_MS[,BURST_MS]]` (period 10 ms and no
    /// burst unless given), repeated; without any, the cells of [`default_cells`].
    #[arg(long = "cell", value_parser = parse_cell)]
    pub cells: Vec<Cell>,
    /// Folder for predictions.json and predictions.md (with --check: predicted-vs-measured.md).
    #[arg(long)]
    pub out: PathBuf,
    /// Set the predictions committed in this file against the searches in the folders (of the
    /// cells predicted) instead of predicting: each cell's measured median and min–max, the
    /// error, and whether it is within 15 %.
    #[arg(long, value_name = "PREDICTIONS_JSON")]
    pub check: Option<PathBuf>,
}

/// `--cell blocking-api,0.5,512,22,100,0`.
fn parse_cell(text: &str) -> Result<Cell, String> {
    let parts: Vec<&str> = text.split(',').collect();
    let number = |i: usize, default: Option<f64>| -> Result<f64, String> {
        match parts.get(i) {
            Some(p) => p
                .trim()
                .parse()
                .map_err(|_| format!("{p:?} is not a number")),
            None => default
                .ok_or_else(|| format!("{text:?}: API,CORES,MIB,PATH_MS[,PERIOD_MS[,BURST_MS]]")),
        }
    };
    let api = parts[0].trim();
    if !["blocking-api", "reactive-api"].contains(&api) {
        return Err(format!("{api:?} is not blocking-api or reactive-api"));
    }
    Ok(Cell {
        api: api.to_owned(),
        cpu_cores: number(1, None)?,
        memory_mib: number(2, None)? as u64,
        critical_path_ms: number(3, None)? as u64,
        cfs_period_ms: number(4, Some(10.0))?,
        cfs_burst_ms: number(5, Some(0.0))?,
    })
}

/// What capacity.md asks of the model, for both APIs: the cells to measure next (pods of other
/// sizes at 22 ms with the lab's 10 ms period; the 0.125 CPU pod at 220 ms and 2.2 s with
/// Kubernetes' 100 ms period, without and with a burst of one quota), the seed's pod (1 CPU,
/// 1 GiB, 2.2 s, docker's 100 ms period) and the pods teams run (0.5, 1, 2 CPU, 100 ms period)
/// from 22 ms to 22 s.
pub fn default_cells() -> Vec<Cell> {
    let cell = |api: &str, cores: f64, mib: u64, path: u64, period: f64, burst: f64| Cell {
        api: api.to_owned(),
        cpu_cores: cores,
        memory_mib: mib,
        critical_path_ms: path,
        cfs_period_ms: period,
        cfs_burst_ms: burst,
    };
    let mut cells = Vec::new();
    for api in ["blocking-api", "reactive-api"] {
        for (cores, mib) in [(0.09375, 96), (0.25, 256), (0.375, 384)] {
            cells.push(cell(api, cores, mib, 22, lab_period_ms(cores), 0.0));
        }
        for path in [220, 2200] {
            cells.push(cell(api, 0.125, 128, path, 100.0, 0.0));
            cells.push(cell(api, 0.125, 128, path, 100.0, 12.5));
        }
        for (cores, mib) in [(0.5, 512), (1.0, 1024), (2.0, 2048)] {
            for path in [22, 220, 2200, 22_000] {
                cells.push(cell(api, cores, mib, path, 100.0, 0.0));
            }
        }
    }
    cells
}

/// The period the lab gives a pod of `cores` unless told otherwise (10 ms, longer below 0.1 CPU).
fn lab_period_ms(cores: f64) -> f64 {
    let pod = labkit::cgroup::ResourceLimits {
        cpus: cores,
        ..Default::default()
    };
    pod.period_us() as f64 / 1e3
}

pub fn command(args: &PredictArgs) -> Result<ExitCode> {
    let files = args
        .folders
        .iter()
        .map(|dir| crate::scenario::capacity::ranges::read(dir))
        .collect::<Result<Vec<_>>>()?;
    if let Some(committed) = &args.check {
        let text =
            std::fs::read(committed).with_context(|| format!("reading {}", committed.display()))?;
        let predictions: Vec<Prediction> = serde_json::from_slice(&text)
            .with_context(|| format!("parsing {}", committed.display()))?;
        let page = check::page(&check::check(&predictions, &files));
        std::fs::create_dir_all(&args.out)?;
        std::fs::write(args.out.join("predicted-vs-measured.md"), &page)?;
        print!("{page}");
        return Ok(ExitCode::SUCCESS);
    }
    let costs = costs::unit_costs(&files);
    anyhow::ensure!(!costs.is_empty(), "no capacity found in {:?}", args.folders);
    let cells = if args.cells.is_empty() {
        default_cells()
    } else {
        args.cells.clone()
    };
    let predictions: Vec<Prediction> = cells
        .iter()
        .filter_map(|c| model::predict(c, &costs))
        .collect();
    std::fs::create_dir_all(&args.out)?;
    let json = serde_json::to_string_pretty(&predictions)?;
    std::fs::write(args.out.join("predictions.json"), json + "\n")?;
    let page = page(&predictions, &args.folders);
    std::fs::write(args.out.join("predictions.md"), &page)?;
    print!("{page}");
    Ok(ExitCode::SUCCESS)
}

/// The table, then each cell's arithmetic.
fn page(predictions: &[Prediction], folders: &[PathBuf]) -> String {
    let mut out = String::from("# Capacity predicted\n\nUnit costs from:");
    for f in folders {
        out.push_str(&format!(" {}", f.display()));
    }
    out.push_str(
        "\n\n| API | pod | CFS period, burst | critical path | predicted | band | stopped by |\n\
         |---|---|---|---:|---:|---:|---|\n",
    );
    for p in predictions {
        out.push_str(&format!(
            "{} {}/s | {}–{}/s | {} |\n",
            p.cell.columns(),
            p.capacity_rps,
            p.band_rps[0],
            p.band_rps[1],
            p.stopped_by
        ));
    }
    for p in predictions {
        let c = &p.cell;
        out.push_str(&format!(
            "\n## {} in {} CPU / {} MiB, {} ms period, {} ms burst, at {} ms\n\n",
            c.api, c.cpu_cores, c.memory_mib, c.cfs_period_ms, c.cfs_burst_ms, c.critical_path_ms
        ));
        for line in &p.arithmetic {
            out.push_str(&format!("- {line}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_read_with_the_labs_period_unless_one_is_given() {
        let c = parse_cell("blocking-api,0.5,512,22").unwrap();
        assert_eq!(
            (c.cpu_cores, c.memory_mib, c.critical_path_ms),
            (0.5, 512, 22)
        );
        assert_eq!((c.cfs_period_ms, c.cfs_burst_ms), (10.0, 0.0));
        let k8s = parse_cell("reactive-api,0.125,128,220,100,12.5").unwrap();
        assert_eq!((k8s.cfs_period_ms, k8s.cfs_burst_ms), (100.0, 12.5));
        assert!(parse_cell("mock-deps,1,1024,22").is_err());
        assert!(parse_cell("blocking-api,1").is_err());
        assert!(parse_cell("blocking-api,x,1024,22").is_err());
    }

    #[test]
    fn every_default_cell_is_a_pod_the_lab_can_make() {
        for c in default_cells() {
            let pod = labkit::cgroup::ResourceLimits {
                cpus: c.cpu_cores,
                memory_bytes: c.memory_mib << 20,
                cfs_period_us: Some((c.cfs_period_ms * 1e3) as u64),
                cfs_burst_us: (c.cfs_burst_ms * 1e3) as u64,
            };
            assert!(pod.check().is_ok(), "{c:?}: {:?}", pod.check());
        }
    }
}
