//! Turns what the driver recorded and the sampler read into a [`RunResults`].
//!
//! Figures are derived here, once, so every number in a report has one definition: whole-run
//! percentiles from the whole-run histogram, the plateau from the requests that *arrived* in the
//! constant phase (their throughput from the seconds inside it), CPU-seconds from cumulative
//! `/proc` counters, and the harness-bound verdict from rules written out in [`harness_bound`].

use crate::driver::DriverOutput;
use crate::profile::Profile;
use crate::recorder::{Acc, Recorder, lateness, percentiles};
use crate::sampler::SampleRow;
use lab_results::*;

/// Lateness p99 above which the generator is not keeping its schedule, ms.
pub const LATE_P99_MS: f64 = 50.0;
/// A process at or above this share of what it may use is "saturated".
pub const SATURATED: f64 = 0.9;
/// An API whose threads wait this long for a CPU (% of a second) is held back by the machine.
pub const API_CPU_WAIT_PERCENT: f64 = 20.0;

/// Everything about a run that the measurements do not say.
#[derive(Debug, Clone)]
pub struct RunMeta {
    pub api: String,
    pub label: String,
    pub target_url: String,
    pub run_id: String,
    pub repeat_index: u32,
    pub repeats: u32,
    pub config: RunConfig,
    pub environment: Environment,
    pub goose_reports: Vec<String>,
    pub timeline: Vec<TimelineMark>,
    /// Write every histogram into the results (`histograms`), so the run can be merged with its
    /// other shards or re-analysed; the lab's runs leave them out.
    pub keep_histograms: bool,
}

/// Builds the results of one run.
pub fn assemble(
    meta: RunMeta,
    profile: &Profile,
    out: &DriverOutput,
    rows: &[SampleRow],
) -> RunResults {
    let rec = &out.recorder;
    let n = rec.seconds.len();
    let seconds = second_samples(profile, out, rows);
    let rows = &rows[..rows.len().min(n)];
    let mut config = meta.config;
    config.profile.phases.truncate(out.phases_run);
    let timeline = with_phases(meta.timeline, profile, out.phases_run);
    let summary = summarize(&rec.total, &rec.seconds, rows, n as f64, None);
    let plateau = plateau_summary(profile, rec, rows);
    let littles_law = littles_law(&config, profile, plateau.as_ref());
    let knee_rps = profile
        .is_stress()
        .then(|| knee(profile, &rec.phases[..out.phases_run]))
        .flatten();
    let harness_bound = harness_bound(&seconds, &config.limits, meta.environment.cores);
    RunResults {
        schema_version: SCHEMA_VERSION,
        api: meta.api,
        label: meta.label,
        target_url: meta.target_url,
        run_id: meta.run_id,
        repeat_index: meta.repeat_index,
        repeats: meta.repeats,
        started_at: out.started_at.to_rfc3339(),
        elapsed_s: out.elapsed_s,
        config,
        environment: meta.environment,
        seconds,
        timeline,
        plateau,
        summary,
        littles_law,
        harness_bound,
        invariants: Vec::new(),
        knee_rps,
        goose_reports: meta.goose_reports,
        money: None,
        retries: out.retries.clone(),
        after_give_up: None,
        db_activity: None,
        broker: None,
        shard: shard_record(out),
        shards: Vec::new(),
        histograms: meta.keep_histograms.then(|| crate::histograms::encode(rec)),
        api_exit: None,
        cgroup_memory_peak_bytes: None,
        cpu_by_role: None,
    }
}

