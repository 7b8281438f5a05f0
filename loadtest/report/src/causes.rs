//! Why an API did or did not keep up, from the evidence in its results: the Little's-law bound
//! reached, a pool exhausted (blocking threads, database connections), the CPU limit reached,
//! load shed at admission, timeouts and other errors, arrivals the generator did not send. Each
//! cause is one sentence naming its numbers; a cause without evidence is not mentioned.

use lab_results::settings::RecordedSettings;
use lab_results::{ApiMetrics, OUTCOME_OVERLOADED, OUTCOME_TIMEOUT, RunResults, SecondSample};

use super::facts::Facts;
use super::littles::{self, plateau_bound};
use super::model::{Unit, cores, fmt, plateau_seconds};
use super::rich::Rich;
use super::tables::Span;

/// A gauge at or above this share of its limit counts as "at the limit".
const AT_LIMIT: f64 = 0.9;
/// Seconds at the limit before it is called a cause (one odd sample is not).
const MIN_SECONDS: f64 = 3.0;

/// The seconds of `run` that belong to `span`.
fn seconds(run: &RunResults, span: Span) -> &[SecondSample] {
    let all = run.seconds.as_slice();
    match (span, plateau_seconds(run)) {
        (Span::Plateau, Some((a, b))) => {
            let (a, b) = ((a as usize).min(all.len()), (b as usize).min(all.len()));
            &all[a..b]
        }
        _ => all,
    }
}

/// `in 29 of the plateau's 30 s` / `in 12 s of the run`.
fn during(n: f64, of: usize, span: Span) -> String {
    match span {
        Span::Plateau => format!("in {n:.0} of the plateau's {of} s"),
        Span::Whole => format!("in {n:.0} s of the run"),
    }
}

/// The bound above is a number the run chose, not the model's limit: say so, with the CPU it had
/// to spare, and the commands that find the API's capacity and size its pool.
fn configured_threads(f: &Facts<'_, '_>, threads: f64) -> Rich {
    let g = f.g;
    let peak_share = g
        .spread(|r| {
            let cores = r
                .config
                .limits
                .cpu_cores
                .filter(|_| r.config.limits.limits_enforced)?;
            seconds(r, f.span)
                .iter()
                .filter_map(|s| s.api_process.map(|p| p.cpu_percent))
                .filter(|c| c.is_finite())
                .reduce(f64::max)
                .map(|peak| peak / (cores * 100.0))
        })
        .map(|s| s.median);
    let cpu = match peak_share {
        Some(share) if share < AT_LIMIT => format!(
            ", not by its CPU (at most {} of its limit)",
            fmt(100.0 * share, Unit::Percent)
        ),
        _ => String::new(),
    };
    Rich::new().plain(format!(
        "{} was bound by its {} configured threads{cpu}: `loadtest lab --scenario capacity` \
         finds the rate it serves within the objective, and `--blocking-threads auto` sizes its \
         pool by Little's law for the profile's peak; where each model breaks when the API, not \
         the rig, runs out first, and how that moves with the dependencies' latency: \
         docs/results/capacity.md in the repository.",
        g.api,
        fmt(threads, Unit::Count)
    ))
}

pub fn causes(f: &Facts<'_, '_>) -> Vec<Rich> {
    let (g, span) = (f.g, f.span);
    let Some(first) = g.first() else {
        return Vec::new();
    };
    let api = g.api;
    let med = |x: &dyn Fn(&RunResults) -> Option<f64>| g.spread(x).map(|s| s.median);
    let n_seconds = seconds(first, span).len();
    let mut out = Vec::new();

    // Little's law: offered above the bound, and the API finishing orders at (nearly) the bound.
    let bound = med(&|r| plateau_bound(r).map(|b| b.rps));
    if let (Some(b), Span::Plateau) = (bound, span)
        && f.offered_rps > b
        && f.orders_rps >= AT_LIMIT * b
        && let Some(row) = littles::rows(std::slice::from_ref(g)).first()
    {
        out.push(
            Rich::new()
                .strong(format!("{api} reached its Little's-law bound"))
                .plain(": ")
                .then(littles::sentence(row)),
        );
        out.push(configured_threads(f, row.threads.median));
    }
    out.extend(exhausted_pools(f, n_seconds));
    out.extend(cpu_limit(f, n_seconds));
    out.extend(errors(f, first));
    if out.is_empty() && !f.kept_up {
        out.push(Rich::new().plain(format!(
            "{api}: no single cause was recorded; see the charts."
        )));
    }
    out
}

/// Over the repeats, the median of the seconds of `f`'s span for which `pred` holds.
fn seconds_where(f: &Facts<'_, '_>, pred: &dyn Fn(&RunResults, &SecondSample) -> bool) -> f64 {
    f.g.spread(|r| Some(seconds(r, f.span).iter().filter(|s| pred(r, s)).count() as f64))
        .map_or(0.0, |s| s.median)
}

