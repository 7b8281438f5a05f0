//! The CPU's rules of [`super::RULES`]: its mean use, its cgroup's throttling over the plateau,
//! its threads' wait for a core, throttling in bursts and in stalls, and slow transactions in
//! throttled seconds.

use lab_results::scenario::{Cause, StoppedBy};

use super::super::throttling::{periods_per_second, throttled_bursts, throttled_seconds};
use super::reading::{self, Reading};
use super::*;

/// **cpu** — the API used [`CPU_SHARE`] of its CPU limit over the plateau.
pub(super) fn cpu_use(m: &Reading) -> Option<Cause> {
    let cpu = m.cpu.filter(|c| *c >= CPU_SHARE * 100.0 * m.cores)?;
    Some(Cause::new(
        StoppedBy::Cpu,
        cpu,
        CPU_SHARE * 100.0 * m.cores,
        "% of a core",
        format!(
            "CPU {cpu:.0} % over the plateau, of a limit of {:.0} %",
            100.0 * m.cores
        ),
    ))
}

/// **cpu** — its cgroup was throttled in [`THROTTLED_SHARE`] of the plateau's CFS periods (the
/// limits' `cpu_period_us`).
pub(super) fn cpu_throttled(m: &Reading) -> Option<Cause> {
    let share = m.throttled.filter(|s| *s >= THROTTLED_SHARE)?;
    Some(Cause::new(
        StoppedBy::Cpu,
        100.0 * share,
        100.0 * THROTTLED_SHARE,
        "% of CFS periods",
        format!(
            "throttled in {:.0} % of the plateau's CFS periods (its CPU quota)",
            100.0 * share
        ),
    ))
}

/// **cpu** — its threads queued for the CPU ([`RUN_QUEUE_PCT`]: schedstat's run delay, summed
/// over its threads): a core shared by a thousand threads that wake together is saturated in
/// bursts its mean use does not show.
pub(super) fn cpu_run_queue(m: &Reading) -> Option<Cause> {
    let wait = m.run_queue.filter(|w| *w >= RUN_QUEUE_PCT)?;
    Some(Cause::new(
        StoppedBy::Cpu,
        wait,
        RUN_QUEUE_PCT,
        "% of a core waiting",
        format!(
            "its threads queued for the CPU: {:.1} runnable on average beside the one \
             running (schedstat run delay) at {} % use; {}",
            wait / 100.0,
            m.cpu_text(),
            m.refusals_text()
        ),
    ))
}

/// **cpu** (bursts) — most of the orders refused overloaded (the event loop's lag rule) were
/// refused in seconds throttled in [`THROTTLED_SHARE`] of their periods: in a pod of a fraction
/// of a core, a few seconds at the quota stall the event loop past `MAX_LOOP_LAG_MS`, and the
/// transactions of those seconds look slow.
pub(super) fn cpu_bursts(m: &Reading) -> Option<Cause> {
    let burst = throttled_bursts(&m.secs, m.r.config.limits.cpu_period_us)?;
    let holds = m.overloaded > 0 && 2 * burst.refused >= m.overloaded;
    if !holds {
        return None;
    }
    Some(Cause::new(
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
            m.refusals_text()
        ),
    ))
}

/// **cpu** (stalls) — throttled in [`STALL_SECONDS_SHARE`] of the plateau's seconds and in
/// [`STALL_PERIODS_SHARE`] of its CFS periods, at [`STALL_CPU_SHARE`] of its quota or more on
/// average, and the seconds throttled most were the slowest (each second's throttled periods and
/// its p99 correlate at [`STALL_CORRELATION`] or more): each throttled period stops every thread
/// until the next one (period × (1 − quota)), and the latency's tail pays for it while the mean
/// use stays below the quota. A tail set by something else (the disk's flushes) does not follow
/// the throttling second by second.
pub(super) fn cpu_stalls(m: &Reading) -> Option<Cause> {
    let stalls = throttled_seconds(&m.secs)?;
    let (share, cpu, cores) = (m.throttled?, m.cpu?, m.cores);
    let r_p99 = stalls.p99_correlation?;
    let holds = stalls.throttled as f64 >= STALL_SECONDS_SHARE * stalls.seconds as f64
        && share >= STALL_PERIODS_SHARE
        && cpu >= STALL_CPU_SHARE * 100.0 * cores
        && r_p99 >= STALL_CORRELATION;
    if !holds {
        return None;
    }
    let period_ms = m.r.config.limits.cpu_period_us.unwrap_or(100_000) as f64 / 1000.0;
    Some(Cause::new(
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
            m.wait_ms_per_order(m.served),
            100.0 * cores,
            m.summary.latency_ms.p99
        ),
    ))
}

/// **cpu** (throttled transactions) — the plateau's seconds of slow transactions (as
/// [`super::rules::slow_transactions`] finds them) were each throttled in
/// [`SLOW_TX_THROTTLED_SHARE`] of their CFS periods or more: a transaction the API holds open
/// across a throttled period lasts the period's stall (up to 8.75 ms of a 10 ms period at 0.125
/// CPU, 87.5 ms of a 100 ms one), and looks like a slow database. A disk's flush slows
/// transactions whatever the quota does; these seconds followed the quota.
pub(super) fn cpu_throttled_transactions(m: &Reading) -> Option<Cause> {
    let slow = m.slow_tx_seconds()?;
    let per_second = periods_per_second(m.r.config.limits.cpu_period_us);
    let shares: Vec<f64> = slow
        .slow
        .iter()
        .map(|s| Some(s.throttled_periods? / per_second))
        .collect::<Option<_>>()?;
    let least = shares.iter().copied().fold(f64::INFINITY, f64::min);
    if least < SLOW_TX_THROTTLED_SHARE {
        return None;
    }
    let others = reading::mean(
        slow.others
            .iter()
            .filter_map(|s| Some(s.throttled_periods? / per_second)),
    )
    .unwrap_or(0.0);
    let listed: Vec<String> = slow
        .slow
        .iter()
        .zip(&shares)
        .map(|(s, share)| format!("{:.1} ms throttled in {:.0} %", s.tx_ms, 100.0 * share))
        .collect();
    Some(Cause::new(
        StoppedBy::Cpu,
        100.0 * least,
        100.0 * SLOW_TX_THROTTLED_SHARE,
        "% of CFS periods, in each slow second",
        format!(
            "its CPU quota, under its transactions: each plateau second of slow transactions \
             was a throttled one ({}; the median second {:.1} ms, the other seconds throttled in \
             {:.0} % of their periods on average) — a transaction held across a throttled period \
             lasts its stall; p99 {:.0} ms at {} % mean CPU of a {:.1} % quota",
            listed.join(", "),
            slow.median_ms,
            100.0 * others,
            m.summary.latency_ms.p99,
            m.cpu_text(),
            100.0 * m.cores
        ),
    ))
}