/// The per-second series: what the driver recorded and the sampler read in each second, the
/// requests in flight carried from one to the next.
fn second_samples(profile: &Profile, out: &DriverOutput, rows: &[SampleRow]) -> Vec<SecondSample> {
    let rec = &out.recorder;
    let n = rec.seconds.len();
    let mut in_flight = 0u64;
    // Seconds after the last phase are the drain; a closed profile has a single phase.
    let idle = if profile.phases.is_empty() {
        "closed"
    } else {
        "drain"
    };
    (0..n)
        .map(|t| {
            let acc = &rec.seconds[t];
            let row = rows.get(t).cloned().unwrap_or_default();
            in_flight = (in_flight + acc.sent).saturating_sub(acc.completed);
            SecondSample {
                t: t as u32,
                phase: profile
                    .phase_at(t as f64)
                    .filter(|&p| p < out.phases_run)
                    .map_or(idle.to_owned(), |p| profile.phases[p].name.clone()),
                offered: acc.offered,
                sent: acc.sent,
                completed: acc.completed,
                not_sent: acc.not_sent,
                outcomes: acc.outcomes.clone(),
                latency_ms: percentiles(&acc.latency),
                lateness_ms: lateness(&acc.lateness),
                api_process: row.api,
                api_metrics: row.metrics,
                harness: row.harness,
                in_flight,
                answered_after: acc.answered_after.clone(),
            }
        })
        .collect()
}

/// The run's timeline with each phase's start and, for a stress run stopped early, where it
/// stopped.
fn with_phases(
    marks: Vec<TimelineMark>,
    profile: &Profile,
    phases_run: usize,
) -> Vec<TimelineMark> {
    let mut marks = marks;
    for p in profile.phases.iter().take(phases_run) {
        marks.push(TimelineMark {
            t: p.start_s,
            label: format!("{} {}→{}/s", p.name, p.from_rate, p.to_rate),
        });
    }
    if phases_run < profile.phases.len() {
        let end = profile.phases[phases_run].start_s;
        marks.push(TimelineMark {
            t: end,
            label: "stress: a step failed, schedule stopped".to_owned(),
        });
    }
    marks.sort_by(|a, b| a.t.total_cmp(&b.t));
    marks
}

/// The plateau's summary: the requests that arrived in the constant phase, their rates over the
/// seconds inside it.
fn plateau_summary(profile: &Profile, rec: &Recorder, rows: &[SampleRow]) -> Option<Summary> {
    let n = rec.seconds.len();
    profile
        .plateau()
        .zip(profile.plateau_seconds())
        .map(|(i, (a, b))| {
            let p = &profile.phases[i];
            let (a, b) = (a.min(n), b.min(n).max(a.min(n)));
            let offered_rps = rec.phases[i].offered as f64 / p.duration_s;
            summarize(
                &rec.phases[i],
                &rec.seconds[a..b],
                &rows[a.min(rows.len())..b.min(rows.len())],
                (b - a) as f64,
                Some(offered_rps),
            )
        })
}

/// A shard's record of its share of the run (`None` for a run that is not a shard).
fn shard_record(out: &DriverOutput) -> Option<ShardRecord> {
    let rec = &out.recorder;
    out.start.map(|start| ShardRecord {
        index: out.shard.index,
        count: out.shard.count,
        seed: out.seed,
        offered_arrivals: out.tally.arrivals,
        arrival_fingerprint: out.tally.fingerprint,
        intended_start_unix_ms: start.intended_unix_ms,
        actual_start_unix_ms: start.actual_unix_ms,
        lateness_ms: lateness(&rec.total.lateness).unwrap_or_default(),
        harness_bound: None,
        file: None,
    })
}

/// Counts from `acc`; rates over `window` seconds (completions in `buckets`); CPU from `rows`.
fn summarize(
    acc: &Acc,
    buckets: &[Acc],
    rows: &[SampleRow],
    window: f64,
    offered_rps: Option<f64>,
) -> Summary {
    let per_s = |x: u64| if window > 0.0 { x as f64 / window } else { 0.0 };
    let completed: u64 = buckets.iter().map(|b| b.completed).sum();
    let ok: u64 = buckets.iter().map(Acc::ok).sum();
    let cpu: Option<f64> = rows.iter().map(|r| r.api_cpu_seconds).sum();
    let peak =
        |f: fn(&ProcessSample) -> u64| rows.iter().filter_map(|r| r.api.as_ref().map(f)).max();
    Summary {
        duration_s: window,
        offered: acc.offered,
        sent: acc.sent,
        completed: acc.completed,
        not_sent: acc.not_sent,
        ok: acc.ok(),
        replayed: acc.replayed(),
        errors: acc.errors(),
        errors_by_kind: acc.errors_by_kind(),
        latency_ms: percentiles(&acc.latency).unwrap_or_default(),
        ok_latency_ms: percentiles(&acc.latency_of(OUTCOME_CREATED)),
        overloaded_latency_ms: percentiles(&acc.latency_of(OUTCOME_OVERLOADED)),
        throughput_rps: per_s(completed),
        ok_throughput_rps: per_s(ok),
        offered_rps: offered_rps.unwrap_or_else(|| per_s(acc.offered)),
        api_cpu_seconds: cpu.filter(|_| !rows.is_empty()),
        cpu_seconds_per_1000_ok: cpu
            .filter(|_| ok > 0 && !rows.is_empty())
            .map(|c| c * 1000.0 / ok as f64),
        peak_rss_bytes: peak(|p| p.rss_bytes),
        peak_threads: peak(|p| p.threads),
        peak_fds: peak(|p| p.fds),
        lateness_ms: lateness(&acc.lateness).unwrap_or_default(),
    }
}

