//! The `faults` scenario's plan: the rate, the length, the fault plan of the retrying clients'
//! run and the outages run one each with plain clients. The lab runs it (`super::variants`); the
//! page (`lab_report::scenario::faults`) is handed the words it states about it ([`page_plan`]).

use lab_report::scenario::faults::Plan;

/// The rate both APIs get, orders/s: a third of blocking-api's Little's-law ceiling with the seed
/// latencies (200 threads ÷ 2.2 s ≈ 91/s), so that retries after a fault find room.
pub const RATE: u32 = 30;
/// Length of the constant-rate run, seconds (before `--duration-scale`).
pub const DURATION_S: u32 = 60;
/// The fault plan: payment faults throughout (among them answers cut after the charge), the
/// API killed at 20 s, PostgreSQL at 40 s.
pub const PLAN: &str = "pay-error=0.05,pay-hang=0.01,pay-charged-error=0.02,pay-cut=0.02,\
                        hang-ms=8000,kill-api@20+2,restart-db@40";

/// The rows with one outage each (variant slug, plan, what the row's `fault` column says), run
/// at the same rate with plain clients (one request per arrival, no retry), so that each request's
/// own wait is measured. Each outage begins 20 s in and lasts the length its plan names; the
/// rolling restart lasts the API's own `SHUTDOWN_DELAY_MS`, start-up and drain.
pub const OUTAGES: [(&str, &str, &str); 5] = [
    ("db-freeze", "db-freeze@20+20", "PostgreSQL frozen 20 s"),
    (
        "slow-uploads",
        "slow-uploads=300@20+30",
        "300 slow uploads for 30 s",
    ),
    (
        "gateway-down",
        "gateway-down@20+30",
        "payment gateway unreachable 30 s",
    ),
    (
        "broker-ack",
        "broker-ack=7000@20+30",
        "broker acknowledgements 7 s for 30 s (events on, outbox)",
    ),
    (
        "rolling-restart",
        "rolling-restart@20",
        "API restarted as a platform does (SIGTERM, still sent to)",
    ),
];

/// What the page states of this plan.
pub fn page_plan() -> Plan<'static> {
    Plan {
        rate: RATE,
        duration_s: DURATION_S,
        outages: &OUTAGES,
    }
}
