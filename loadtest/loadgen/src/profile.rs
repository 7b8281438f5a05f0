//! Load profiles and their arrival schedules.
//!
//! An open-model profile is a list of phases, each with an arrival rate that changes linearly from
//! `from_rate` to `to_rate`. The schedule is computed in advance, in closed form, so it cannot drift
//! with the target's behaviour: the cumulative arrivals of a phase are
//! `N(t) = r0·t + (r1 − r0)·t²/(2D)`, the phase gets `n = round(N(D))` arrivals, and arrival `k`
//! is placed where `N(t) = (k + ½)·N(D)/n` (mid-slot, so a constant 300/s puts exactly 300 in each
//! second). `--duration-scale` multiplies every phase's length and keeps the rates.
//!
//! The closed model (`closed-C-N`, what `ab -c C -n N` does) has no schedule: C clients each send
//! their next request when the previous one returns. `closed-C-for-S` is the same for S seconds
//! (scaled by `--duration-scale`) instead of N requests: a measurement of fixed length whatever
//! the target's throughput.

use anyhow::{Context, Result, bail};

use lab_results::{PhaseInfo, ProfileInfo};

/// Stress: first step rate, increment, step length (s) and the most steps tried.
pub const STRESS_START: f64 = 50.0;
pub const STRESS_STEP: f64 = 50.0;
pub const STRESS_STEP_S: f64 = 20.0;
pub const STRESS_MAX_STEPS: usize = 40;
/// Stress: a step fails with more than this share of errors (not-sent included)…
pub const STRESS_MAX_ERROR_RATIO: f64 = 0.01;
/// …or a p99 above this, ms.
pub const STRESS_MAX_P99_MS: f64 = 10_000.0;

/// `hold-N`: the ramp's and the plateau's length, s (a capacity search's step).
pub use lab_results::scenario::{HOLD_RAMP_S, HOLD_S};
/// `hold-N-S`: the phase at the plateau's rate before it, not judged.
pub const SETTLE: &str = "settle";

/// Built-in profiles listed by `loadtest profiles` (`ramp-N` and `closed-C-N` take any numbers).
pub const BUILTIN: &[&str] = &[
    "ramp-150",
    "ramp-200",
    "ramp-300",
    "ramp-600",
    "ramp-750",
    "constant-30-60",
    "hold-300",
    "seed-gatling",
    "stress",
    "closed-30-300",
    "closed-64-for-15",
];

/// Open (fixed arrival schedule) or closed (C clients, N requests or S seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Model {
    Open,
    Closed {
        clients: u64,
        requests: u64,
    },
    /// C clients sending requests back to back until `seconds` after the first one started.
    ClosedFor {
        clients: u64,
        seconds: f64,
    },
}

/// One phase of an open profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub name: String,
    pub start_s: f64,
    pub duration_s: f64,
    pub from_rate: f64,
    pub to_rate: f64,
}

impl Phase {
    /// Arrivals in this phase: the area under the rate, rounded.
    pub fn arrivals(&self) -> u64 {
        self.area().round().max(0.0) as u64
    }

    fn area(&self) -> f64 {
        (self.from_rate + self.to_rate) / 2.0 * self.duration_s
    }

    /// Offset (seconds from the start of the run) of arrival `k` of this phase, `k < arrivals()`.
    pub fn arrival_at(&self, k: u64) -> f64 {
        let n = self.arrivals() as f64;
        let m = (k as f64 + 0.5) * self.area() / n;
        let r0 = self.from_rate;
        let a = (self.to_rate - self.from_rate) / self.duration_s;
        // Root of a/2·t² + r0·t − m = 0 in the form that is stable for a = 0 and r0 = 0.
        let disc = (r0 * r0 + 2.0 * a * m).max(0.0);
        let t = 2.0 * m / (r0 + disc.sqrt());
        self.start_s + t.clamp(0.0, self.duration_s)
    }

    /// Rate at an offset inside the phase (for the progress bar and tests).
    pub fn rate_at(&self, t: f64) -> f64 {
        let x = ((t - self.start_s) / self.duration_s).clamp(0.0, 1.0);
        self.from_rate + (self.to_rate - self.from_rate) * x
    }

    fn end_s(&self) -> f64 {
        self.start_s + self.duration_s
    }
}

