//! `loadtest bench --memory`: what an order in flight costs each API in resident memory, under the
//! open model at the seed's latencies — the companion of the instruction gate, so that no change
//! buys instructions with memory unseen (an allocator with per-thread caches cost blocking-api
//! ≈ 1.5 MiB per thread in flight, which a closed loop of few threads did not show).
//!
//! Each API is a lab run of its own: `hold-250` at half length (a 5 s ramp to 250/s, 10 s at it:
//! ≈ 550 orders in flight at a 2.2 s critical path), blocking-api with 600 threads so none
//! queues. The figure is the least-squares slope of RSS on the orders in flight over the ramp and
//! the plateau, and for blocking-api the same on its thread count. `--memory-check FILE` fails
//! (exit 1) when the gated figure ([`MemoryFigure::gated_kib`]) rose more than
//! [`TOLERANCE`] against the committed baseline (`docs/bench/memory-baseline.json`).

use std::process::ExitCode;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use lab_results::RunResults;
use lab_results::numbers::MIB;

use super::BenchArgs;

/// The open-model plan of each run.
pub const PROFILE: &str = "hold-250";
pub const DURATION_SCALE: &str = "0.5";
pub const BLOCKING_THREADS: &str = "600";
/// The most a figure may rise against the baseline.
pub const TOLERANCE: f64 = 0.10;

/// One API's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryFigure {
    pub api: String,
    pub allocator: Option<String>,
    /// RSS per order in flight (the generator's open requests), KiB.
    pub rss_per_in_flight_kib: f64,
    /// RSS per thread the load added (blocking-api), KiB.
    pub rss_per_thread_kib: Option<f64>,
    pub peak_rss_mib: Option<f64>,
    pub peak_in_flight: u64,
    pub peak_threads: Option<u64>,
}

impl MemoryFigure {
    /// The figure the gate holds: RSS per thread for an API with a thread per order in flight
    /// (steadier: the generator's in-flight count also holds requests not yet accepted), else
    /// RSS per order in flight.
    pub fn gated_kib(&self) -> (f64, &'static str) {
        match self.rss_per_thread_kib {
            Some(t) => (t, "per thread"),
            None => (self.rss_per_in_flight_kib, "per order in flight"),
        }
    }
}

/// The committed reference `--memory-check` holds a run against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryBaseline {
    pub why: String,
    pub command: String,
    pub commit: String,
    pub measured_at: String,
    pub apis: Vec<MemoryFigure>,
}

/// Runs each API, prints and writes `memory.json`, and checks or saves the baseline.
pub async fn command(args: &BenchArgs) -> Result<ExitCode> {
    let plan = [
        "--profile",
        PROFILE,
        "--duration-scale",
        DURATION_SCALE,
        "--blocking-threads",
        BLOCKING_THREADS,
    ];
    let (out, runs) = super::lab_runs(args, "memory", &plan).await?;
    let mut figures = Vec::new();
    for (api, r) in &runs {
        figures.push(figure(r).with_context(|| format!("{api}: no RSS slope measured"))?);
    }
    std::fs::write(
        out.join("memory.json"),
        serde_json::to_string_pretty(&figures)? + "\n",
    )?;
    let mut text = render(&figures);
    let mut ok = true;
    if let Some(path) = &args.memory_check {
        let base: MemoryBaseline = serde_json::from_slice(
            &std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
        )?;
        let (passed, table) = check(&base, &figures);
        ok = passed;
        text.push_str(&table);
    }
    if let Some(path) = &args.save_memory_baseline {
        let env = crate::run::environment("");
        let base = MemoryBaseline {
            why: args.why.clone().unwrap_or_default(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            commit: env.git_sha,
            measured_at: chrono::Utc::now().to_rfc3339(),
            apis: figures.clone(),
        };
        std::fs::write(path, serde_json::to_string_pretty(&base)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("memory baseline written to {}", path.display());
    }
    std::fs::write(out.join("memory.md"), &text)?;
    println!("{text}");
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("bench: RSS per order in flight rose past the baseline's tolerance");
        ExitCode::FAILURE
    })
}

/// The slopes of one run (least squares of RSS on the count, over every sampled second of the
/// ramp and the plateau: steadier than two points, whose RSS lags the count by up to a second);
/// `None` when its load added fewer than 50 orders in flight.
pub fn figure(r: &RunResults) -> Option<MemoryFigure> {
    let loaded = || r.seconds.iter().filter(|s| s.phase != "drain");
    let by_in_flight: Vec<(f64, f64)> = loaded()
        .filter_map(|s| Some((s.in_flight as f64, s.api_process?.rss_bytes as f64)))
        .collect();
    let peak_in_flight = by_in_flight.iter().map(|p| p.0 as u64).max()?;
    let least = by_in_flight.iter().map(|p| p.0 as u64).min()?;
    if peak_in_flight.saturating_sub(least) < 50 {
        return None;
    }
    let by_threads: Vec<(f64, f64)> = loaded()
        .filter_map(|s| {
            let p = s.api_process?;
            Some((p.threads as f64, p.rss_bytes as f64))
        })
        .collect();
    let settings = r.config.settings();
    let blocking = settings.blocking_threads.is_some();
    Some(MemoryFigure {
        api: r.api.clone(),
        allocator: settings.allocator,
        rss_per_in_flight_kib: slope(&by_in_flight)? / 1024.0,
        rss_per_thread_kib: blocking
            .then(|| slope(&by_threads))
            .flatten()
            .map(|b| b / 1024.0),
        peak_rss_mib: r.summary.peak_rss_bytes.map(|b| b as f64 / MIB),
        peak_in_flight,
        peak_threads: r.summary.peak_threads,
    })
}

