//! The conditions line under the verdict: what the result holds under, in one short line —
//! profile and rate, dependency latencies, what was injected and when, shedding, durability, pool
//! sizes and limits. A verdict read without them ("reactive-api kept up") is read as universal.
//!
//! Everything comes from the first run's configuration; where the APIs' settings differ, the
//! fairness section says so (and the trust strip flags it), so the line names the common value or
//! each API's.

use lab_results::RunResults;

use super::model::{ApiRuns, cpu_and_memory, schedule_s};

/// `Under: profile fixture-120 (open, 120/s plateau, 90 s) · dependencies seller 200 ms, …`.
pub fn line(groups: &[ApiRuns<'_>]) -> Option<String> {
    let run = groups.first()?.first()?;
    let c = &run.config;
    let mut parts = vec![profile(run)];
    if let Some(l) = c.mock_latency_ms {
        parts.push(format!(
            "dependencies seller {} ms, risk {} ms, payment {} ms (critical path {} ms)",
            l.seller,
            l.risk,
            l.payment,
            l.critical_path_ms()
        ));
    }
    if let Some(i) = c.injection {
        let from = c.mock_latency_ms.map(|l| {
            let base = i.dependency.with(l, 0);
            l.critical_path_ms() - base.critical_path_ms()
        });
        let from = from
            .filter(|&f| f > 0)
            .map_or(String::new(), |f| format!("{f} → "));
        parts.push(format!(
            "{} slowed {from}{} ms at {:.0}–{:.0} s",
            i.dependency.name(),
            i.latency_ms,
            i.start_s,
            i.start_s + i.duration_s
        ));
    }
    if let Some(f) = c.faults {
        if f.has_payment_faults() {
            parts.push(f.describe_payment());
        }
        if let Some(t) = f.kill_api_at_s {
            parts.push(format!(
                "API killed at {t:.0} s ({:.0} s down)",
                f.api_down_s
            ));
        }
        if let Some(t) = f.rolling_restart_at_s {
            parts.push(format!("API restarted as a platform does at {t:.0} s"));
        }
        if let Some(t) = f.restart_db_at_s {
            parts.push(format!("PostgreSQL restarted at {t:.0} s"));
        }
    }
    if c.injection.is_none() && c.faults.is_none() {
        parts.push("nothing injected".to_owned());
    }
    if let Some(s) = c.shedding {
        parts.push(format!("shedding {}", s.as_str()));
    }
    if let Some(d) = c.settings().pg_durability {
        parts.push(format!("durability {d}"));
    }
    parts.push(pools(groups));
    parts.push(format!("{} per API", cpu_and_memory(&c.limits)));
    Some(format!("Under: {}.", parts.join(" · ")))
}

/// `profile ramp-300 (open, 300/s plateau, 90 s)`.
fn profile(run: &RunResults) -> String {
    let p = &run.config.profile;
    let plateau = p
        .phases
        .iter()
        .find(|ph| ph.name == "constant")
        .map(|ph| format!(", {}/s plateau", ph.to_rate));
    let length = schedule_s(run).map(|s| format!(", {s:.0} s"));
    format!(
        "profile {} ({}{}{})",
        p.name,
        p.model,
        plateau.unwrap_or_default(),
        length.unwrap_or_default()
    )
}

/// `DB pool 10 · blocking-api 200 threads`: the database pool (per API when they differ), the
/// blocking API's thread pool, the allocators where they differ and blocking-api's client.
fn pools(groups: &[ApiRuns<'_>]) -> String {
    let setting = |g: &ApiRuns<'_>| g.first().map(|r| r.config.settings()).unwrap_or_default();
    let db: Vec<(String, String)> = groups
        .iter()
        .filter_map(|g| Some((g.api.to_owned(), setting(g).db_pool_size?.to_string())))
        .collect();
    let mut out = match db.as_slice() {
        [] => "DB pool not recorded".to_owned(),
        [(_, first), rest @ ..] if rest.iter().all(|(_, v)| v == first) => {
            format!("DB pool {first}")
        }
        _ => {
            let each: Vec<String> = db.iter().map(|(a, v)| format!("{a} {v}")).collect();
            format!("DB pool {}", each.join(", "))
        }
    };
    for g in groups {
        let s = setting(g);
        if let Some(t) = s.blocking_threads {
            out.push_str(&format!(", {} {t} threads", g.api));
            if let Some(rule) = s.blocking_threads_rule {
                out.push_str(&format!(" ({rule})"));
            }
        }
    }
    // Each API's allocator, where the APIs differ in it: a part of the execution model.
    let allocators: Vec<(String, String)> = groups
        .iter()
        .filter_map(|g| Some((g.api.to_owned(), setting(g).allocator?)))
        .collect();
    if allocators.windows(2).any(|w| w[0].1 != w[1].1) {
        let each: Vec<String> = allocators.iter().map(|(a, v)| format!("{a} {v}")).collect();
        out.push_str(&format!(", allocator: {}", each.join(", ")));
    }
    // blocking-api's client to the dependencies, where its runs state it: whether each call's I/O
    // ran on the request's own thread (ureq) or on reqwest::blocking's one runtime thread.
    for g in groups {
        if let Some(client) = setting(g).deps_client {
            out.push_str(&format!(", {} client {client}", g.api));
        }
    }
    out
}
