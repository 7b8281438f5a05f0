//! The APIs' settings as a run recorded them (`RunConfig::api_settings`, the environment each API
//! was started with, as strings), read back typed: the one place a setting's name is spelled
//! when the lab and the report read it, so that renaming one is a compile error wherever it is
//! read. A setting a run did not record (an older file, an API without it) is `None`, and so is
//! one whose value does not parse; names this record does not know are ignored.

use std::collections::BTreeMap;

/// The settings the lab and the report read back. Free text where the value is a name the lab
/// only prints (`ALLOCATOR`, `DEPS_CLIENT` …): the record must read files written by any
/// version, whose names may not parse into today's types.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordedSettings {
    /// `BLOCKING_THREADS` (blocking-api).
    pub blocking_threads: Option<u64>,
    /// `BLOCKING_THREADS_RULE`: how the lab sized them (`auto: Little's law, …`).
    pub blocking_threads_rule: Option<String>,
    /// `ALLOCATOR`: the global allocator of the build.
    pub allocator: Option<String>,
    pub db_pool_size: Option<u64>,
    /// `DB_TX_SCOPE`: `short` or `request`.
    pub db_tx_scope: Option<String>,
    /// `DEPS_CLIENT` (blocking-api): `ureq` or `reqwest-blocking`.
    pub deps_client: Option<String>,
    /// `DEPS_HTTP`: `http1` or `h2c`.
    pub deps_http: Option<String>,
    /// `PG_VIA`: how the APIs reached the lab's PostgreSQL (`socket`, `tcp`).
    pub pg_via: Option<String>,
    /// `PG_DURABILITY`: `on` or `off`.
    pub pg_durability: Option<String>,
    /// `DB_RTT_MS`: the latency proxy's round trip to PostgreSQL.
    pub db_rtt_ms: Option<f64>,
    /// `MAX_IN_FLIGHT` (0: unlimited).
    pub max_in_flight: Option<u64>,
    pub queue_timeout_ms: Option<f64>,
    /// `EVENTS_MODE`: `off`, `two-phase`, `after-commit`, `outbox`.
    pub events_mode: Option<String>,
}

impl RecordedSettings {
    pub fn of(recorded: &BTreeMap<String, String>) -> RecordedSettings {
        let text = |name: &str| recorded.get(name).cloned();
        let int = |name: &str| recorded.get(name).and_then(|v| v.parse().ok());
        let real = |name: &str| recorded.get(name).and_then(|v| v.parse().ok());
        RecordedSettings {
            blocking_threads: int("BLOCKING_THREADS"),
            blocking_threads_rule: text("BLOCKING_THREADS_RULE"),
            allocator: text("ALLOCATOR"),
            db_pool_size: int("DB_POOL_SIZE"),
            db_tx_scope: text("DB_TX_SCOPE"),
            deps_client: text("DEPS_CLIENT"),
            deps_http: text("DEPS_HTTP"),
            pg_via: text("PG_VIA"),
            pg_durability: text("PG_DURABILITY"),
            db_rtt_ms: real("DB_RTT_MS"),
            max_in_flight: int("MAX_IN_FLIGHT"),
            queue_timeout_ms: real("QUEUE_TIMEOUT_MS"),
            events_mode: text("EVENTS_MODE"),
        }
    }
}

impl crate::RunConfig {
    /// The recorded settings, typed ([`RecordedSettings`]).
    pub fn settings(&self) -> RecordedSettings {
        RecordedSettings::of(&self.api_settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_known_setting_is_read_typed_and_unknown_ones_are_ignored() {
        let s = RecordedSettings::of(&map(&[
            ("BLOCKING_THREADS", "222"),
            ("BLOCKING_THREADS_RULE", "auto"),
            ("ALLOCATOR", "system"),
            ("DB_POOL_SIZE", "100"),
            ("DB_TX_SCOPE", "short"),
            ("DEPS_CLIENT", "ureq"),
            ("DEPS_HTTP", "h2c"),
            ("PG_VIA", "socket"),
            ("PG_DURABILITY", "off"),
            ("DB_RTT_MS", "6.5"),
            ("MAX_IN_FLIGHT", "0"),
            ("QUEUE_TIMEOUT_MS", "100"),
            ("EVENTS_MODE", "outbox"),
            ("A_SETTING_FROM_A_LATER_VERSION", "x"),
        ]));
        assert_eq!(
            s,
            RecordedSettings {
                blocking_threads: Some(222),
                blocking_threads_rule: Some("auto".into()),
                allocator: Some("system".into()),
                db_pool_size: Some(100),
                db_tx_scope: Some("short".into()),
                deps_client: Some("ureq".into()),
                deps_http: Some("h2c".into()),
                pg_via: Some("socket".into()),
                pg_durability: Some("off".into()),
                db_rtt_ms: Some(6.5),
                max_in_flight: Some(0),
                queue_timeout_ms: Some(100.0),
                events_mode: Some("outbox".into()),
            }
        );
    }

    #[test]
    fn a_missing_or_unparsable_number_is_absent() {
        let s = RecordedSettings::of(&map(&[("BLOCKING_THREADS", "many"), ("DB_RTT_MS", "")]));
        assert_eq!(s, RecordedSettings::default());
        assert_eq!(
            RecordedSettings::of(&BTreeMap::new()),
            RecordedSettings::default()
        );
    }

    #[test]
    fn an_older_results_file_reads_with_what_it_recorded() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../report/tests/fixtures/blocking-api-0.json");
        let r = crate::RunResults::load(&path).expect("fixture loads");
        let s = r.config.settings();
        let recorded = |name: &str| r.config.api_settings.get(name).and_then(|v| v.parse().ok());
        assert_eq!(s.blocking_threads, recorded("BLOCKING_THREADS"));
        assert!(
            s.blocking_threads.is_some() && s.db_pool_size.is_some(),
            "{s:?}"
        );
        // Written before blocking-api's client was recorded.
        assert_eq!(
            s.deps_client,
            r.config.api_settings.get("DEPS_CLIENT").cloned()
        );
    }
}