/// `BLOCKING_THREADS ÷ critical path` beside the measured plateau; a dependency slowed during the
/// plateau (`--inject`) moves or annotates the bound, see
/// [`lab_results::inject::Injection::adjust_littles_law`].
fn littles_law(
    config: &RunConfig,
    profile: &Profile,
    plateau: Option<&Summary>,
) -> Option<LittlesLaw> {
    let threads = config.settings().blocking_threads?;
    let latencies = config.mock_latency_ms?;
    let critical_path_ms = latencies.critical_path_ms() as f64;
    let mut ll = (critical_path_ms > 0.0).then(|| LittlesLaw {
        threads,
        critical_path_ms,
        bound_rps: threads as f64 / (critical_path_ms / 1000.0),
        measured_plateau_rps: plateau.map(|p| p.ok_throughput_rps),
        note: None,
    })?;
    if let (Some(injection), Some(i)) = (config.injection, profile.plateau()) {
        let p = &profile.phases[i];
        injection.adjust_littles_law(&mut ll, latencies, (p.start_s, p.start_s + p.duration_s));
    }
    Some(ll)
}

/// Stress: the highest step rate before the first step that failed (judged on final data).
fn knee(profile: &Profile, steps: &[Acc]) -> Option<f64> {
    let held = steps.iter().take_while(|s| !s.step_failed()).count();
    held.checked_sub(1).map(|i| profile.phases[i].to_rate)
}

/// The machine's busy share beyond the lab's own processes at which a late generator's seconds
/// say so, % of a core: something else ran on the machine then.
pub const OUTSIDE_PERCENT: f64 = 20.0;

/// Mean CPU, % of a core, that the machine spent beyond the API, the generator (the sampler is
/// a thread of it), mock-deps and PostgreSQL over `seconds`: other processes, the kernel's own
/// threads, and on a virtual machine the time its host took (steal); `None` without the
/// machine's reading.
pub fn outside_the_lab(seconds: &[&SecondSample]) -> Option<f64> {
    mean_of(seconds, |s| {
        let ours = lab_cpu_percent(s);
        s.harness.machine_cpu_percent.map(|m| (m - ours).max(0.0))
    })
}

/// The CPU of the lab's own processes in one second, % of a core: the API, the generator (its
/// sampler included), mock-deps and PostgreSQL, those measured.
fn lab_cpu_percent(s: &SecondSample) -> f64 {
    let h = &s.harness;
    [
        s.api_process.map(|p| p.cpu_percent),
        h.generator_cpu_percent,
        h.mock_deps_cpu_percent,
        h.postgres_cpu_percent,
    ]
    .iter()
    .flatten()
    .sum()
}

