//! How one lab run of `--scenario capacity` or `--scenario threads` becomes a row of its
//! `scenario.json` (`lab_results::scenario::StepPoint`): what the runner (`capacity.rs`) records
//! and the page (`lab_report::scenario::capacity_table`) reads.

use lab_results::RunResults;
use lab_results::numbers::MIB;
use lab_results::scenario::StepPoint;

use super::capacity_cause::stopped_by;

/// The figures of one run, over its plateau.
pub fn step_point(r: &RunResults, rate: f64, met: bool) -> StepPoint {
    let s = r.plateau.as_ref().unwrap_or(&r.summary);
    let ok_share_pct = if s.offered > 0 {
        100.0 * (s.ok + s.replayed) as f64 / s.offered as f64
    } else {
        0.0
    };
    let orders = r.summary.ok.max(1) as f64;
    StepPoint {
        api: r.api.clone(),
        blocking_threads: r
            .config
            .api_settings
            .get("BLOCKING_THREADS")
            .and_then(|t| t.parse().ok()),
        allocator: r.config.api_settings.get("ALLOCATOR").cloned(),
        rate_rps: rate,
        met_objective: met,
        harness_bound: r.harness_bound.clone(),
        orders_rps: s.ok_throughput_rps,
        ok_share_pct,
        p99_ms: s.latency_ms.p99,
        peak_rss_mib: r.summary.peak_rss_bytes.map(|b| b as f64 / MIB),
        peak_threads: r.summary.peak_threads,
        rss_per_thread_kib: rss_per_thread_kib(r),
        cpu_s_per_1000: r.summary.api_cpu_seconds.map(|c| 1000.0 * c / orders),
        money_balanced: r.money.as_ref().map(|m| m.balanced()),
        died: r.api_exit.as_ref().map(|e| e.describe()),
        cause: (!met).then(|| stopped_by(r)),
    }
}

/// (RSS at the peak thread count − RSS of the first sample) ÷ (peak threads − first threads), KiB:
/// what each thread the load added cost. `None` when the load added fewer than 10 threads.
pub fn rss_per_thread_kib(r: &RunResults) -> Option<f64> {
    let procs: Vec<_> = r.seconds.iter().filter_map(|s| s.api_process).collect();
    let first = procs.first()?;
    let peak = procs.iter().max_by_key(|p| (p.threads, p.rss_bytes))?;
    let threads = peak.threads.checked_sub(first.threads)?;
    (threads >= 10)
        .then(|| (peak.rss_bytes as f64 - first.rss_bytes as f64) / threads as f64 / 1024.0)
}
