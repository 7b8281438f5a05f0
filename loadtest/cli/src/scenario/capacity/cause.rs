//! What stopped an API at the first rate it could not serve within the objective, read from what
//! that run measured — never assumed from the execution model. The rules, in the order they are
//! tried (the first that holds names the cause):
//!
//! 1. **memory** — the process was killed by the kernel for its memory limit, or its peak
//!    memory reached [`MEMORY_SHARE`] of the limit: as its cgroup counts it where the lab read
//!    that (what the limit is enforced against), else its peak RSS;
//!    **crashed** — it died some other way (its figures after that are a dead process's).
//! 2. **harness** — the run was flagged harness-bound (the generator late, the other core
//!    saturated): the rig, not the API, may have set the limit, so the capacity is only "above".
//! 3. **threads** — blocking-api's Little's-law bound (`BLOCKING_THREADS ÷ critical path`) is
//!    below the offered rate and the plateau reached [`BOUND_SHARE`] of it.
//! 4. **in_flight_cap** — admission (`MAX_IN_FLIGHT`) refused orders for want of a place (the
//!    API's own count by reason, `refusals::refusals`; an older file's `overloaded` answers) while
//!    the API's own in-flight count sat at the cap, and the cap's Little's-law bound
//!    (`MAX_IN_FLIGHT ÷ critical path`) is below the offered rate.
//! 5. **cpu** — the API used [`CPU_SHARE`] of its CPU limit over the plateau, or its cgroup was
//!    throttled in [`THROTTLED_SHARE`] of the plateau's CFS periods (the limits' `cpu_period_us`),
//!    or its threads queued for the CPU ([`RUN_QUEUE_PCT`]: schedstat's run delay, summed over
//!    its threads) — a core shared by a thousand threads that wake together is saturated in
//!    bursts its mean use does not show; or, in bursts, most of the orders refused overloaded
//!    (the event loop's lag rule) were refused in seconds throttled in [`THROTTLED_SHARE`] of
//!    their periods — in a pod of a fraction of a core, a few seconds at the quota stall the
//!    event loop past `MAX_LOOP_LAG_MS`, and the transactions of those seconds look slow.
//!    **threads** (measured) — blocking-api's whole pool was busy in [`POOL_FULL_SHARE`] of the
//!    plateau's samples while orders were refused overloaded: each order held its thread longer
//!    than the critical path (its own work, and its wait for the CPU), so threads sized by
//!    Little's law on the critical path ran out below the bound rule 3 computes from it.
//!    **threads** (random arrivals) — refused for want of a thread (the API's own count) in
//!    [`LOSS_SHARE`] of the plateau's arrivals while its pool was busy below its size on
//!    average: the arrivals that found every thread busy for longer than `QUEUE_TIMEOUT_MS`.
//!    **cpu** (stalls) — throttled in [`STALL_SECONDS_SHARE`] of the plateau's seconds and in
//!    [`STALL_PERIODS_SHARE`] of its CFS periods, at half its quota or more on average, and the
//!    seconds throttled most were the slowest (each second's throttled periods and its p99
//!    correlate at [`STALL_CORRELATION`] or more): each throttled period stops every thread until
//!    the next one (period × (1 − quota)), and the latency's tail pays for it while the mean use
//!    stays below the quota. A tail set by something else (the disk's flushes) does not follow
//!    the throttling second by second.
//! 6. **db_pool** — requests waited for a pooled connection in most plateau seconds, or an
//!    acquire timed out (the pool's counter, or 503 `database_unavailable` while requests waited).
//! 7. **postgres** — PostgreSQL's processes used [`POSTGRES_SHARE`] of one core; or its
//!    transactions slowed in bursts: the API's mean transaction time in the slowest plateau
//!    second reached [`SLOW_TX_FACTOR`] × the median second's (and [`SLOW_TX_MIN_MS`] more) while
//!    the pool had no waiters — on a durable database, commits waiting for the disk's flush, the
//!    tail a critical path of a few hundred ms cannot hide. Such a burst is transient
//!    ([`is_transient`]), so the search measures the rate once more before it counts.
//!
//! None of these: **unidentified**, with the objective's figures as the evidence.

