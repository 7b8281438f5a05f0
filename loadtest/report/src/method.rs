//! "How every number was measured": the section that lets a reader trace each figure in the report
//! back to the measurement behind it. Filled in with the run's own settings where they matter.

use lab_results::RunConfig;
use maud::{Markup, html};

use super::model::ApiRuns;

/// The method section.
pub fn method(groups: &[ApiRuns<'_>]) -> Markup {
    let Some(run) = groups.first().and_then(|g| g.runs.first()) else {
        return html! {};
    };
    let c = &run.config;
    html! { section id="method" {
        h2 { "How every number was measured" }
        dl class="method" {
            (what_is_counted(c))
            (how_it_was_sampled(c))
            (how_it_was_judged())
        }
    } }
}

/// Latency, the open model, the outcomes and the spans.
fn what_is_counted(c: &RunConfig) -> Markup {
    html! {
        dt { "Latency" }
        dd {
            "Measured by the load generator for every request, from the request's " em { "intended" }
            " send time (its slot in the arrival schedule) to the end of its response. A generator \
             that falls behind therefore cannot hide the queueing it causes (no "
            em { "coordinated omission" }
            "). Values are recorded in HdrHistogram (3 significant digits). Whole-span percentiles \
             come from one histogram over the whole span, never from averaging per-second \
             percentiles. A request still unanswered after " (c.request_timeout_ms) " ms counts as a "
            code { "timeout" } " error."
        }
        dt { "Open model" }
        dd {
            "Arrivals follow the profile's schedule whatever the API does (as in the original \
             Gatling injection): a slow API does not slow the arrivals down. An arrival that finds "
            (c.max_in_flight) " requests already open is counted as " em { "not sent" } "; "
            code { "offered = sent + not sent" } "."
        }
        dt { "Outcomes" }
        dd {
            code { "201" } " = a fresh order; an idempotent replay (" code { "Idempotent-Replayed: true" }
            ") counts as 2xx but not as a new order. Every other outcome is an error, named by the \
             API's error code (" code { "database_unavailable" } ", …), " code { "http_<status>" }
            " when the body had none, or by the transport failure (" code { "timeout" } ", "
            code { "connect_error" } ", " code { "io_error" } ")."
        }
        dt { "Spans" }
        dd {
            em { "Plateau" } " is the requests that arrived in the constant-rate phase, each \
             followed to its answer however late it came; " em { "whole run" }
            " is everything after the " (c.warmup_s) " s warm-up (which is excluded from every \
             figure), including the ramps and the drain after the last arrival. Every share is \
             of the arrivals. The offered rate is per second of the " em { "schedule" } ", the \
             same for every API. Answer rates (throughput = completed, orders per second = \
             fresh 201s) are the plateau's answers within its own seconds, and for the whole \
             run every answer per second from the first arrival to the API's last answer, so a \
             long drain lowers them. The drain is the time from the last arrival to the last \
             answer, to the second."
        }
    }
}

/// The per-second samples and the CPU figures.
fn how_it_was_sampled(c: &RunConfig) -> Markup {
    html! {
        dt { "Sampling" }
        dd {
            "Every chart has one point per second. Counts (offered, sent, completed, errors) are \
             events within that second; latency percentiles cover the requests that "
            em { "finished" } " in it. Gauges are read once at the end of each second: CPU, RSS, \
             threads and open files of the API process from " code { "/proc/<pid>" }
            "; database pool, blocking pool and in-flight requests from the API's "
            code { "/metrics" } ". A spike shorter than a second between two samples is not seen; \
             peaks are the highest sampled value."
        }
        dt { "CPU %" }
        dd {
            "CPU time (user + system) the API process used during the second, as a percentage of \
             one core: 100 % means one core busy for the whole second. "
            @match (c.limits.limits_enforced, c.limits.cpu_cores) {
                (true, Some(cores)) => {
                    "In these runs the API was limited to " (super::model::cores(cores)) " ("
                    (c.limits.mechanism) "), so " (format!("{:.0}", cores * 100.0))
                    " % is the most it could use; a line at or near that value means the API had \
                     used its whole allowance and the kernel was throttling it."
                }
                _ => {
                    "In these runs " strong { "no CPU limit was enforced" } ", so the API could \
                     use several cores and values above 100 % are possible."
                }
            }
            " CPU-seconds per 1,000 orders = the API's CPU-seconds over the span × 1,000 ÷ fresh \
             201s: the cost of the work, independent of how fast it went."
        }
    }
}

/// The verdict, Little's law, the harness-bound flag and the repeats.
fn how_it_was_judged() -> Markup {
    let kept_2xx = format!("{:.0}", super::facts::KEPT_UP_2XX * 100.0);
    let kept_rate = format!("{:.0}", super::facts::KEPT_UP_RATE * 100.0);
    html! {
        dt { "Verdict" }
        dd {
            "Written from the results, never by hand. An API " em { "kept up" } " when at least "
            (kept_2xx) " % of the arrivals of the plateau (the whole run without one) were \
             answered 2xx and its answers came at no less than " (kept_rate) " % of the offered \
             rate, so no queue grew. The causes named are those the results show: the \
             Little's-law bound reached (at least 90 % of it), a pool with every place taken or \
             requests waiting for 3 s or more, the CPU at 90 % of its limit for 3 s or more, \
             requests shed, timed out, failed or not sent."
        }
        dt { "Little's law" }
        dd {
            code { "BLOCKING_THREADS ÷ critical path" } ", where the critical path is the sum of \
             the mock-deps latencies in force (seller + risk + payment), compared with the fresh \
             orders per second measured over the plateau; when a slowdown ("
            code { "--inject" } ") covered part of the plateau, the bound is the time-weighted \
             mean of the bounds in force."
        }
        dt { "Harness-bound" }
        dd {
            "A run is flagged when the generator was late, or mock-deps or PostgreSQL was near a \
             full core, at some point: then the harness, not the API, may have set the limit."
        }
        dt { "Repeats" }
        dd {
            "With " code { "--repeat N" } " the runs of both APIs are interleaved; tables show the \
             median over the repeats with the range (min – max) below it."
        }
    }
}
