//! Little's law for the thread-per-request API: `BLOCKING_THREADS ÷ critical path` is the most
//! orders per second it can finish, beside what it finished over the plateau. When a dependency
//! was slowed (`--inject`) for part of the plateau, the bound that applies is the time-weighted
//! mean of the bounds in force — computed here from the run's configuration.

use lab_results::RunResults;
use lab_results::inject::Dep;

use super::model::{ApiRuns, Spread, Unit, fmt};
use super::rich::Rich;

/// The bound that applied to one run's plateau.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// Orders per second: the results' bound, or the time-weighted one.
    pub rps: f64,
    /// Set when a slowdown covered part of the plateau: `(seconds slowed, plateau seconds, the
    /// bound while slowed, the slowed dependency, its slowed latency ms)`.
    pub partial: Option<Partial>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Partial {
    pub slowed_s: f64,
    pub plateau_s: f64,
    pub slowed_rps: f64,
    pub dependency: Dep,
    pub latency_ms: u64,
}

/// The bound for `run`'s plateau (`None`: no Little's law in the results). A slowdown over the
/// whole plateau is already in the results' bound (the lab computes it with the slowed path); a
/// partial one is weighted here by the share of the plateau it covered:
/// `(1 − f) × threads ÷ path + f × threads ÷ slowed path`.
pub fn plateau_bound(run: &RunResults) -> Option<Bound> {
    let ll = run.littles_law.as_ref()?;
    let whole = Bound {
        rps: ll.bound_rps,
        partial: None,
    };
    let (Some(inj), Some(base), Some(p)) = (
        run.config.injection,
        run.config.mock_latency_ms,
        run.config
            .profile
            .phases
            .iter()
            .find(|p| p.name == "constant"),
    ) else {
        return Some(whole);
    };
    let (start, end) = (p.start_s, p.start_s + p.duration_s);
    let slowed_s = (end.min(inj.start_s + inj.duration_s) - start.max(inj.start_s)).max(0.0);
    let base_dep_ms = match inj.dependency {
        Dep::Seller => base.seller,
        Dep::Risk => base.risk,
        Dep::Payment => base.payment,
        // The broker is not on the mocks' critical path (the events scenario's slow broker).
        Dep::Broker => return Some(whole),
    };
    let slowed_path_s = (base.critical_path_ms() - base_dep_ms + inj.latency_ms) as f64 / 1000.0;
    let path_s = base.critical_path_ms() as f64 / 1000.0;
    if slowed_s <= 0.0 || slowed_s >= p.duration_s - 1e-6 || slowed_path_s <= 0.0 || path_s <= 0.0 {
        return Some(whole);
    }
    let threads = ll.threads as f64;
    let f = slowed_s / p.duration_s;
    let slowed_rps = threads / slowed_path_s;
    Some(Bound {
        rps: (1.0 - f) * threads / path_s + f * slowed_rps,
        partial: Some(Partial {
            slowed_s,
            plateau_s: p.duration_s,
            slowed_rps,
            dependency: inj.dependency,
            latency_ms: inj.latency_ms,
        }),
    })
}

/// The Little's-law figures of one API, as spreads over its repeats.
pub struct LittleRow<'a> {
    pub api: &'a str,
    pub threads: Spread,
    pub critical_path_ms: Spread,
    /// The configured bound, `threads ÷ critical path`.
    pub bound_rps: Spread,
    /// The bound that applied to the plateau (time-weighted under a partial slowdown).
    pub plateau_bound_rps: Spread,
    /// The first repeat's partial slowdown, if any.
    pub partial: Option<Partial>,
    pub measured_rps: Option<Spread>,
    /// The first run's note (a slowdown during the plateau), as plain text.
    pub note: Option<&'a str>,
}

pub fn rows<'a>(groups: &[ApiRuns<'a>]) -> Vec<LittleRow<'a>> {
    groups
        .iter()
        .filter_map(|g| {
            let ll = |f: fn(&lab_results::LittlesLaw) -> Option<f64>| {
                g.spread(|r| r.littles_law.as_ref().and_then(f))
            };
            Some(LittleRow {
                api: g.api,
                threads: ll(|l| Some(l.threads as f64))?,
                critical_path_ms: ll(|l| Some(l.critical_path_ms))?,
                bound_rps: ll(|l| Some(l.bound_rps))?,
                plateau_bound_rps: g.spread(|r| plateau_bound(r).map(|b| b.rps))?,
                partial: g.first().and_then(plateau_bound).and_then(|b| b.partial),
                measured_rps: ll(|l| l.measured_plateau_rps),
                note: g
                    .runs
                    .iter()
                    .find_map(|r| r.littles_law.as_ref()?.note.as_deref()),
            })
        })
        .collect()
}

fn orders(v: f64) -> String {
    fmt(v, Unit::Rate).replace("req/s", "orders/s")
}

/// The one-sentence statement used by the page, `summary.md` and the verdict's reason (without the
/// API's name, which each of them puts in its own way).
pub fn sentence(row: &LittleRow<'_>) -> Rich {
    let bound = row.plateau_bound_rps.median;
    let mut r = Rich::new().plain(format!(
        "{} threads ÷ {} critical path = at most ",
        fmt(row.threads.median, Unit::Count),
        fmt(row.critical_path_ms.median, Unit::Millis),
    ));
    r = match row.partial {
        None => r.strong(orders(bound)),
        Some(p) => r
            .plain(format!(
                "{}, {} while {} answered in {} ({:.0} s of the {:.0} s plateau): ",
                orders(row.bound_rps.median),
                orders(p.slowed_rps),
                p.dependency.name(),
                fmt(p.latency_ms as f64, Unit::Millis),
                p.slowed_s,
                p.plateau_s,
            ))
            .strong(orders(bound))
            .plain(" time-weighted over the plateau"),
    };
    r = match &row.measured_rps {
        Some(m) => r
            .plain("; measured plateau: ")
            .strong(orders(m.median))
            .plain(format!(
                " ({} of the bound)",
                fmt(100.0 * m.median / bound, Unit::Percent)
            )),
        None => r.plain("; no plateau was measured"),
    };
    r = r.plain(".");
    // The lab's note explains a slowdown; a partial one is spelled out above already.
    match row.note.filter(|_| row.partial.is_none()) {
        Some(n) => r.plain(format!(" Note: {n}.")),
        None => r,
    }
}
