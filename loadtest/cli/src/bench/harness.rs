//! `loadtest bench --harness`: what each part of the harness costs per order at the seed's peak,
//! beside the API it serves — so that a run flagged harness-bound says which part to cut, and a
//! change to the harness is measured as CPU per order before and after.
//!
//! Each API is a lab run of its own at the seed's latencies under the open model (`hold-750`: a
//! 10 s ramp to 750/s, 20 s at it), blocking-api with the threads Little's law asks for
//! (`--blocking-threads auto`). Over the plateau's seconds, each part's CPU (the sampler's
//! per-second readings, summed) is divided by the orders made in them: the API; PostgreSQL by the
//! job of its processes (backends, WAL writer, checkpointer, background writer, autovacuum, the
//! postmaster, processes that exited); mock-deps; the generator, less the sampler's own thread,
//! and the sampler. Also per order: WAL bytes and the machine's other busy time. The figures are
//! CPU time, so they hold on a busy machine better than latency does; the run's harness-bound
//! verdict is printed with them, since a harness at its limit is what this measures.

use std::process::ExitCode;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use lab_results::{PostgresJobs, RunResults, SecondSample};

use super::BenchArgs;

/// The open-model plan of each run.
pub const PROFILE: &str = "hold-750";

/// One API's run, per order over its plateau.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessFigure {
    pub api: String,
    /// Orders per second over the plateau.
    pub orders_per_s: f64,
    /// CPU µs per order: the API, then each harness part.
    pub api_us: f64,
    pub postgres_us: f64,
    /// PostgreSQL's µs by job; `None` where the sampler could not read its processes.
    pub postgres_jobs_us: Option<PostgresJobs>,
    pub mock_deps_us: f64,
    /// The generator's process less its sampler's thread.
    pub generator_us: f64,
    pub sampler_us: Option<f64>,
    /// The machine's busy time outside the API and the parts above (other processes, the
    /// kernel's own threads: the file system's journal among them).
    pub other_us: Option<f64>,
    /// The harness's parts together as a share of its CPUs over the plateau (100 = all busy).
    pub harness_share_percent: Option<f64>,
    /// The run's harness-bound verdict, if any.
    pub harness_bound: Option<String>,
    /// The run's money check: charges, orders, and whether they balanced.
    pub money: Option<(u64, u64, bool)>,
}

