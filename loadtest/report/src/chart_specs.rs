//! The charts over time, described as data: which per-second values each one draws and how.

use lab_results::numbers::MIB;
use lab_results::{OUTCOME_CREATED, OUTCOME_REPLAYED, SecondSample};

use super::svg::{Dash, Figure, LineChart, Marker, Scale, Series, TickFormat};

/// A per-second figure: `None` = not measured that second (leaves a gap).
pub type PerSecond = fn(&SecondSample) -> Option<f64>;

/// A chart over time, described as data: which per-second values to draw and how.
pub struct Spec {
    pub id: &'static str,
    pub title: &'static str,
    pub caption: &'static str,
    pub y_label: &'static str,
    pub y_format: TickFormat,
    pub y_scale: Scale,
    /// One line per run of every API for each entry (one line in all for a [`Line::once`]).
    pub lines: &'static [Line],
    /// One chart per API (small multiples) instead of every API overlaid: for figures whose lines
    /// coincide across APIs (pool gauges at the same value, the harness running the same schedule)
    /// and would hide one another.
    pub per_api: bool,
}

/// One figure drawn on a chart.
pub struct Line {
    pub what: &'static str,
    pub dash: Dash,
    pub value: PerSecond,
    /// The same for every run (the schedule): drawn once, in neutral grey, when the runs agree.
    pub once: bool,
}

const fn line(what: &'static str, dash: Dash, value: PerSecond) -> Line {
    Line {
        what,
        dash,
        value,
        once: false,
    }
}

/// Fresh orders and replays per second.
fn two_xx(s: &SecondSample) -> Option<f64> {
    let get = |k| s.outcomes.get(k).copied().unwrap_or(0);
    Some((get(OUTCOME_CREATED) + get(OUTCOME_REPLAYED)) as f64)
}

const NUM: TickFormat = TickFormat::Number;
const LIN: Scale = Scale::Linear;