/// One scheduled arrival.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    /// Its place in the whole schedule (0, 1, 2, …): what `--shard` splits on and what seeds its
    /// body.
    pub index: u64,
    /// Intended send time, seconds from the start of the run.
    pub at_s: f64,
    /// Index of its phase.
    pub phase: usize,
}

/// A parsed profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: String,
    pub model: Model,
    pub phases: Vec<Phase>,
    pub duration_scale: f64,
}

impl Profile {
    /// Parses `ramp-N`, `constant-N-S` (N/s for S seconds), `seed-gatling`, `stress` or
    /// `closed-C-N`.
    pub fn parse(name: &str, duration_scale: f64) -> Result<Profile> {
        if !(duration_scale.is_finite() && duration_scale > 0.0) {
            bail!("--duration-scale must be a positive number, got {duration_scale}");
        }
        let f = duration_scale;
        let (model, phases) = if let Some(n) = name.strip_prefix("ramp-") {
            let n: f64 = number(n, name)? as f64;
            let phases = chain(&[
                ("ramp-up", 30.0 * f, 0.0, n),
                ("constant", 30.0 * f, n, n),
                ("ramp-down", 30.0 * f, n, 0.0),
            ]);
            (Model::Open, phases)
        } else if let Some(rest) = name.strip_prefix("hold-") {
            // One step of a capacity search: a short ramp, so that connections open gradually,
            // then (`hold-N-S`) S seconds at the rate for the orders in flight to stop rising,
            // then a plateau at the rate the objective is judged at. S is not scaled by
            // --duration-scale: the orders in flight settle after the critical path, whatever
            // the run's length.
            let (n, settle) = match rest.split_once('-') {
                Some((n, settle)) => (number(n, name)?, number(settle, name)?),
                None => (number(rest, name)?, 0),
            };
            let (n, settle) = (n as f64, settle as f64);
            let mut specs = vec![("ramp-up", HOLD_RAMP_S * f, 0.0, n)];
            if settle > 0.0 {
                specs.push((SETTLE, settle, n, n));
            }
            specs.push(("constant", HOLD_S * f, n, n));
            (Model::Open, chain(&specs))
        } else if let Some(rest) = name.strip_prefix("constant-") {
            let (n, secs) = rest
                .split_once('-')
                .with_context(|| format!("profile {name}: expected constant-N-S"))?;
            let (n, secs) = (number(n, name)? as f64, number(secs, name)? as f64);
            (Model::Open, chain(&[("constant", secs * f, n, n)]))
        } else if name == "seed-gatling" {
            // rampUsers(750) during 30 s = 750 arrivals spread evenly = 25/s; then
            // constantUsersPerSec(750) during 30 s; then 30 s with no arrivals.
            let phases = chain(&[
                ("ramp-users", 30.0 * f, 25.0, 25.0),
                ("constant", 30.0 * f, 750.0, 750.0),
                ("idle", 30.0 * f, 0.0, 0.0),
            ]);
            (Model::Open, phases)
        } else if name == "stress" {
            let steps: Vec<(String, f64, f64, f64)> = (0..STRESS_MAX_STEPS)
                .map(|i| {
                    let rate = STRESS_START + STRESS_STEP * i as f64;
                    (format!("step-{rate}"), STRESS_STEP_S * f, rate, rate)
                })
                .collect();
            let refs: Vec<(&str, f64, f64, f64)> = steps
                .iter()
                .map(|(n, d, a, b)| (n.as_str(), *d, *a, *b))
                .collect();
            (Model::Open, chain(&refs))
        } else if let Some(rest) = name.strip_prefix("closed-") {
            let (c, n) = rest.split_once('-').with_context(|| {
                format!("profile {name}: expected closed-C-N or closed-C-for-S")
            })?;
            let clients = number(c, name)?;
            match n.strip_prefix("for-") {
                Some(secs) => {
                    let seconds = number(secs, name)? as f64 * f;
                    (Model::ClosedFor { clients, seconds }, Vec::new())
                }
                None => {
                    let requests = number(n, name)?;
                    (Model::Closed { clients, requests }, Vec::new())
                }
            }
        } else {
            bail!(
                "unknown profile {name:?}; try one of {} (`loadtest profiles` describes them)",
                BUILTIN.join(", ")
            );
        };
        Ok(Profile {
            name: name.to_owned(),
            model,
            phases,
            duration_scale,
        })
    }

    /// `true` for `stress` (stops at the first failing step).
    pub fn is_stress(&self) -> bool {
        self.name == "stress"
    }

