//! The rules of [`super::RULES`] but the CPU's (`cpu.rs`), one function each: the cause with its
//! evidence where the rule holds, `None` where it does not. Each reads only the run
//! ([`Reading`]); their order is the list's.

use lab_results::scenario::{Cause, StoppedBy};

use super::reading::{Reading, mean, mib};
use super::*;

/// **memory** — the process was killed by the kernel for its memory limit; **crashed** — it died
/// some other way (its figures after that are a dead process's).
pub(super) fn died(m: &Reading) -> Option<Cause> {
    let exit = m.r.api_exit.as_ref()?;
    let by = if exit.oom_killed {
        StoppedBy::Memory
    } else {
        StoppedBy::Crashed
    };
    let peak = m.peak_memory().map_or(f64::NAN, |(b, _)| mib(b as f64));
    let limit =
        m.r.config
            .limits
            .memory_bytes
            .map_or(f64::NAN, |b| mib(b as f64));
    Some(Cause::new(by, peak, limit, "MiB", exit.describe()))
}

/// **harness** — the run was flagged harness-bound (the generator late, the other core
/// saturated): the rig, not the API, may have set the limit, so the capacity is only "above".
pub(super) fn harness_bound(m: &Reading) -> Option<Cause> {
    let why = m.r.harness_bound.as_ref()?;
    Some(Cause {
        stopped_by: StoppedBy::Harness,
        measured: None,
        threshold: None,
        unit: String::new(),
        evidence: format!("harness-bound: {why}"),
    })
}

/// **memory** — its peak memory reached [`MEMORY_SHARE`] of the limit: as its cgroup counts it
/// where the lab read that (what the limit is enforced against), else its peak RSS.
pub(super) fn memory_peak(m: &Reading) -> Option<Cause> {
    let (peak, counted) = m.peak_memory()?;
    let limit = m.r.config.limits.memory_bytes?;
    let holds = peak as f64 >= MEMORY_SHARE * limit as f64;
    if !holds {
        return None;
    }
    let (p, l) = (mib(peak as f64), mib(limit as f64));
    Some(Cause::new(
        StoppedBy::Memory,
        p,
        MEMORY_SHARE * l,
        "MiB",
        format!("{counted} {p:.0} MiB of its {l:.0} MiB limit"),
    ))
}

/// **threads** — blocking-api's Little's-law bound (`BLOCKING_THREADS ÷ critical path`) is below
/// the offered rate and the plateau reached [`BOUND_SHARE`] of it.
pub(super) fn thread_bound(m: &Reading) -> Option<Cause> {
    let l = m.r.littles_law.as_ref()?;
    let offered = m.offered;
    let measured = l
        .measured_plateau_rps
        .unwrap_or(m.r.summary.ok_throughput_rps);
    let holds = l.bound_rps < offered && measured >= BOUND_SHARE * l.bound_rps;
    if !holds {
        return None;
    }
    Some(Cause::new(
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
    ))
}

/// **in_flight_cap** — admission (`MAX_IN_FLIGHT`) refused orders for want of a place (the API's
/// own count by reason; in an older file, every `overloaded` answer) while the API's own
/// in-flight count sat at the cap, and the cap's Little's-law bound (`MAX_IN_FLIGHT ÷ critical
/// path`) is below the offered rate.
pub(super) fn admission_cap(m: &Reading) -> Option<Cause> {
    let cap = m
        .settings
        .max_in_flight
        .map(|c| c as f64)
        .filter(|c| *c > 0.0)?;
    let path = m.critical_path_s()?;
    let for_want_of_a_place = m.refused.map_or(m.overloaded, |r| r.overloaded as u64);
    let peak_in_flight = m
        .secs
        .iter()
        .filter_map(|s| s.api_metrics.and_then(|a| a.in_flight))
        .fold(0.0, f64::max);
    let offered = m.offered;
    let holds =
        for_want_of_a_place > 0 && cap / path < offered && peak_in_flight >= BOUND_SHARE * cap;
    if !holds {
        return None;
    }
    Some(Cause::new(
        StoppedBy::InFlightCap,
        peak_in_flight,
        cap,
        "requests",
        format!(
            "{} at its MAX_IN_FLIGHT of {cap:.0} (bound {:.0}/s at {path:.2} s each, below \
             the {offered:.0}/s offered)",
            m.refusals_text(),
            cap / path
        ),
    ))
}

/// blocking-api's thread count, where orders were refused overloaded.
fn threads_refusing(m: &Reading) -> Option<u64> {
    m.settings
        .blocking_threads
        .filter(|t| *t > 0 && m.overloaded > 0)
}