/// The charts in reading order; the per-API error charts go after the first two.
pub const SPECS: &[Spec] = &[
    Spec {
        id: "rate",
        title: "Offered vs achieved rate",
        y_label: "requests per second",
        y_format: TickFormat::PerSecond,
        y_scale: LIN,
        caption: "Dotted grey: arrivals the profile scheduled each second (the same schedule for every API, so drawn once). Solid: 2xx responses each second. Where solid falls below dotted, the API is not keeping up: a queue is growing, or requests are refused.",
        lines: &[
            Line {
                what: "offered",
                dash: Dash::Dotted,
                value: |s| Some(s.offered as f64),
                once: true,
            },
            line("2xx", Dash::Solid, two_xx),
        ],
        per_api: false,
    },
    Spec {
        id: "latency",
        title: "Latency over time (p50, p90, p99, max)",
        y_label: "latency (log scale)",
        y_format: TickFormat::Millis,
        y_scale: Scale::Log,
        caption: "Latency of the requests that finished in each second, every outcome, measured from their intended send time, on a log scale. Dotted: median; dash-dot: 90th percentile; solid: 99th; dashed: the slowest.",
        lines: &[
            line("p50", Dash::Dotted, |s| s.latency_ms.map(|l| l.p50)),
            line("p90", Dash::DashDot, |s| s.latency_ms.map(|l| l.p90)),
            line("p99", Dash::Solid, |s| s.latency_ms.map(|l| l.p99)),
            line("max", Dash::Dashed, |s| s.latency_ms.map(|l| l.max)),
        ],
        per_api: false,
    },
    Spec {
        id: "cpu",
        title: "API CPU",
        y_label: "CPU (% of one core)",
        y_format: TickFormat::Percent,
        y_scale: LIN,
        caption: "CPU time the API process used in each second, as % of one core (100 % = one core fully busy).",
        lines: &[line("", Dash::Solid, |s| {
            s.api_process.map(|p| p.cpu_percent)
        })],
        per_api: false,
    },
    Spec {
        id: "rss",
        title: "API memory (RSS)",
        y_label: "RSS (MiB)",
        y_format: NUM,
        y_scale: LIN,
        caption: "Resident memory of the API process at the end of each second.",
        lines: &[line("", Dash::Solid, |s| {
            s.api_process.map(|p| p.rss_bytes as f64 / MIB)
        })],
        per_api: false,
    },
    Spec {
        id: "threads",
        title: "API threads",
        y_label: "OS threads",
        y_format: NUM,
        y_scale: LIN,
        caption: "OS threads of the API process: a thread-per-request server grows towards its pool size under load; an event loop stays flat.",
        lines: &[line("", Dash::Solid, |s| {
            s.api_process.map(|p| p.threads as f64)
        })],
        per_api: false,
    },
    Spec {
        id: "db-pool",
        title: "Database pool",
        y_label: "connections / waiters",
        y_format: NUM,
        y_scale: LIN,
        caption: "Solid: connections in use; dashed: requests waiting for a connection (from the API's /metrics).",
        lines: &[
            line("in use", Dash::Solid, |s| {
                s.api_metrics.and_then(|m| m.db_pool_in_use)
            }),
            line("waiting", Dash::Dashed, |s| {
                s.api_metrics.and_then(|m| m.db_pool_waiting)
            }),
        ],
        per_api: true,
    },
    Spec {
        id: "blocking-pool",
        title: "Blocking pool (blocking-api only)",
        y_label: "threads / queued requests",
        y_format: NUM,
        y_scale: LIN,
        caption: "Solid: blocking threads busy with a request; dashed: requests queued for a free thread. Once busy reaches the pool size, every new request queues.",
        lines: &[
            line("busy", Dash::Solid, |s| {
                s.api_metrics.and_then(|m| m.blocking_pool_busy)
            }),
            line("queued", Dash::Dashed, |s| {
                s.api_metrics.and_then(|m| m.blocking_pool_queued)
            }),
        ],
        per_api: false,
    },
    Spec {
        id: "in-flight",
        title: "Requests in flight",
        y_label: "open requests",
        y_format: NUM,
        y_scale: LIN,
        caption: "Solid: requests sent and not yet answered, as the generator counts them; dashed: the API's own http_requests_in_flight gauge.",
        lines: &[
            line("generator", Dash::Solid, |s| Some(s.in_flight as f64)),
            line("API gauge", Dash::Dashed, |s| {
                s.api_metrics.and_then(|m| m.in_flight)
            }),
        ],
        per_api: false,
    },
    Spec {
        id: "lateness",
        title: "Generator lateness",
        y_label: "lateness",
        y_format: TickFormat::Millis,
        y_scale: LIN,
        caption: "How late the generator sent requests compared with their schedule (p99 solid, max dotted). Latency is measured from the schedule, so lateness never hides queueing, but large values mean the generator itself was struggling.",
        lines: &[
            line("p99", Dash::Solid, |s| s.lateness_ms.map(|l| l.p99)),
            line("max", Dash::Dotted, |s| s.lateness_ms.map(|l| l.max)),
        ],
        per_api: false,
    },
    Spec {
        id: "harness-cpu",
        title: "Harness and machine CPU",
        y_label: "CPU (% of one core)",
        y_format: TickFormat::Percent,
        y_scale: LIN,
        caption: "CPU of the harness while each API was under test: generator (solid), mock-deps (dashed), PostgreSQL (dotted), and the whole machine, every process included (dash-dot). A harness component near a full core, or a machine near all its cores, means the API may not have been the limit.",
        lines: &[
            line("generator", Dash::Solid, |s| {
                s.harness.generator_cpu_percent
            }),
            line("mock-deps", Dash::Dashed, |s| {
                s.harness.mock_deps_cpu_percent
            }),
            line("PostgreSQL", Dash::Dotted, |s| {
                s.harness.postgres_cpu_percent
            }),
            line("machine", Dash::DashDot, |s| s.harness.machine_cpu_percent),
        ],
        per_api: true,
    },
];

/// The colour of a line that belongs to no API (the schedule).
pub(crate) const NEUTRAL: &str = "#5b6470";

/// A chart over time as a [`Figure`]: its series against the seconds since the measured part
/// began, with the phase and event markers. Every chart over time is drawn through it (`charts.rs`
/// from the specs above, `chart_errors.rs` for the errors).
pub(crate) fn figure(
    id: &str,
    title: &str,
    caption: &str,
    y_label: &str,
    y_format: TickFormat,
    series: Vec<Series>,
    markers: &[Marker],
) -> Figure {
    let chart = LineChart {
        title: title.to_owned(),
        x_label: "time since the start of the measured part".to_owned(),
        y_label: y_label.to_owned(),
        x_format: TickFormat::Seconds,
        y_format,
        series,
        markers: markers.to_vec(),
        ..LineChart::default()
    };
    Figure {
        id: id.to_owned(),
        title: title.to_owned(),
        caption: caption.to_owned(),
        chart,
    }
}