/// The two pools: every place taken (busy thread, connection in use), or requests waiting.
fn exhausted_pools(f: &Facts<'_, '_>, n_seconds: usize) -> Vec<Rich> {
    let (g, span, api) = (f.g, f.span, f.g.api);
    let med = |x: &dyn Fn(&RunResults) -> Option<f64>| g.spread(x).map(|s| s.median);
    let count = |pred: &dyn Fn(&RunResults, &SecondSample) -> bool| seconds_where(f, pred);
    let mut out = Vec::new();
    type Gauges = fn(&ApiMetrics) -> (Option<f64>, Option<f64>);
    type Size = fn(&RecordedSettings) -> Option<u64>;
    let pools: [(Size, &str, Gauges); 2] = [
        (
            |s| s.blocking_threads,
            "pool of {} blocking threads",
            |m| (m.blocking_pool_busy, m.blocking_pool_queued),
        ),
        (
            |s| s.db_pool_size,
            "database pool of {} connections",
            |m| (m.db_pool_in_use, m.db_pool_waiting),
        ),
    ];
    for (size_of, what, gauges) in pools {
        let Some(size) = med(&|r| size_of(&r.config.settings()).map(|n| n as f64)) else {
            continue;
        };
        let full = count(&|_, s| {
            s.api_metrics
                .as_ref()
                .map(gauges)
                .is_some_and(|(taken, waiting)| {
                    taken.is_some_and(|t| t >= size) || waiting.is_some_and(|w| w > 0.0)
                })
        });
        if full >= MIN_SECONDS {
            out.push(Rich::new().plain(format!(
                "{api}'s {} was exhausted (all taken or requests waiting) {}.",
                what.replace("{}", &format!("{size:.0}")),
                during(full, n_seconds, span)
            )));
        }
    }
    out
}

/// The CPU limit: reached, or (when the API kept up) how much of it was to spare.
fn cpu_limit(f: &Facts<'_, '_>, n_seconds: usize) -> Option<Rich> {
    let (g, span, api) = (f.g, f.span, f.g.api);
    let med = |x: &dyn Fn(&RunResults) -> Option<f64>| g.spread(x).map(|s| s.median);
    let count = |pred: &dyn Fn(&RunResults, &SecondSample) -> bool| seconds_where(f, pred);
    let limit = med(&|r| {
        let l = &r.config.limits;
        l.cpu_cores.filter(|_| l.limits_enforced).map(|c| c * 100.0)
    });
    let peak_cpu = med(&|r| {
        seconds(r, span)
            .iter()
            .filter_map(|s| s.api_process.map(|p| p.cpu_percent))
            .filter(|c| c.is_finite())
            .reduce(f64::max)
    });
    let (limit, peak) = (limit?, peak_cpu?);
    let busy = count(&|_, s| {
        s.api_process
            .is_some_and(|p| p.cpu_percent >= AT_LIMIT * limit)
    });
    if busy >= MIN_SECONDS {
        Some(Rich::new().plain(format!(
            "{api}'s CPU was at its limit ({}) {}.",
            cores(limit / 100.0),
            during(busy, n_seconds, span)
        )))
    } else if f.kept_up {
        Some(Rich::new().plain(format!(
            "{api} had CPU to spare: it peaked at {} of its limit ({}).",
            fmt(100.0 * peak / limit, Unit::Percent),
            cores(limit / 100.0)
        )))
    } else {
        None
    }
}

/// Shed, timed out, failed otherwise, not sent.
fn errors(f: &Facts<'_, '_>, first: &RunResults) -> Vec<Rich> {
    let (g, span, api) = (f.g, f.span, f.g.api);
    let med = |x: &dyn Fn(&RunResults) -> Option<f64>| g.spread(x).map(|s| s.median);
    let kind = |k: &'static str| {
        med(&|r| {
            span.of(r)
                .map(|s| s.errors_by_kind.get(k).copied().unwrap_or(0) as f64)
        })
        .unwrap_or(0.0)
    };
    let offered = med(&|r| span.of(r).map(|s| s.offered as f64)).unwrap_or(0.0);
    let whose = match span {
        Span::Plateau => "the plateau's",
        Span::Whole => "the run's",
    };
    let of = |n: f64| {
        format!(
            "{} of {whose} {} requests ({})",
            fmt(n, Unit::Count),
            fmt(offered, Unit::Count),
            fmt(100.0 * n / offered, Unit::Percent)
        )
    };
    let mut out = Vec::new();
    let shed = kind(OUTCOME_OVERLOADED);
    if shed > 0.0 {
        let fast = med(&|r| span.of(r)?.overloaded_latency_ms.map(|l| l.p99))
            .map(|p| {
                format!(
                    ", each refusal answered within {} at p99",
                    fmt(p, Unit::Millis)
                )
            })
            .unwrap_or_default();
        out.push(Rich::new().plain(format!(
            "{api} shed {} at admission with 503 overloaded{fast}.",
            of(shed)
        )));
    }
    let timeouts = kind(OUTCOME_TIMEOUT);
    if timeouts > 0.0 {
        out.push(Rich::new().plain(format!(
            "{} at {api} got no answer within the {} request timeout.",
            of(timeouts),
            fmt(first.config.request_timeout_ms as f64, Unit::Millis)
        )));
    }
    let mut others: Vec<(String, f64)> = span
        .of(first)
        .map(|s| s.errors_by_kind.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|k| k != OUTCOME_OVERLOADED && k != OUTCOME_TIMEOUT)
        .map(|k| {
            let n = med(&|r| {
                span.of(r)
                    .map(|s| s.errors_by_kind.get(&k).copied().unwrap_or(0) as f64)
            });
            (k, n.unwrap_or(0.0))
        })
        .filter(|(_, n)| *n > 0.0)
        .collect();
    others.sort_by(|a, b| b.1.total_cmp(&a.1));
    if !others.is_empty() {
        let list: Vec<String> = others
            .iter()
            .map(|(k, n)| format!("{k} {}", fmt(*n, Unit::Count)))
            .collect();
        out.push(Rich::new().plain(format!("{api}'s other errors: {}.", list.join(", "))));
    }
    let not_sent = med(&|r| span.of(r).map(|s| s.not_sent as f64)).unwrap_or(0.0);
    if not_sent > 0.0 {
        out.push(Rich::new().plain(format!(
            "{} for {api} were not sent: the generator's cap of {} open requests was reached.",
            of(not_sent),
            fmt(first.config.max_in_flight as f64, Unit::Count)
        )));
    }
    out
}