use lab_results::scenario::{Cause, StoppedBy};
use lab_results::{OUTCOME_OVERLOADED, Refusals, RunResults, SecondSample};

use super::throttling::{throttled_bursts, throttled_seconds, throttled_share};

/// Peak RSS at this share of the memory limit counts as the memory limit reached.
pub const MEMORY_SHARE: f64 = 0.90;
/// A plateau at this share of the Little's-law bound has reached it.
pub const BOUND_SHARE: f64 = 0.95;
/// Mean CPU over the plateau at this share of the API's quota is its CPU.
pub const CPU_SHARE: f64 = 0.95;
/// Throttled in this share of the plateau's CFS periods: the quota held it back.
pub use super::throttling::THROTTLED_SHARE;
/// blocking-api's threads all busy in this share of the plateau's samples: the pool ran out.
pub const POOL_FULL_SHARE: f64 = 0.9;
/// Refused for want of a thread in this share of the plateau's arrivals, with the pool busy
/// below its size on average: random arrivals found it full (half the objective's 1 %).
pub const LOSS_SHARE: f64 = 0.005;
/// Throttled in at least one CFS period in this share of the plateau's seconds …
pub const STALL_SECONDS_SHARE: f64 = 0.75;
/// … and in this share of all its periods, …
pub const STALL_PERIODS_SHARE: f64 = 0.05;
/// … at this share of its quota or more, on average, …
pub const STALL_CPU_SHARE: f64 = 0.5;
/// … with each second's p99 following its throttled periods (Pearson's r): the quota stalls it.
pub const STALL_CORRELATION: f64 = 0.5;
/// Runnable threads waiting for the CPU, summed, % of a core (100 = one thread always waiting):
/// a thousand threads on one core wake together, and the event loop waits behind them.
pub const RUN_QUEUE_PCT: f64 = 100.0;
/// PostgreSQL at this share of one core, on average over the plateau.
pub const POSTGRES_SHARE: f64 = 0.90;

/// The slowest plateau second's mean transaction time at this multiple of the median second's
/// is a burst of slow transactions …
pub const SLOW_TX_FACTOR: f64 = 2.5;
/// … when it is also this much slower, ms (a few tenths of a ms apart are noise).
pub const SLOW_TX_MIN_MS: f64 = 1.0;
/// `Cause::unit` of the slow-transaction rule.
const SLOW_TX_UNIT: &str = "ms per transaction (slowest second)";

/// A cause that comes and goes within a run (a burst of slow commits, or nothing seen at its
/// limit): the rate is worth measuring once more before the miss counts.
pub fn is_transient(c: &Cause) -> bool {
    c.stopped_by == StoppedBy::Unidentified || c.unit == SLOW_TX_UNIT
}

/// Per plateau second with transactions: the API's mean transaction time, ms (from the
/// cumulative `db_tx_seconds` sum and count of consecutive samples).
fn tx_ms_per_second(secs: &[&SecondSample]) -> Vec<f64> {
    let counters: Vec<(f64, f64)> = secs
        .iter()
        .filter_map(|s| {
            let m = s.api_metrics?;
            Some((m.db_tx_seconds_sum?, m.db_tx_count?))
        })
        .collect();
    counters
        .windows(2)
        .filter(|w| w[1].1 > w[0].1)
        .map(|w| 1000.0 * (w[1].0 - w[0].0) / (w[1].1 - w[0].1))
        .collect()
}

