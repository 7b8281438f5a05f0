//! The prose sections of the HTML page: Little's law, fairness, configuration and environment,
//! consistency checks. "How every number was measured" lives in `method`.

use std::fmt::Write as _;

use super::fairness::{self, Setting, Status};
use super::littles;
use super::model::{ApiRuns, Unit, by_api, cores, fmt, run_name};
use super::svg::esc;

pub use super::method::method;

pub fn littles_law(s: &mut String, groups: &[ApiRuns<'_>]) {
    s.push_str("<section id=\"littles-law\"><h2>Little's law: the thread-per-request ceiling</h2>");
    let rows = littles::rows(groups);
    if rows.is_empty() {
        s.push_str("<p>No run carries a Little's-law bound (it applies to the blocking API only).</p></section>");
        return;
    }
    s.push_str(
        "<p class=\"teach\">A server that holds one thread for the whole of each request can finish at most \
         <em>threads ÷ time each request holds its thread</em> requests per second — here the sequential \
         calls to the seller, risk and payment services — however fast its CPU is.</p>",
    );
    for row in &rows {
        let _ = write!(
            s,
            "<p class=\"ll\">{}: {}</p>",
            esc(row.api),
            littles::sentence(row).html()
        );
    }
    s.push_str(
        "<p class=\"note\">The bound is drawn as a horizontal line on the rate chart. The reactive API holds no \
         thread while it waits, so this bound does not apply to it; its ceiling is CPU, the database pool or the \
         mocks.</p></section>",
    );
}

/// A settings table with one column per API; rows take their class from their [`Status`].
fn settings_table(s: &mut String, rows: &[&Setting], groups: &[ApiRuns<'_>]) {
    s.push_str("<table class=\"settings\"><thead><tr><th>setting</th>");
    for g in groups {
        let _ = write!(
            s,
            "<th class=\"api\" style=\"--api:{}\">{}</th>",
            g.colour,
            esc(g.api)
        );
    }
    s.push_str("</tr></thead><tbody>");
    for row in rows {
        let class = match row.status {
            Status::Same => "",
            Status::Expected => " class=\"expected\"",
            Status::Differs => " class=\"differs\"",
        };
        let _ = write!(
            s,
            "<tr{class}><th scope=\"row\"><code>{}</code></th>",
            esc(&row.name)
        );
        for (_, v) in &row.values {
            let _ = write!(s, "<td>{}</td>", esc(&v.join(" / ")));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
}

pub fn fairness(s: &mut String, groups: &[ApiRuns<'_>]) {
    let f = fairness::compare(groups);
    let (differing, expected) = (f.with(Status::Differs), f.with(Status::Expected));
    s.push_str(
        "<section id=\"fairness\"><h2>Fairness: what differs besides the execution model</h2>",
    );
    if differing.is_empty() {
        let _ = write!(
            s,
            "<p class=\"ok\">All {} compared settings (API settings, mock latencies, limits, load profile, \
             generator settings, build and machine) are the same for every run, apart from those the \
             execution model itself implies (below).</p>",
            f.settings.len()
        );
    } else {
        let _ = write!(
            s,
            "<div class=\"banner warn\" id=\"unfair\"><strong>{} setting(s) differ between the runs</strong> \
             other than the execution model; each one is a caveat on the comparison.</div>",
            differing.len()
        );
        settings_table(s, &differing, groups);
    }
    if !expected.is_empty() {
        s.push_str(
            "<p class=\"note\">Expected to differ (they belong to one execution model, or must differ for \
             two processes to share a machine):</p>",
        );
        settings_table(s, &expected, groups);
    }
    s.push_str("</section>");
}

pub fn configuration(s: &mut String, groups: &[ApiRuns<'_>]) {
    s.push_str("<section id=\"configuration\"><h2>Configuration and environment</h2>");
    // Limits first: they decide whether the numbers mean anything.
    s.push_str("<h3>Resource limits on the API process</h3><ul class=\"limits\">");
    let limits = by_api(groups, |run| {
        let l = &run.config.limits;
        let what = [
            l.cpu_cores.map(cores),
            l.memory_bytes.map(|b| fmt(b as f64, Unit::Bytes)),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ");
        let what = if what.is_empty() {
            "no limit".to_owned()
        } else {
            what
        };
        let note = if l.note.is_empty() {
            String::new()
        } else {
            format!(" — {}", l.note)
        };
        Some((
            l.limits_enforced,
            format!("{what} via {}{note}", l.mechanism),
        ))
    });
    for (who, (enforced, what)) in limits {
        let state = if enforced {
            "<span class=\"pill ok\">enforced</span>"
        } else {
            "<span class=\"pill bad\">NOT enforced</span>"
        };
        let _ = write!(s, "<li>{}: {state} {}</li>", esc(&who), esc(&what));
    }
    s.push_str("</ul>");

    if let Some(run) = groups.first().and_then(|g| g.runs.first()) {
        s.push_str("<h3>Load profile</h3><table class=\"settings\"><thead><tr><th>phase</th><th>start</th><th>length</th><th>rate</th><th>arrivals</th></tr></thead><tbody>");
        for p in &run.config.profile.phases {
            let _ = write!(
                s,
                "<tr><th scope=\"row\">{}</th><td>{} s</td><td>{} s</td><td>{} → {} req/s</td><td>{}</td></tr>",
                esc(&p.name),
                p.start_s,
                p.duration_s,
                p.from_rate,
                p.to_rate,
                fmt(p.arrivals as f64, Unit::Count)
            );
        }
        s.push_str("</tbody></table>");
    }

    s.push_str(
        "<h3>Every setting, per API</h3><p class=\"note\">Highlighted: differs between runs (yellow: a \
         caveat on the comparison; grey: implied by the execution model).</p>",
    );
    let f = fairness::compare(groups);
    settings_table(s, &f.settings.iter().collect::<Vec<_>>(), groups);
    s.push_str("</section>");
}

pub fn invariants(s: &mut String, groups: &[ApiRuns<'_>]) {
    s.push_str("<section id=\"checks\"><h2>Consistency checks</h2>");
    let runs: Vec<_> = groups.iter().flat_map(|g| &g.runs).collect();
    if runs.iter().all(|r| r.invariants.is_empty()) {
        s.push_str("<p>No end-of-run checks were recorded.</p></section>");
        return;
    }
    s.push_str("<table class=\"settings\"><thead><tr><th>run</th><th>check</th><th>result</th><th>detail</th></tr></thead><tbody>");
    for r in runs {
        for c in &r.invariants {
            let (class, word) = match c.ok {
                Some(true) => ("ok", "held"),
                Some(false) => ("bad", "VIOLATED"),
                None => ("unk", "not checked"),
            };
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td><span class=\"pill {class}\">{word}</span></td><td>{}</td></tr>",
                esc(&run_name(r)),
                esc(&c.name),
                esc(&c.detail)
            );
        }
        if let Some(g) = &r.after_give_up {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>orders finished after their client gave up (by key)</td><td><span class=\"pill unk\">counted</span></td><td>{}</td></tr>",
                esc(&run_name(r)),
                esc(&g.detail)
            );
        }
    }
    s.push_str("</tbody></table></section>");
}
