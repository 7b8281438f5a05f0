//! The fairness check: every setting that differs between the runs other than the execution model
//! itself. A comparison is only fair if pool sizes, timeouts, limits, mock latencies, load profile
//! and build are the same for both APIs; this module finds the ones that are not.

use std::collections::BTreeMap;

use lab_results::RunResults;

use super::model::ApiRuns;

/// Settings that must differ between two processes on one machine and say nothing about fairness,
/// or whose value belongs to the execution model: `MAX_IN_FLIGHT`, with shedding on, is each API's
/// own admission limit (blocking-api: its thread count; reactive-api: 4096); `ALLOCATOR`, the
/// global allocator each binary links (a thread-per-request service pays an allocator's
/// per-thread caches once per thread, so each API links the one that fits its model).
const EXPECTED_TO_DIFFER: &[&str] = &["ALLOCATOR", "BIND_ADDR", "MAX_IN_FLIGHT"];

/// How a setting compares across the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The same value in every run.
    Same,
    /// Set for some APIs only (e.g. `BLOCKING_THREADS`), or bound to differ (`BIND_ADDR`): part of
    /// the execution model, listed for completeness.
    Expected,
    /// Differs although it should not: a caveat on the comparison.
    Differs,
}

/// One setting across all runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    pub name: String,
    /// Per API: the distinct values its runs had (`not set` when a run lacks the setting).
    pub values: Vec<(String, Vec<String>)>,
    pub status: Status,
}

/// Every setting of every run, sorted by name, each with its [`Status`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fairness {
    pub settings: Vec<Setting>,
}

impl Fairness {
    pub fn with(&self, status: Status) -> Vec<&Setting> {
        self.settings
            .iter()
            .filter(|s| s.status == status)
            .collect()
    }
}

/// Compares the settings of all runs (all APIs, all repeats).
pub fn compare(groups: &[ApiRuns<'_>]) -> Fairness {
    let per_run: Vec<(&str, BTreeMap<String, String>)> = groups
        .iter()
        .flat_map(|g| g.runs.iter().map(move |r| (g.api, settings(r))))
        .collect();
    let mut keys: Vec<&String> = per_run.iter().flat_map(|(_, m)| m.keys()).collect();
    keys.sort();
    keys.dedup();
    let settings = keys
        .into_iter()
        .map(|key| {
            let values: Vec<(String, Vec<String>)> = groups
                .iter()
                .map(|g| {
                    let mut v: Vec<String> = per_run
                        .iter()
                        .filter(|(api, _)| *api == g.api)
                        .map(|(_, m)| m.get(key).cloned().unwrap_or_else(|| "not set".to_owned()))
                        .collect();
                    v.sort();
                    v.dedup();
                    (g.api.to_owned(), v)
                })
                .collect();
            let mut distinct: Vec<&String> = values.iter().flat_map(|(_, v)| v).collect();
            distinct.sort();
            distinct.dedup();
            // Set for one API only, consistently across its repeats: a knob of that execution model.
            let model_specific = values.iter().all(|(_, v)| v.len() == 1)
                && values.iter().any(|(_, v)| v[0] == "not set");
            let status = if distinct.len() <= 1 {
                Status::Same
            } else if model_specific || EXPECTED_TO_DIFFER.contains(&key.as_str()) {
                Status::Expected
            } else {
                Status::Differs
            };
            Setting {
                name: key.clone(),
                values,
                status,
            }
        })
        .collect();
    Fairness { settings }
}

/// One run's settings as a flat, comparable map: the API's env settings plus the lab's own knobs,
/// the limits and the build. Names of lab settings are lower case so they sort after env vars.
pub fn settings(run: &RunResults) -> BTreeMap<String, String> {
    let c = &run.config;
    let mut m: BTreeMap<String, String> = c
        .api_settings
        .iter()
        .map(|(k, v)| (k.clone(), redact(k, v)))
        .collect();
    let mut put = |k: &str, v: String| {
        m.insert(k.to_owned(), v);
    };
    let p = &c.profile;
    put(
        "load profile",
        format!("{} ({}, duration × {})", p.name, p.model, p.duration_scale),
    );
    put("planned requests", p.planned_requests.to_string());
    if let Some(l) = c.mock_latency_ms {
        put(
            "mock latencies",
            format!(
                "seller {} ms, risk {} ms, payment {} ms",
                l.seller, l.risk, l.payment
            ),
        );
    }
    if let Some(i) = c.injection {
        put(
            "injected slowdown",
            format!(
                "{} at {} ms from t={} s for {} s",
                i.dependency.name(),
                i.latency_ms,
                i.start_s,
                i.duration_s
            ),
        );
    }
    put("limits enforced", c.limits.limits_enforced.to_string());
    put("limits mechanism", c.limits.mechanism.clone());
    if let Some(cpu) = c.limits.cpu_cores {
        put("CPU limit", super::model::cores(cpu));
    }
    if let Some(period) = c.limits.cpu_period_us {
        put("CPU period", format!("{} ms", period as f64 / 1e3));
    }
    if let Some(mem) = c.limits.memory_bytes {
        put("memory limit", super::model::memory(mem));
    }
    if c.settings().db_tx_scope.is_none() {
        put("DB_TX_SCOPE", c.tx_scope.clone());
    }
    if let Some(shedding) = c.shedding {
        put("shedding", shedding.as_str().to_owned());
    }
    put("request timeout", format!("{} ms", c.request_timeout_ms));
    put("in-flight cap", c.max_in_flight.to_string());
    put("duplicate ratio", c.duplicate_ratio.to_string());
    put("sellers", c.sellers.to_string());
    put("warm-up", format!("{} s", c.warmup_s));
    let e = &run.environment;
    put("build profile", e.build_profile.clone());
    put("git SHA", e.git_sha.clone());
    put("rustc", e.rustc.clone());
    put("cores", e.cores.to_string());
    put("CPU model", e.cpu_model.clone());
    put("kernel", e.kernel.clone());
    m
}

/// Hides a password in a connection URL (`postgres://user:secret@host` → `postgres://user:***@host`).
pub fn redact(key: &str, value: &str) -> String {
    if !key.ends_with("_URL") {
        return value.to_owned();
    }
    match (value.find("://"), value.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &value[scheme + 3..at];
            match creds.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &value[..scheme + 3],
                    &creds[..colon],
                    &value[at..]
                ),
                None => value.to_owned(),
            }
        }
        _ => value.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn redacts_url_passwords_only() {
        assert_eq!(
            redact("DATABASE_URL", "postgres://lab:s3cret@127.0.0.1/db"),
            "postgres://lab:***@127.0.0.1/db"
        );
        assert_eq!(
            redact("DATABASE_URL", "postgres://127.0.0.1/db"),
            "postgres://127.0.0.1/db"
        );
        assert_eq!(redact("DB_POOL_SIZE", "a:b@c"), "a:b@c");
    }
}