/// The mean of `f` over the seconds that have it.
fn mean_of(seconds: &[&SecondSample], f: impl Fn(&SecondSample) -> Option<f64>) -> Option<f64> {
    let values: Vec<f64> = seconds.iter().filter_map(|s| f(s)).collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Says why the harness, not the API, may have been the limit; `None` when nothing points at it.
///
/// Rules: the generator's lateness p99 above [`LATE_P99_MS`] for 2 s or more (it did not offer the
/// load it claims); or, for 3 s or more while the API used less than 90 % of its CPU quota
/// (its limit when enforced, else the machine): the generator at ≥ 90 % of the machine's cores,
/// mock-deps or PostgreSQL at ≥ 90 % of one core, the API's threads runnable but waiting for a CPU
/// for ≥ [`API_CPU_WAIT_PERCENT`] % of the second (schedstat) — unless the API was pinned alone to
/// its CPUs (`limits.pinning`): then no harness process could take them, and the wait is its own
/// threads queueing for them (blocking-api's 200 wake in bursts) —, or the machine as a whole at
/// ≥ 90 % busy.
pub fn harness_bound(seconds: &[SecondSample], limits: &Limits, cores: u32) -> Option<String> {
    let cores = f64::from(cores.max(1));
    let quota = if limits.limits_enforced {
        limits.cpu_cores.unwrap_or(cores)
    } else {
        cores
    };
    let mut reasons = Vec::new();
    let late: Vec<(u32, f64)> = seconds
        .iter()
        .filter_map(|s| {
            s.lateness_ms
                .filter(|l| l.p99 > LATE_P99_MS)
                .map(|l| (s.t, l.p99))
        })
        .collect();
    if late.len() >= 2 {
        let worst = late.iter().map(|l| l.1).fold(0.0, f64::max);
        let late_seconds: Vec<&SecondSample> = seconds
            .iter()
            .filter(|s| late.iter().any(|l| l.0 == s.t))
            .collect();
        let outside = outside_the_lab(&late_seconds)
            .filter(|o| *o >= OUTSIDE_PERCENT)
            .map_or(String::new(), |o| {
                let steal = mean_of(&late_seconds, |s| s.harness.machine_steal_percent).map_or(
                    String::new(),
                    |st| {
                        format!(
                            ", {st:.0} % of it the host's (steal: other tenants of the VM's host)"
                        )
                    },
                );
                format!(
                    "; in those seconds {o:.0} % of a core ran outside the lab's processes{steal}"
                )
            });
        reasons.push(format!(
            "generator fell behind its schedule: lateness p99 > {LATE_P99_MS} ms in {} s (first at t={} s, worst {worst:.0} ms){outside}",
            late.len(),
            late[0].0
        ));
    }
    let api_idle = |s: &SecondSample| {
        s.api_process
            .is_none_or(|p| p.cpu_percent < SATURATED * 100.0 * quota)
    };
    // A reason ("{what}, N s (first at …)") when `found` held for 3 s or more while the API was
    // below its quota.
    let mut when_api_idle = |what: String, found: &dyn Fn(&SecondSample) -> bool| {
        let hits: Vec<u32> = seconds
            .iter()
            .filter(|s| api_idle(s) && found(s))
            .map(|s| s.t)
            .collect();
        if hits.len() >= 3 {
            reasons.push(format!(
                "{what}, {} s (first at t={} s)",
                hits.len(),
                hits[0]
            ));
        }
    };
    let mut check = |what: &str, limit: f64, f: &dyn Fn(&SecondSample) -> Option<f64>| {
        let what = format!("{what} at ≥ {limit:.0} % CPU while the API was below its quota");
        when_api_idle(what, &|s| f(s).is_some_and(|v| v >= limit));
    };
    check("generator", SATURATED * 100.0 * cores, &|s| {
        s.harness.generator_cpu_percent
    });
    check("mock-deps", SATURATED * 100.0, &|s| {
        s.harness.mock_deps_cpu_percent
    });
    check("PostgreSQL", SATURATED * 100.0, &|s| {
        s.harness.postgres_cpu_percent
    });
    check(
        "the machine (every process, other tenants included)",
        SATURATED * 100.0 * cores,
        &|s| {
            s.harness
                .machine_cpu_percent
                .or_else(|| Some(lab_cpu_percent(s)))
        },
    );
    if limits.pinning.is_none() {
        when_api_idle(
            format!(
                "the API runnable but waiting for a CPU ≥ {API_CPU_WAIT_PERCENT:.0} % of the time while \
                 below its quota (the machine's other processes had the cores)"
            ),
            &|s| {
                s.api_process
                    .and_then(|p| p.cpu_wait_percent)
                    .is_some_and(|w| w >= API_CPU_WAIT_PERCENT)
            },
        );
    }
    (!reasons.is_empty()).then(|| reasons.join("; "))
}