    /// Arrivals (open) or requests (closed) the profile plans; 0 for `closed-C-for-S`, which plans
    /// a length of time.
    pub fn planned_requests(&self) -> u64 {
        match self.model {
            Model::Open => self.phases.iter().map(Phase::arrivals).sum(),
            Model::Closed { requests, .. } => requests,
            Model::ClosedFor { .. } => 0,
        }
    }

    /// End of the last phase, seconds (0 for closed profiles).
    pub fn duration_s(&self) -> f64 {
        self.phases.last().map_or(0.0, Phase::end_s)
    }

    /// The arrival schedule in time order.
    pub fn arrivals(&self) -> impl Iterator<Item = Arrival> + '_ {
        self.phases
            .iter()
            .enumerate()
            .flat_map(|(i, p)| (0..p.arrivals()).map(move |k| (i, p.arrival_at(k))))
            .zip(0u64..)
            .map(|((phase, at_s), index)| Arrival { index, at_s, phase })
    }

    /// Index of the phase containing `t` seconds, `None` after the last one.
    pub fn phase_at(&self, t: f64) -> Option<usize> {
        self.phases
            .iter()
            .position(|p| t >= p.start_s && t < p.end_s())
    }

    /// Index of the plateau (the phase named `constant`), if any.
    pub fn plateau(&self) -> Option<usize> {
        self.phases.iter().position(|p| p.name == "constant")
    }

    /// The plateau's whole seconds `[from, to)` on the run's clock: the seconds, and the
    /// sampler's rows, its figures are taken over.
    pub fn plateau_seconds(&self) -> Option<(usize, usize)> {
        let p = &self.phases[self.plateau()?];
        let from = p.start_s.ceil() as usize;
        Some((
            from,
            ((p.start_s + p.duration_s).floor() as usize).max(from),
        ))
    }

    /// One line per phase, for `loadtest profiles` and the progress bar.
    pub fn describe(&self) -> String {
        match self.model {
            Model::Closed { clients, requests } => format!(
                "{}: closed model, {clients} clients, {requests} requests in total",
                self.name
            ),
            Model::ClosedFor { clients, seconds } => format!(
                "{}: closed model, {clients} clients for {seconds} s",
                self.name
            ),
            Model::Open if self.is_stress() => format!(
                "stress: open steps of {STRESS_STEP_S} s from {STRESS_START}/s, +{STRESS_STEP}/s \
                 each, until a step has > {}% errors or p99 > {} s (at most {STRESS_MAX_STEPS} steps)",
                STRESS_MAX_ERROR_RATIO * 100.0,
                STRESS_MAX_P99_MS / 1000.0
            ),
            Model::Open => {
                let parts: Vec<String> = self
                    .phases
                    .iter()
                    .map(|p| {
                        format!(
                            "{} {}s {}→{}/s ({} arrivals)",
                            p.name,
                            p.duration_s,
                            p.from_rate,
                            p.to_rate,
                            p.arrivals()
                        )
                    })
                    .collect();
                format!("{}: open model, {}", self.name, parts.join(", "))
            }
        }
    }

    /// The profile as recorded in the results.
    pub fn info(&self) -> ProfileInfo {
        ProfileInfo {
            name: self.name.clone(),
            model: match self.model {
                Model::Open => "open",
                Model::Closed { .. } | Model::ClosedFor { .. } => "closed",
            }
            .to_owned(),
            duration_scale: self.duration_scale,
            phases: self
                .phases
                .iter()
                .map(|p| PhaseInfo {
                    name: p.name.clone(),
                    start_s: p.start_s,
                    duration_s: p.duration_s,
                    from_rate: p.from_rate,
                    to_rate: p.to_rate,
                    arrivals: p.arrivals(),
                })
                .collect(),
            planned_requests: self.planned_requests(),
        }
    }
}

fn number(text: &str, profile: &str) -> Result<u64> {
    match text.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => bail!("profile {profile}: {text:?} is not a positive integer"),
    }
}

fn chain(specs: &[(&str, f64, f64, f64)]) -> Vec<Phase> {
    let mut start = 0.0;
    specs
        .iter()
        .map(|&(name, duration_s, from_rate, to_rate)| {
            let phase = Phase {
                name: name.to_owned(),
                start_s: start,
                duration_s,
                from_rate,
                to_rate,
            };
            start += duration_s;
            phase
        })
        .collect()
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;