/// Runs each API, prints and writes `harness.json` and `harness.md`.
pub async fn command(args: &BenchArgs) -> Result<ExitCode> {
    let plan = ["--profile", PROFILE, "--blocking-threads", "auto"];
    let (out, runs) = super::lab_runs(args, "harness", &plan).await?;
    let mut figures = Vec::new();
    for (api, r) in &runs {
        figures.push(figure(r).with_context(|| format!("{api}: no plateau measured"))?);
    }
    std::fs::write(
        out.join("harness.json"),
        serde_json::to_string_pretty(&figures)? + "\n",
    )?;
    let text = render(&figures);
    std::fs::write(out.join("harness.md"), &text)?;
    println!("{text}");
    if figures.iter().any(|f| f.money.is_some_and(|m| !m.2)) {
        eprintln!("bench: a run's money did not balance");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Per-order figures over the run's plateau (the `constant` phase); `None` without orders there.
pub fn figure(r: &RunResults) -> Option<HarnessFigure> {
    let plateau: Vec<&SecondSample> = r.seconds.iter().filter(|s| s.phase == "constant").collect();
    let orders: u64 = plateau
        .iter()
        .map(|s| s.outcomes.get("201").copied().unwrap_or(0))
        .sum();
    if orders == 0 {
        return None;
    }
    // Each reading is % of one core over one second: their sum / 100 is CPU-seconds.
    let us = |total_percent: f64| total_percent / 100.0 * 1e6 / orders as f64;
    let sum = |f: &dyn Fn(&SecondSample) -> Option<f64>| -> Option<f64> {
        let v: Vec<f64> = plateau.iter().filter_map(|s| f(s)).collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    let api = sum(&|s| s.api_process.map(|p| p.cpu_percent)).unwrap_or(0.0);
    let postgres = sum(&|s| s.harness.postgres_cpu_percent).unwrap_or(0.0);
    let mock = sum(&|s| s.harness.mock_deps_cpu_percent).unwrap_or(0.0);
    let generator = sum(&|s| s.harness.generator_cpu_percent).unwrap_or(0.0);
    let sampler = sum(&|s| s.harness.sampler_cpu_percent);
    let machine = sum(&|s| s.harness.machine_cpu_percent);
    let jobs = plateau
        .iter()
        .filter_map(|s| s.harness.postgres_jobs)
        .reduce(|a, b| add(&a, &b))
        .map(|j| scale(&j, us(1.0)));
    let harness = postgres + mock + generator;
    let harness_cpus = r
        .config
        .limits
        .pinning
        .as_ref()
        .map(|p| p.harness_cpus.len() as f64);
    Some(HarnessFigure {
        api: r.api.clone(),
        orders_per_s: orders as f64 / plateau.len() as f64,
        api_us: us(api),
        postgres_us: us(postgres),
        postgres_jobs_us: jobs,
        mock_deps_us: us(mock),
        generator_us: us(generator - sampler.unwrap_or(0.0)),
        sampler_us: sampler.map(us),
        other_us: machine.map(|m| us((m - api - harness).max(0.0))),
        harness_share_percent: harness_cpus
            .filter(|n| *n > 0.0)
            .map(|n| harness / plateau.len() as f64 / n),
        harness_bound: r.harness_bound.clone(),
        money: r
            .money
            .as_ref()
            .map(|m| (m.charges, m.orders, m.balanced())),
    })
}

fn add(a: &PostgresJobs, b: &PostgresJobs) -> PostgresJobs {
    let mut out = *a;
    out.backends += b.backends;
    out.wal_writer += b.wal_writer;
    out.checkpointer += b.checkpointer;
    out.background_writer += b.background_writer;
    out.autovacuum += b.autovacuum;
    out.postmaster += b.postmaster;
    out.exited += b.exited;
    out.other += b.other;
    out
}

fn scale(j: &PostgresJobs, k: f64) -> PostgresJobs {
    PostgresJobs {
        backends: j.backends * k,
        wal_writer: j.wal_writer * k,
        checkpointer: j.checkpointer * k,
        background_writer: j.background_writer * k,
        autovacuum: j.autovacuum * k,
        postmaster: j.postmaster * k,
        exited: j.exited * k,
        other: j.other * k,
    }
}

/// One row per part, one column per API.
pub fn render(figures: &[HarnessFigure]) -> String {
    let mut s = String::from("| CPU µs per order |");
    for f in figures {
        s.push_str(&format!(" {} |", f.api));
    }
    s.push_str("\n|---|");
    s.push_str(&"---:|".repeat(figures.len()));
    s.push('\n');
    let mut row = |name: &str, cell: &dyn Fn(&HarnessFigure) -> String| {
        s.push_str(&format!("| {name} |"));
        for f in figures {
            s.push_str(&format!(" {} |", cell(f)));
        }
        s.push('\n');
    };
    let us = |v: f64| format!("{v:.0}");
    let opt = |v: Option<f64>| v.map_or("—".to_owned(), us);
    row("orders/s over the plateau", &|f| {
        format!("{:.1}", f.orders_per_s)
    });
    row("the API", &|f| us(f.api_us));
    row("PostgreSQL", &|f| us(f.postgres_us));
    for (i, (job, _)) in PostgresJobs::default().named().iter().enumerate() {
        row(&format!("· {job}"), &|f| {
            opt(f.postgres_jobs_us.map(|j| j.named()[i].1))
        });
    }
    row("mock-deps", &|f| us(f.mock_deps_us));
    row("the generator (without its sampler)", &|f| {
        us(f.generator_us)
    });
    row("the sampler", &|f| opt(f.sampler_us));
    row("the machine's other busy time", &|f| opt(f.other_us));
    row("harness CPUs busy (mean)", &|f| {
        f.harness_share_percent
            .map_or("—".to_owned(), |p| format!("{p:.0} %"))
    });
    row("money (charges, orders)", &|f| match f.money {
        Some((c, o, true)) => format!("{c} = {o}, balanced"),
        Some((c, o, false)) => format!("{c} / {o}, **NOT balanced**"),
        None => "not checked".to_owned(),
    });
    row("harness-bound", &|f| {
        f.harness_bound
            .as_deref()
            .map_or("no".to_owned(), |w| format!("yes: {w}"))
    });
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(phase: &str, ok: u64, api: f64, pg: f64) -> SecondSample {
        let mut s = SecondSample {
            phase: phase.to_owned(),
            ..Default::default()
        };
        s.outcomes.insert("201".to_owned(), ok);
        s.api_process = Some(lab_results::ProcessSample {
            cpu_percent: api,
            ..Default::default()
        });
        s.harness.postgres_cpu_percent = Some(pg);
        s.harness.generator_cpu_percent = Some(10.0);
        s.harness.sampler_cpu_percent = Some(1.0);
        s.harness.postgres_jobs = Some(PostgresJobs {
            backends: pg * 0.75,
            wal_writer: pg * 0.25,
            ..Default::default()
        });
        s
    }

    /// A recorded run (the report's fixture) with the seconds given.
    fn run(seconds: Vec<SecondSample>) -> RunResults {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../report/tests/fixtures/reactive-api-0.json");
        let mut r = RunResults::load(&path).expect("fixture loads");
        r.seconds = seconds;
        r
    }

    #[test]
    fn each_part_is_divided_by_the_plateaus_orders_only() {
        let r = run(vec![
            second("ramp", 100, 90.0, 90.0),
            second("constant", 500, 40.0, 60.0),
            second("constant", 500, 40.0, 60.0),
            second("drain", 10, 5.0, 5.0),
        ]);
        let f = figure(&r).unwrap();
        assert_eq!(f.orders_per_s, 500.0);
        // 40 % of a core for 500 orders a second: 800 µs each.
        assert!((f.api_us - 800.0).abs() < 1e-9, "{f:?}");
        assert!((f.postgres_us - 1200.0).abs() < 1e-9, "{f:?}");
        let jobs = f.postgres_jobs_us.unwrap();
        assert!((jobs.backends - 900.0).abs() < 1e-9 && (jobs.wal_writer - 300.0).abs() < 1e-9);
        assert!((f.generator_us - 180.0).abs() < 1e-9 && f.sampler_us == Some(20.0));
        assert!(render(&[f]).contains("| · WAL writer | 300 |"));
    }

    #[test]
    fn a_run_without_orders_on_its_plateau_has_no_figure() {
        assert_eq!(figure(&run(vec![second("constant", 0, 40.0, 60.0)])), None);
    }
}
