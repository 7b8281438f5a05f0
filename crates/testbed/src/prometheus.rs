//! The one reader of the Prometheus text format, for the contract tests and for the lab (the
//! sampler, the invariants, the bench's probes): an API's `/metrics` as samples. Only what they
//! read is handled: `series value [timestamp]` lines, where the series is a name and an optional
//! `{labels}` block; comments, blank and malformed lines are skipped. (`prometheus-parse` was
//! weighed: its last release is 0.2.5 of December 2023, it brings regex and chrono's clock, and
//! it parses labels into maps and types into enums, which nothing here reads.)

use std::collections::HashMap;

/// One sample: its series as written (`name` or `name{labels}`), its name, its value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample<'t> {
    pub series: &'t str,
    pub name: &'t str,
    pub value: f64,
}

/// Every sample of a Prometheus text, in order.
pub fn samples(text: &str) -> impl Iterator<Item = Sample<'_>> {
    text.lines().map(str::trim).filter_map(|line| {
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        let i = line.find(['{', ' '])?;
        let (name, end) = if line.as_bytes()[i] == b'{' {
            (&line[..i], i + line[i..].find('}')? + 1)
        } else {
            (&line[..i], i)
        };
        // "value [timestamp]"
        let value = line[end..].split_whitespace().next()?.parse().ok()?;
        Some(Sample {
            series: &line[..end],
            name,
            value,
        })
    })
}

/// `metric name → value`, summing a metric's label sets (the gauges read this way have none; a
/// histogram's `_bucket`/`_sum`/`_count` lines keep their own names).
pub fn sums_by_name(text: &str) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for s in samples(text) {
        *out.entry(s.name.to_owned()).or_insert(0.0) += s.value;
    }
    out
}

/// The value of one series, written as the exposition writes it (`name` or `name{labels}`).
pub fn value_of(text: &str, series: &str) -> Option<f64> {
    samples(text).find(|s| s.series == series).map(|s| s.value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# HELP db_pool_waiting waiting\n# TYPE db_pool_waiting gauge\n\
                        db_pool_waiting 3\n\
                        db_pool_connections_in_use 10\n\
                        http_requests_total{route=\"/orders\",method=\"POST\",status=\"201\"} 5\n\
                        http_requests_total{route=\"/orders\",method=\"POST\",status=\"503\"} 2 1700000000\n\
                        db_pool_acquire_timeouts_total 1e3\nbroken{ 1\n";

    #[test]
    fn parses_gauges_counters_and_labels() {
        let m = sums_by_name(TEXT);
        assert_eq!(m["db_pool_waiting"], 3.0);
        assert_eq!(m["db_pool_connections_in_use"], 10.0);
        assert_eq!(m["http_requests_total"], 7.0);
        assert_eq!(m["db_pool_acquire_timeouts_total"], 1000.0);
        assert!(!m.contains_key("broken"));
    }

    #[test]
    fn one_series_is_found_by_its_labels() {
        let series = "http_requests_total{route=\"/orders\",method=\"POST\",status=\"503\"}";
        assert_eq!(value_of(TEXT, series), Some(2.0));
        assert_eq!(value_of(TEXT, "db_pool_waiting"), Some(3.0));
        assert_eq!(value_of(TEXT, "http_requests_total"), None);
        assert_eq!(value_of(TEXT, "db_pool"), None);
    }
}
