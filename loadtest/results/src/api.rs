//! The two APIs the lab compares, as a kind: what the lab does differently for each (the thread
//! pool it sizes, the gauge of busy work it samples) is said once, here, by a match.
//!
//! A results file names an API by its binary (`"api": "blocking-api"`) and labels its runs
//! without the suffix (`results-blocking-0.json`); [`ApiKind::of`] reads either.

use std::fmt;
use std::str::FromStr;

/// [`crate::bench::MemoryFigures::busy_kind`] of blocking-api: its `blocking_pool_busy` gauge.
pub const BUSY_THREADS: &str = "busy blocking threads";
/// [`crate::bench::MemoryFigures::busy_kind`] of reactive-api: its `http_requests_in_flight`
/// gauge.
pub const IN_FLIGHT: &str = "orders in flight";

/// blocking-api (a thread per order, on a bounded pool) or reactive-api (async, no pool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ApiKind {
    Blocking,
    Reactive,
}

impl ApiKind {
    /// Both, in the order the lab runs them.
    pub const ALL: [ApiKind; 2] = [ApiKind::Blocking, ApiKind::Reactive];

    /// Its binary and package, and the `api` of its results: `blocking-api`.
    pub fn name(self) -> &'static str {
        match self {
            ApiKind::Blocking => "blocking-api",
            ApiKind::Reactive => "reactive-api",
        }
    }

    /// The label of its runs: `blocking`.
    pub fn label(self) -> &'static str {
        match self {
            ApiKind::Blocking => "blocking",
            ApiKind::Reactive => "reactive",
        }
    }

    /// The kind of the API named `name` (`blocking-api`) or labelled so (`blocking`); `None` for
    /// any other name (a `--targets` name the lab does not know).
    pub fn of(name: &str) -> Option<ApiKind> {
        ApiKind::ALL
            .into_iter()
            .find(|k| name == k.name() || name == k.label())
    }

    /// Whether it runs each order on a thread of a bounded pool (`BLOCKING_THREADS`), which then
    /// bounds the orders it serves at once.
    pub fn has_thread_pool(self) -> bool {
        self == ApiKind::Blocking
    }

    /// The gauge of its busy work on `/metrics`: busy pool threads, or orders in flight.
    pub fn busy_gauge(self) -> &'static str {
        match self {
            ApiKind::Blocking => "blocking_pool_busy",
            ApiKind::Reactive => "http_requests_in_flight",
        }
    }

    /// What [`ApiKind::busy_gauge`] counts, as a bench cell records it
    /// ([`crate::bench::MemoryFigures::busy_kind`]).
    pub fn busy_kind(self) -> &'static str {
        match self {
            ApiKind::Blocking => BUSY_THREADS,
            ApiKind::Reactive => IN_FLIGHT,
        }
    }
}

impl fmt::Display for ApiKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ApiKind {
    type Err = String;

    fn from_str(name: &str) -> Result<ApiKind, String> {
        ApiKind::of(name).ok_or_else(|| {
            format!("{name:?} is not an API of the lab (blocking-api, reactive-api)")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_reads_its_name_and_its_label_and_prints_its_name() {
        for kind in ApiKind::ALL {
            assert_eq!(kind.name().parse(), Ok(kind));
            assert_eq!(kind.label().parse(), Ok(kind));
            assert_eq!(kind.to_string(), kind.name());
            assert_eq!(format!("{}-api", kind.label()), kind.name());
        }
        assert_eq!(ApiKind::of("blocking-api"), Some(ApiKind::Blocking));
        assert_eq!(ApiKind::of("reactive"), Some(ApiKind::Reactive));
        for other in ["", "blocking-api-2", "Blocking", "mock-deps", "blockingapi"] {
            assert_eq!(ApiKind::of(other), None, "{other:?}");
        }
        let err = "mock-deps".parse::<ApiKind>().unwrap_err();
        assert!(err.contains("not an API of the lab"), "{err}");
    }

    #[test]
    fn only_blocking_api_has_a_thread_pool_and_each_kind_its_own_gauge() {
        assert!(ApiKind::Blocking.has_thread_pool());
        assert!(!ApiKind::Reactive.has_thread_pool());
        assert_eq!(ApiKind::Blocking.busy_gauge(), "blocking_pool_busy");
        assert_eq!(ApiKind::Reactive.busy_gauge(), "http_requests_in_flight");
        assert_eq!(ApiKind::Blocking.busy_kind(), BUSY_THREADS);
        assert_eq!(ApiKind::Reactive.busy_kind(), IN_FLIGHT);
    }
}