/// The seconds the cause is read over: the plateau's, else every second with arrivals.
fn plateau(r: &RunResults) -> Vec<&SecondSample> {
    let constant: Vec<&SecondSample> = r.seconds.iter().filter(|s| s.phase == "constant").collect();
    if constant.is_empty() {
        r.seconds.iter().filter(|s| s.offered > 0).collect()
    } else {
        constant
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, sum) = values.fold((0u32, 0.0), |(n, s), v| (n + 1, s + v));
    (n > 0).then(|| sum / f64::from(n))
}

/// The refusals as evidence: by the reason the API counted, or, in a file without that record,
/// the clients' `overloaded` answers said to be of unrecorded reason (never a guess at the rule).
fn refusals_text(overloaded: u64, refused: Option<&Refusals>) -> String {
    match refused {
        Some(r) => format!(
            "{overloaded} refused overloaded ({:.0} by the event loop's lag rule, {:.0} for want \
             of a place in time, as the API counted)",
            r.loop_lag, r.overloaded
        ),
        None => {
            format!("{overloaded} refused overloaded (by which rule, this file does not record)")
        }
    }
}

/// The critical path of the mocked dependencies, seconds.
fn critical_path_s(r: &RunResults) -> Option<f64> {
    let ms = r.config.mock_latency_ms?.critical_path_ms() as f64;
    (ms > 0.0).then_some(ms / 1000.0)
}

/// The run's peak memory and what counted it: the cgroup's charge where the lab read it (what
/// the limit is enforced against), else the process's peak RSS (older files, no pod).
fn peak_memory(r: &RunResults) -> Option<(u64, &'static str)> {
    match (r.cgroup_memory_peak_bytes, r.summary.peak_rss_bytes) {
        (Some(b), _) => Some((b, "peak memory charged to its cgroup")),
        (None, Some(b)) => Some((b, "peak RSS")),
        (None, None) => None,
    }
}

