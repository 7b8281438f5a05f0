//! "How every number was measured": the section that lets a reader trace each figure in the report
//! back to the measurement behind it. Filled in with the run's own settings where they matter.

use std::fmt::Write as _;

use super::model::ApiRuns;
use super::svg::esc;

/// Writes the method section.
pub fn method(s: &mut String, groups: &[ApiRuns<'_>]) {
    let Some(run) = groups.first().and_then(|g| g.runs.first()) else {
        return;
    };
    let c = &run.config;
    let cpu_limit = match (c.limits.limits_enforced, c.limits.cpu_cores) {
        (true, Some(cores)) => format!(
            "In these runs the API was limited to {} ({}), so {:.0} % is the most it could use; a \
             line at or near that value means the API had used its whole allowance and the kernel was throttling it.",
            super::model::cores(cores),
            esc(&c.limits.mechanism),
            cores * 100.0
        ),
        _ => "In these runs <strong>no CPU limit was enforced</strong>, so the API could use several cores and values \
              above 100 % are possible."
            .to_owned(),
    };
    let _ = write!(
        s,
        "<section id=\"method\"><h2>How every number was measured</h2><dl class=\"method\">\
<dt>Latency</dt><dd>Measured by the load generator for every request, from the request's <em>intended</em> \
send time (its slot in the arrival schedule) to the end of its response. A generator that falls behind \
therefore cannot hide the queueing it causes (no <em>coordinated omission</em>). Values are recorded in \
HdrHistogram (3 significant digits). Whole-span percentiles come from one histogram over the whole span, \
never from averaging per-second percentiles. A request still unanswered after {timeout} ms counts as a \
<code>timeout</code> error.</dd>\
<dt>Open model</dt><dd>Arrivals follow the profile's schedule whatever the API does (as in the original \
Gatling injection): a slow API does not slow the arrivals down. An arrival that finds {cap} requests already \
open is counted as <em>not sent</em>; <code>offered = sent + not sent</code>.</dd>\
<dt>Outcomes</dt><dd><code>201</code> = a fresh order; an idempotent replay (<code>Idempotent-Replayed: true</code>) \
counts as 2xx but not as a new order. Every other outcome is an error, named by the API's error code \
(<code>database_unavailable</code>, …), <code>http_&lt;status&gt;</code> when the body had none, or by the \
transport failure (<code>timeout</code>, <code>connect_error</code>, <code>io_error</code>).</dd>\
<dt>Spans</dt><dd><em>Plateau</em> is the constant-rate phase only; <em>whole run</em> is everything after the \
{warmup} s warm-up (which is excluded from every figure), including the ramps and the drain after the last \
arrival. Rates are per second of the <em>schedule</em>, the same denominator for every API: the plateau's \
length for the plateau; for the whole run, the time from the first arrival to the end of the last phase \
(answers that came during the drain count, the drain's seconds do not). Throughput = completed ÷ that \
length; orders per second = fresh 201s ÷ that length.</dd>\
<dt>Sampling</dt><dd>Every chart has one point per second. Counts (offered, sent, completed, errors) are events \
within that second; latency percentiles cover the requests that <em>finished</em> in it. Gauges are read once at \
the end of each second: CPU, RSS, threads and open files of the API process from <code>/proc/&lt;pid&gt;</code>; \
database pool, blocking pool and in-flight requests from the API's <code>/metrics</code>. A spike shorter than a \
second between two samples is not seen; peaks are the highest sampled value.</dd>\
<dt>CPU %</dt><dd>CPU time (user + system) the API process used during the second, as a percentage of one \
core: 100 % means one core busy for the whole second. {cpu_limit} CPU-seconds per 1,000 orders = the API's \
CPU-seconds over the span × 1,000 ÷ fresh 201s: the cost of the work, independent of how fast it went.</dd>\
<dt>Verdict</dt><dd>Written from the results, never by hand. An API <em>kept up</em> when at least \
{kept_2xx:.0} % of the arrivals of the plateau (the whole run without one) were answered 2xx and its answers \
came at no less than {kept_rate:.0} % of the offered rate, so no queue grew. The causes named are those \
the results show: the Little's-law bound reached (at least 90 % of it), a pool with every place taken or \
requests waiting for 3 s or more, the CPU at 90 % of its limit for 3 s or more, requests shed, timed out, \
failed or not sent.</dd>\
<dt>Little's law</dt><dd><code>BLOCKING_THREADS ÷ critical path</code>, where the critical path is the sum of the \
mock-deps latencies in force (seller + risk + payment), compared with the fresh orders per second measured \
over the plateau; when a slowdown (<code>--inject</code>) covered part of the plateau, the bound is the \
time-weighted mean of the bounds in force.</dd>\
<dt>Harness-bound</dt><dd>A run is flagged when the generator was late, or mock-deps or PostgreSQL was near a \
full core, at some point: then the harness, not the API, may have set the limit.</dd>\
<dt>Repeats</dt><dd>With <code>--repeat N</code> the runs of both APIs are interleaved; tables show the median \
over the repeats with the range (min – max) below it.</dd></dl></section>",
        timeout = c.request_timeout_ms,
        kept_2xx = super::facts::KEPT_UP_2XX * 100.0,
        kept_rate = super::facts::KEPT_UP_RATE * 100.0,
        cap = c.max_in_flight,
        warmup = c.warmup_s,
    );
}