/// The least-squares slope of y on x; `None` when x does not vary.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let (mx, my) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

fn render(figures: &[MemoryFigure]) -> String {
    let mut s = String::from(
        "| API | allocator | RSS per order in flight | RSS per thread | peak RSS | peak in flight | peak threads |\n|---|---|---:|---:|---:|---:|---:|\n",
    );
    for f in figures {
        s.push_str(&format!(
            "| {} | {} | {:.1} KiB | {} | {} | {} | {} |\n",
            f.api,
            f.allocator.as_deref().unwrap_or("—"),
            f.rss_per_in_flight_kib,
            f.rss_per_thread_kib
                .map_or("—".to_owned(), |k| format!("{k:.1} KiB")),
            f.peak_rss_mib
                .map_or("—".to_owned(), |m| format!("{m:.0} MiB")),
            f.peak_in_flight,
            f.peak_threads.map_or("—".to_owned(), |t| t.to_string()),
        ));
    }
    s
}

/// Each API's figure against the baseline's; `false` when one rose past [`TOLERANCE`] (or an API
/// of the baseline was not measured).
pub fn check(base: &MemoryBaseline, now: &[MemoryFigure]) -> (bool, String) {
    let mut ok = true;
    let mut s = format!(
        "\nAgainst the memory baseline ({}, {}): at most +{:.0} %\n\n| API | baseline | now | change | |\n|---|---:|---:|---:|---|\n",
        base.commit.get(..7).unwrap_or(&base.commit),
        base.measured_at.get(..10).unwrap_or(&base.measured_at),
        100.0 * TOLERANCE
    );
    for b in &base.apis {
        let Some(n) = now.iter().find(|n| n.api == b.api) else {
            ok = false;
            s.push_str(&format!("| {} | | not measured | | **FAILED** |\n", b.api));
            continue;
        };
        let ((was, what), (is, _)) = (b.gated_kib(), n.gated_kib());
        let change = is / was - 1.0;
        let pass = change <= TOLERANCE;
        ok &= pass;
        s.push_str(&format!(
            "| {} | {was:.1} KiB {what} | {is:.1} KiB | {:+.1} % | {} |\n",
            b.api,
            100.0 * change,
            if pass { "ok" } else { "**FAILED**" }
        ));
    }
    (ok, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(api: &str, kib: f64) -> MemoryFigure {
        MemoryFigure {
            api: api.to_owned(),
            allocator: None,
            rss_per_in_flight_kib: kib,
            rss_per_thread_kib: None,
            peak_rss_mib: None,
            peak_in_flight: 550,
            peak_threads: None,
        }
    }

    #[test]
    fn the_slope_is_least_squares() {
        let line: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 3.0 * i as f64 + 7.0)).collect();
        assert!((slope(&line).unwrap() - 3.0).abs() < 1e-9);
        assert_eq!(slope(&[(2.0, 1.0), (2.0, 5.0)]), None, "x does not vary");
    }

    #[test]
    fn the_gate_fails_past_ten_percent_and_on_a_missing_api() {
        let base = MemoryBaseline {
            why: String::new(),
            command: String::new(),
            commit: "abcdef0123".to_owned(),
            measured_at: "2026-12-04T00:00:00Z".to_owned(),
            apis: vec![fig("blocking-api", 100.0), fig("reactive-api", 50.0)],
        };
        let ok = |b: f64, r: f64| check(&base, &[fig("blocking-api", b), fig("reactive-api", r)]).0;
        assert!(ok(109.0, 40.0));
        assert!(!ok(111.0, 50.0), "blocking-api +11 %");
        assert!(!ok(100.0, 56.0), "reactive-api +12 %");
        let (missing, text) = check(&base, &[fig("blocking-api", 90.0)]);
        assert!(!missing && text.contains("not measured"), "{text}");
        // A thread-per-request API is held by its RSS per thread.
        let threads = |kib: f64| MemoryFigure {
            rss_per_thread_kib: Some(kib),
            ..fig("blocking-api", 500.0)
        };
        let base = MemoryBaseline {
            apis: vec![threads(120.0)],
            ..base
        };
        assert!(check(&base, &[threads(130.0)]).0);
        assert!(!check(&base, &[threads(133.0)]).0, "+10.8 % per thread");
    }
}
