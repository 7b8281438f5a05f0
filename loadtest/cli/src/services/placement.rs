//! Where the API runs: its cgroup (its pod's limits, read back from the kernel) and its CPU
//! pinned apart from the harness's, each recorded in the API's [`Limits`].

use std::sync::OnceLock;

use anyhow::{Context, Result};
use lab_results::{Limits, Pinning};
use labkit::cgroup::{LimitedGroup, ResourceLimits};

/// Where this lab put the API and the harness ([`place_harness`]): set once per process.
static PLACEMENT: OnceLock<Result<Pinning, String>> = OnceLock::new();

/// On a machine with two CPUs or more, pins this process — the generator, and every harness
/// process it starts from now on (PostgreSQL, mock-deps, NATS, the latency proxy) — to all CPUs
/// but the last, and every API started afterwards ([`super::ApiProcess::start`]) to the last
/// one: the API alone on its core, so that a harness-bound flag speaks about the harness.
/// `Ok(Err(why))` when it cannot or must not (`pin` false); the API's limits then say so.
/// Idempotent.
pub fn place_harness(pin: bool) -> Result<std::result::Result<Pinning, String>> {
    if let Some(done) = PLACEMENT.get() {
        return Ok(done.clone());
    }
    let placed = if pin {
        match labkit::affinity::reserve_last_cpu()? {
            Some(split) => Ok(Pinning {
                api_cpus: split.api,
                harness_cpus: split.harness,
            }),
            None => Err(format!(
                "not pinned: {} CPU available, the API shares it with the harness",
                labkit::affinity::allowed_cpus().map_or(0, |c| c.len())
            )),
        }
    } else {
        Err("not pinned (--no-pin): the API shares the CPUs with the harness".to_owned())
    };
    Ok(PLACEMENT.get_or_init(|| placed).clone())
}

/// Pins `pid` to the API's CPU when [`place_harness`] reserved one; notes in `limits` either way.
pub(super) fn pin_api(pid: u32, limits: &mut Limits) -> Result<()> {
    match PLACEMENT.get() {
        Some(Ok(p)) => {
            labkit::affinity::pin_process(pid, &p.api_cpus)
                .with_context(|| format!("pinning pid {pid} to CPU {:?}", p.api_cpus))?;
            limits.pinning = Some(p.clone());
        }
        Some(Err(why)) => {
            limits.note.push_str("; ");
            limits.note.push_str(why);
        }
        None => {}
    }
    Ok(())
}

/// The API's CPUs, once [`place_harness`] has reserved them.
pub fn api_cpus() -> Option<Vec<usize>> {
    match PLACEMENT.get() {
        Some(Ok(p)) => Some(p.api_cpus.clone()),
        _ => None,
    }
}

/// Limits that were not applied, with the reason.
pub fn not_enforced(why: &str) -> Limits {
    Limits {
        limits_enforced: false,
        cpu_cores: None,
        cpu_period_us: None,
        cpu_burst_us: None,
        memory_bytes: None,
        mechanism: "none".to_owned(),
        note: format!("limits NOT enforced: {why}"),
        pinning: None,
    }
}

pub(super) fn confine(name: &str, pid: u32, pod: ResourceLimits) -> (Option<LimitedGroup>, Limits) {
    let group = match LimitedGroup::create(name, pod) {
        Ok(g) => g,
        Err(e) => return (None, not_enforced(&format!("cannot create a cgroup: {e}"))),
    };
    if let Err(e) = group.add_pid(pid) {
        return (
            None,
            not_enforced(&format!("cannot move pid {pid} into {}: {e}", group.name())),
        );
    }
    let held = group.enforced();
    let enforced = held.cpu_quota.is_some() && held.memory_bytes.is_some();
    let mut note = format!("cgroup {} at {:?}", held.version, held.paths);
    if !enforced {
        note = format!("limits NOT enforced: the kernel does not hold them ({note})");
    }
    for n in &held.notes {
        note.push_str("; ");
        note.push_str(n);
    }
    let limits = Limits {
        limits_enforced: enforced,
        cpu_cores: held.cpu_quota,
        cpu_period_us: held.cpu_period_us,
        cpu_burst_us: held.cpu_burst_us,
        memory_bytes: held.memory_bytes,
        mechanism: format!("cgroup {}", held.version),
        note,
        pinning: None,
    };
    (Some(group), limits)
}