/// **threads** (measured) — blocking-api's whole pool was busy in [`POOL_FULL_SHARE`] of the
/// plateau's samples while orders were refused overloaded: each order held its thread longer
/// than the critical path (its own work, and its wait for the CPU), so threads sized by
/// Little's law on the critical path ran out below the bound [`thread_bound`] computes from it.
pub(super) fn pool_full(m: &Reading) -> Option<Cause> {
    let threads = threads_refusing(m)?;
    let busy = m.pool_busy();
    let full = busy.iter().filter(|b| **b >= threads as f64).count();
    let holds = !busy.is_empty() && full as f64 >= POOL_FULL_SHARE * busy.len() as f64;
    if !holds {
        return None;
    }
    let served = m.served;
    let hold_ms = 1000.0 * threads as f64 / served.max(f64::MIN_POSITIVE);
    let path = m
        .critical_path_s()
        .map_or("?".to_owned(), |p| format!("{:.0}", 1000.0 * p));
    Some(Cause::new(
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
            m.refusals_text(),
            m.wait_ms_per_order(served)
        ),
    ))
}

/// **threads** (random arrivals) — refused for want of a thread (the API's own count) in
/// [`LOSS_SHARE`] of the plateau's arrivals while its pool was busy below its size on average:
/// the arrivals that found every thread busy for longer than `QUEUE_TIMEOUT_MS`.
pub(super) fn random_arrivals(m: &Reading) -> Option<Cause> {
    let threads = threads_refusing(m)?;
    let busy = m.pool_busy();
    let lost = m.refused.as_ref().map_or(0.0, |r| r.overloaded);
    let arrivals = m.summary.offered as f64;
    let holds = !busy.is_empty() && arrivals > 0.0 && lost >= LOSS_SHARE * arrivals;
    if !holds {
        return None;
    }
    let mean_busy = busy.iter().sum::<f64>() / busy.len() as f64;
    Some(Cause::new(
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
    ))
}

/// **db_pool** — requests waited for a pooled connection in most plateau seconds, or an acquire
/// timed out (the pool's counter, or 503 `database_unavailable` while requests waited).
pub(super) fn db_pool(m: &Reading) -> Option<Cause> {
    let (waiting, seconds) = (m.waiting, m.secs.len());
    let timeouts = m.acquire_timeouts();
    let unavailable = m
        .summary
        .errors_by_kind
        .get("database_unavailable")
        .copied()
        .unwrap_or(0);
    let holds = seconds > 0
        && (2 * waiting > seconds || timeouts > 0.0 || (waiting > 0 && unavailable > 0));
    if !holds {
        return None;
    }
    Some(Cause::new(
        StoppedBy::DbPool,
        waiting as f64,
        seconds as f64 / 2.0,
        "seconds",
        format!(
            "requests waited for a pooled connection in {waiting} of {seconds} plateau seconds; \
             {timeouts:.0} acquire timeouts, {unavailable} answered database_unavailable"
        ),
    ))
}

/// **postgres** — PostgreSQL's processes used [`POSTGRES_SHARE`] of one core.
pub(super) fn postgres_core(m: &Reading) -> Option<Cause> {
    let pg = mean(m.secs.iter().filter_map(|s| s.harness.postgres_cpu_percent))
        .filter(|pg| *pg >= 100.0 * POSTGRES_SHARE)?;
    Some(Cause::new(
        StoppedBy::Postgres,
        pg,
        100.0 * POSTGRES_SHARE,
        "% of a core",
        format!("PostgreSQL {pg:.0} % of a core over the plateau"),
    ))
}

/// **postgres** (slow transactions) — the API's mean transaction time in the slowest plateau
/// second reached [`SLOW_TX_FACTOR`] × the median second's (and [`SLOW_TX_MIN_MS`] more) while
/// the pool had no waiters: on a durable database, commits waiting for the disk's flush, the
/// tail a critical path of a few hundred ms cannot hide. Such a burst is transient
/// ([`is_transient`]), so the search measures the rate once more before it counts. Read after
/// [`super::cpu::cpu_throttled_transactions`]: slow seconds the API's own quota throttled are
/// its CPU's.
pub(super) fn slow_transactions(m: &Reading) -> Option<Cause> {
    let slow = m.slow_tx_seconds()?;
    let (median, worst) = (slow.median_ms, slow.worst_ms());
    let flush = match m.settings.pg_durability.as_deref() {
        Some("off") => "on a database that does not flush its commits: not the disk's flush",
        _ => "durable commits waiting for the disk's flush",
    };
    Some(Cause::new(
        StoppedBy::Postgres,
        worst,
        SLOW_TX_FACTOR * median,
        SLOW_TX_UNIT,
        format!(
            "its transactions slowed in bursts: {worst:.1} ms each on average in the \
             slowest plateau second against {median:.1} ms in the median one, with no \
             request waiting for a connection ({flush}); p99 {:.0} ms at {} % CPU",
            m.summary.latency_ms.p99,
            m.cpu_text()
        ),
    ))
}

/// None of the rules: **unidentified**, with the objective's figures as the evidence.
pub(super) fn unidentified(m: &Reading) -> Cause {
    let s = m.summary;
    let share = if s.offered > 0 {
        100.0 * (s.ok + s.replayed) as f64 / s.offered as f64
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
            s.latency_ms.p99,
            m.refusals_text(),
            m.cpu_text()
        ),
    }
}