/// What stopped the API in `r`, a run that missed the objective.
pub fn stopped_by(r: &RunResults) -> Cause {
    let secs = plateau(r);
    // The plateau's figures (the whole run's when it had none), and the API's settings.
    let summary = r.plateau.as_ref().unwrap_or(&r.summary);
    let settings = r.config.settings();
    let mib = |b: f64| b / (1024.0 * 1024.0);
    if let Some(exit) = &r.api_exit {
        let by = if exit.oom_killed {
            StoppedBy::Memory
        } else {
            StoppedBy::Crashed
        };
        let peak = peak_memory(r).map_or(f64::NAN, |(b, _)| mib(b as f64));
        let limit = r
            .config
            .limits
            .memory_bytes
            .map_or(f64::NAN, |b| mib(b as f64));
        return Cause::new(by, peak, limit, "MiB", exit.describe());
    }
    if let Some(why) = &r.harness_bound {
        return Cause {
            stopped_by: StoppedBy::Harness,
            measured: None,
            threshold: None,
            unit: String::new(),
            evidence: format!("harness-bound: {why}"),
        };
    }
    if let (Some((peak, counted)), Some(limit)) = (peak_memory(r), r.config.limits.memory_bytes)
        && peak as f64 >= MEMORY_SHARE * limit as f64
    {
        let (p, l) = (mib(peak as f64), mib(limit as f64));
        return Cause::new(
            StoppedBy::Memory,
            p,
            MEMORY_SHARE * l,
            "MiB",
            format!("{counted} {p:.0} MiB of its {l:.0} MiB limit"),
        );
    }
    let offered = summary.offered_rps;
    if let Some(l) = &r.littles_law {
        let measured = l
            .measured_plateau_rps
            .unwrap_or(r.summary.ok_throughput_rps);
        if l.bound_rps < offered && measured >= BOUND_SHARE * l.bound_rps {
            return Cause::new(
                StoppedBy::Threads,
                measured,
                BOUND_SHARE * l.bound_rps,
                "orders/s",
                format!(
                    "{measured:.1} orders/s at its Little's-law bound of {:.1} ({} threads ÷ {:.2} s \
                     critical path), below the {offered:.0}/s offered",
                    l.bound_rps,
                    l.threads,
                    l.critical_path_ms / 1000.0
                ),
            );
        }
    }
    let cap = settings
        .max_in_flight
        .map(|m| m as f64)
        .filter(|m| *m > 0.0);
    let overloaded = summary
        .errors_by_kind
        .get(OUTCOME_OVERLOADED)
        .copied()
        .unwrap_or(0);
    let refused = super::refusals::refusals(r).0;
    // The admission cap's own refusals: where the API counted them by reason, those for want of
    // a place; in an older file, every overloaded answer.
    let for_want_of_a_place = refused.map_or(overloaded, |r| r.overloaded as u64);
    let peak_in_flight = secs
        .iter()
        .filter_map(|s| s.api_metrics.and_then(|m| m.in_flight))
        .fold(0.0, f64::max);
    if let (Some(cap), Some(path)) = (cap, critical_path_s(r))
        && for_want_of_a_place > 0
        && cap / path < offered
        && peak_in_flight >= BOUND_SHARE * cap
    {
        return Cause::new(
            StoppedBy::InFlightCap,
            peak_in_flight,
            cap,
            "requests",
            format!(
                "{} at its MAX_IN_FLIGHT of {cap:.0} (bound {:.0}/s at {path:.2} s each, below \
                 the {offered:.0}/s offered)",
                refusals_text(overloaded, refused.as_ref()),
                cap / path
            ),
        );
    }
    let cores = r.config.limits.cpu_cores.unwrap_or(1.0);
    let cpu = mean(
        secs.iter()
            .filter_map(|s| s.api_process.map(|p| p.cpu_percent)),
    );
    if let Some(cpu) = cpu
        && cpu >= CPU_SHARE * 100.0 * cores
    {
        return Cause::new(
            StoppedBy::Cpu,
            cpu,
            CPU_SHARE * 100.0 * cores,
            "% of a core",
            format!(
                "CPU {cpu:.0} % over the plateau, of a limit of {:.0} %",
                100.0 * cores
            ),
        );
    }
    let throttled = throttled_share(&secs, r.config.limits.cpu_period_us);
    if let Some(share) = throttled
        && share >= THROTTLED_SHARE
    {
        return Cause::new(
            StoppedBy::Cpu,
            100.0 * share,
            100.0 * THROTTLED_SHARE,
            "% of CFS periods",
            format!(
                "throttled in {:.0} % of the plateau's CFS periods (its CPU quota)",
                100.0 * share
            ),
        );
    }
    let run_queue = mean(
        secs.iter()
            .filter_map(|s| s.api_process.and_then(|p| p.cpu_wait_percent)),
    );
    if let Some(wait) = run_queue
        && wait >= RUN_QUEUE_PCT
    {
        return Cause::new(
            StoppedBy::Cpu,
            wait,
            RUN_QUEUE_PCT,
            "% of a core waiting",
            format!(
                "its threads queued for the CPU: {:.1} runnable on average beside the one \
                 running (schedstat run delay) at {} % use; {}",
                wait / 100.0,
                cpu.map_or("?".to_owned(), |c| format!("{c:.0}")),
                refusals_text(overloaded, refused.as_ref())
            ),
        );
    }
    if let Some(burst) = throttled_bursts(&secs, r.config.limits.cpu_period_us)
        && overloaded > 0
        && 2 * burst.refused >= overloaded
    {
        return Cause::new(
            StoppedBy::Cpu,
            burst.seconds as f64,
            1.0,
            "seconds throttled in most periods",
            format!(
                "its CPU quota, in bursts: in {} plateau seconds its cgroup was throttled in {} of \
                 the CFS periods, and {} of the plateau's orders refused overloaded were refused \
                 in them; over the plateau {}",
                burst.seconds,
                burst.shares(),
                burst.refused,
                refusals_text(overloaded, refused.as_ref())
            ),
        );
    }
    let wait_ms_per_order = |orders_rps: f64| {
        run_queue
            .filter(|_| orders_rps > 0.0)
            .map_or("?".to_owned(), |w| format!("{:.1}", 10.0 * w / orders_rps))
    };
    let served = summary.ok_throughput_rps;
    if let Some(threads) = settings.blocking_threads.filter(|t| *t > 0)
        && overloaded > 0
    {
        let busy: Vec<f64> = secs
            .iter()
            .filter_map(|s| s.api_metrics.and_then(|m| m.blocking_pool_busy))
            .collect();
        let full = busy.iter().filter(|b| **b >= threads as f64).count();
        if !busy.is_empty() && full as f64 >= POOL_FULL_SHARE * busy.len() as f64 {
            let hold_ms = 1000.0 * threads as f64 / served.max(f64::MIN_POSITIVE);
            let path = critical_path_s(r).map_or("?".to_owned(), |p| format!("{:.0}", 1000.0 * p));
            return Cause::new(
                StoppedBy::Threads,
                full as f64,
                POOL_FULL_SHARE * busy.len() as f64,
                "samples with every thread busy",
                format!(
                    "all {threads} threads busy in {full} of {} plateau samples, and {}: at \
                     {served:.0} orders/s each held its thread \
                     {hold_ms:.0} ms (Little's law: {threads} ÷ {served:.0}/s) against a {path} ms \
                     critical path — the rest its own work, its wait for the CPU ({} ms per order, \
                     schedstat) and the database",
                    busy.len(),
                    refusals_text(overloaded, refused.as_ref()),
                    wait_ms_per_order(served)
                ),
            );
        }
        // A pool busy below its size on average still turns away the arrivals that find it
        // full for longer than they may wait (`QUEUE_TIMEOUT_MS`): refused for want of a
        // thread, as the API counted them.
        let lost = refused.as_ref().map_or(0.0, |r| r.overloaded);
        let arrivals = summary.offered as f64;
        if !busy.is_empty() && arrivals > 0.0 && lost >= LOSS_SHARE * arrivals {
            let mean_busy = busy.iter().sum::<f64>() / busy.len() as f64;
            return Cause::new(
                StoppedBy::Threads,
                100.0 * lost / arrivals,
                100.0 * LOSS_SHARE,
                "% of arrivals refused for want of a thread",
                format!(
                    "its {threads} threads, by random arrivals: {lost:.0} orders ({:.1} % of the \
                     plateau's arrivals) refused for want of a thread while {mean_busy:.1} were \
                     busy on average — arrivals that found all {threads} busy for longer than \
                     they may wait (QUEUE_TIMEOUT_MS)",
                    100.0 * lost / arrivals
                ),
            );
        }
    }
    if let Some(stalls) = throttled_seconds(&secs)
        && let Some(share) = throttled
        && let Some(cpu) = cpu
        && stalls.throttled as f64 >= STALL_SECONDS_SHARE * stalls.seconds as f64
        && share >= STALL_PERIODS_SHARE
        && cpu >= STALL_CPU_SHARE * 100.0 * cores
        && let Some(r_p99) = stalls.p99_correlation
        && r_p99 >= STALL_CORRELATION
    {
        let period_ms = r.config.limits.cpu_period_us.unwrap_or(100_000) as f64 / 1000.0;
        return Cause::new(
            StoppedBy::Cpu,
            100.0 * share,
            100.0 * STALL_PERIODS_SHARE,
            "% of CFS periods, in most seconds",
            format!(
                "its CPU quota, in stalls: throttled in {} of {} plateau seconds ({:.0} % of its CFS \
                 periods; each stops every thread for up to {:.2} ms of a {period_ms:.0} ms period), \
                 its threads waiting for the CPU {} ms per order (schedstat), at {cpu:.0} % mean CPU \
                 of a {:.1} % quota; p99 {:.0} ms, and each second's p99 followed its throttled \
                 periods (r = {r_p99:.2})",
                stalls.throttled,
                stalls.seconds,
                100.0 * share,
                period_ms * (1.0 - cores.min(1.0)),
                wait_ms_per_order(served),
                100.0 * cores,
                summary.latency_ms.p99
            ),
        );
    }
    let waiting = secs
        .iter()
        .filter(|s| s.api_metrics.and_then(|m| m.db_pool_waiting).unwrap_or(0.0) > 0.0)
        .count();
    let timeouts = acquire_timeouts(&secs);
    let unavailable = summary
        .errors_by_kind
        .get("database_unavailable")
        .copied()
        .unwrap_or(0);
    if !secs.is_empty()
        && (2 * waiting > secs.len() || timeouts > 0.0 || (waiting > 0 && unavailable > 0))
    {
        return Cause::new(
            StoppedBy::DbPool,
            waiting as f64,
            secs.len() as f64 / 2.0,
            "seconds",
            format!(
                "requests waited for a pooled connection in {waiting} of {} plateau seconds; \
                 {timeouts:.0} acquire timeouts, {unavailable} answered database_unavailable",
                secs.len()
            ),
        );
    }
    let pg = mean(secs.iter().filter_map(|s| s.harness.postgres_cpu_percent));
    if let Some(pg) = pg
        && pg >= 100.0 * POSTGRES_SHARE
    {
        return Cause::new(
            StoppedBy::Postgres,
            pg,
            100.0 * POSTGRES_SHARE,
            "% of a core",
            format!("PostgreSQL {pg:.0} % of a core over the plateau"),
        );
    }
    let mut tx = tx_ms_per_second(&secs);
    tx.sort_by(f64::total_cmp);
    if tx.len() >= 5 && waiting == 0 {
        let (median, worst) = (tx[tx.len() / 2], tx[tx.len() - 1]);
        if worst >= SLOW_TX_FACTOR * median && worst - median >= SLOW_TX_MIN_MS {
            return Cause::new(
                StoppedBy::Postgres,
                worst,
                SLOW_TX_FACTOR * median,
                SLOW_TX_UNIT,
                format!(
                    "its transactions slowed in bursts: {worst:.1} ms each on average in the \
                     slowest plateau second against {median:.1} ms in the median one, with no \
                     request waiting for a connection ({}); p99 {:.0} ms at {} % CPU",
                    match settings.pg_durability.as_deref() {
                        Some("off") =>
                            "on a database that does not flush its commits: not the \
                                        disk's flush",
                        _ => "durable commits waiting for the disk's flush",
                    },
                    summary.latency_ms.p99,
                    cpu.map_or("?".to_owned(), |c| format!("{c:.0}"))
                ),
            );
        }
    }
    let share = if summary.offered > 0 {
        100.0 * (summary.ok + summary.replayed) as f64 / summary.offered as f64
    } else {
        0.0
    };
    Cause {
        stopped_by: StoppedBy::Unidentified,
        measured: None,
        threshold: None,
        unit: String::new(),
        evidence: format!(
            "no resource at its limit: p99 {:.0} ms, 2xx {share:.1} % of arrivals, {}, mean CPU \
             {} %",
            summary.latency_ms.p99,
            refusals_text(overloaded, refused.as_ref()),
            cpu.map_or("?".to_owned(), |c| format!("{c:.0}"))
        ),
    }
}

/// Pool acquire timeouts over the plateau (a cumulative counter's rise).
fn acquire_timeouts(secs: &[&SecondSample]) -> f64 {
    let counter: Vec<f64> = secs
        .iter()
        .filter_map(|s| s.api_metrics.and_then(|m| m.db_pool_acquire_timeouts))
        .collect();
    match (counter.first(), counter.last()) {
        (Some(a), Some(b)) => b - a,
        _ => 0.0,
    }
}
