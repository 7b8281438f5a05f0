//! What the scenarios made of lab runs found (`remotecall`, `db-latency`, `overload`, `faults`),
//! in one or two sentences computed from their rows (`points.rs`). The odd cases come first and
//! are said plainly: no rows, every row harness-bound, money that does not balance.

use lab_results::numbers::ms_or_s;

use lab_report::scenario::apis;
use lab_results::scenario::{DbLatencyPoint, FaultsPoint, OverloadPoint, RemotecallPoint};

/// `None`: go on. `Some(lines)`: the conclusion starts with these — all of it when there are no
/// rows, a warning when every row was harness-bound.
fn odd_cases(rows: usize, bound: usize) -> Option<Vec<String>> {
    match (rows, bound) {
        (0, _) => Some(vec![
            "No run finished, so there is nothing to conclude: see the log of each run.".into(),
        ]),
        (n, b) if n == b => Some(vec![format!(
            "Every one of the {n} runs was harness-bound: the figures below are the machine's as \
             much as the APIs'."
        )]),
        _ => None,
    }
}

/// With its odd cases first; `body` is skipped when there are no rows.
fn conclude(rows: usize, bound: usize, body: impl FnOnce() -> Vec<String>) -> Vec<String> {
    let mut out = odd_cases(rows, bound).unwrap_or_default();
    if rows > 0 {
        out.extend(body());
    }
    out
}

fn rate(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// Per payment latency (slowest first): each scope's req/s and errors, per API.
pub fn remotecall(rows: &[RemotecallPoint]) -> Vec<String> {
    let bound = rows.iter().filter(|r| r.harness_bound.is_some()).count();
    conclude(rows.len(), bound, || {
        let mut pays: Vec<u64> = rows.iter().map(|r| r.payment_ms).collect();
        pays.sort_by(|a, b| b.cmp(a));
        pays.dedup();
        pays.iter()
            .map(|&pay| {
                let each: Vec<String> = rows
                    .iter()
                    .filter(|r| r.payment_ms == pay)
                    .map(|r| {
                        let errors = match r.errors {
                            0 => String::new(),
                            e => format!(", {e} of {} failed", r.sent),
                        };
                        format!(
                            "{} {} scope {} req/s{errors}",
                            r.api,
                            r.tx_scope,
                            rate(r.req_per_s)
                        )
                    })
                    .collect();
                format!("With payment answering in {pay} ms: {}.", each.join("; "))
            })
            .collect()
    })
}

/// Each API at the largest added RTT against its run without one: throughput kept, connections.
pub fn db_latency(rows: &[DbLatencyPoint]) -> Vec<String> {
    let bound = rows.iter().filter(|r| r.harness_bound.is_some()).count();
    conclude(rows.len(), bound, || {
        let worst = rows.iter().map(|r| r.db_rtt_ms).fold(0.0, f64::max);
        let conns = |r: &DbLatencyPoint| {
            r.connections_mean
                .map_or("connections in use not scraped".to_owned(), |c| {
                    format!("{c:.1} connections in use on average")
                })
        };
        let each: Vec<String> = apis(rows.iter().map(|r| r.api.as_str()))
            .into_iter()
            .filter_map(|api| {
                let of = |rtt: f64| rows.iter().find(|r| r.api == api && r.db_rtt_ms == rtt);
                let (direct, far) = (of(0.0)?, of(worst)?);
                let errors = match far.errors {
                    0 => String::new(),
                    e => format!(", {e} of {} failed", far.sent),
                };
                Some(format!(
                    "{api} kept {:.0} % of its direct throughput ({} → {} orders/s) with {} ({} \
                     directly), p99 {:.0} ms{errors}",
                    100.0 * far.orders_per_s / direct.orders_per_s.max(f64::MIN_POSITIVE),
                    rate(direct.orders_per_s),
                    rate(far.orders_per_s),
                    conns(far),
                    direct
                        .connections_mean
                        .map_or("not scraped".to_owned(), |c| format!("{c:.1}")),
                    far.p99_ms
                ))
            })
            .collect();
        if each.is_empty() || worst == 0.0 {
            return vec![
                "The rows lack a run without added RTT or one with it: no comparison to make."
                    .into(),
            ];
        }
        vec![format!(
            "With {worst} ms added between API and PostgreSQL, {}.",
            each.join("; ")
        )]
    })
}

/// Per API: shedding on against off — 201s per second and their p99, refusals, client timeouts.
pub fn overload(rows: &[OverloadPoint]) -> Vec<String> {
    let bound = rows.iter().filter(|r| r.harness_bound.is_some()).count();
    conclude(rows.len(), bound, || {
        apis(rows.iter().map(|r| r.api.as_str()))
            .into_iter()
            .map(|api| {
                let each: Vec<String> = rows
                    .iter()
                    .filter(|r| r.api == api)
                    .map(|r| {
                        let refused = if r.overloaded > 0 {
                            format!(
                                ", refused {:.0} % (p99 {})",
                                100.0 * r.overloaded as f64 / r.sent.max(1) as f64,
                                ms_or_s(r.overloaded_p99_ms)
                            )
                        } else {
                            String::new()
                        };
                        format!(
                            "shedding {} {} 201/s (p99 {}){refused}, {} client timeouts",
                            r.shedding,
                            rate(r.ok_per_s),
                            ms_or_s(r.ok_p99_ms),
                            r.timeouts
                        )
                    })
                    .collect();
                format!("{api}: {}.", each.join("; "))
            })
            .collect()
    })
}

/// Money first (balanced or not, per API), then how the retrying clients ended.
pub fn faults(rows: &[FaultsPoint]) -> Vec<String> {
    let bound = rows.iter().filter(|r| r.harness_bound.is_some()).count();
    let mut out = Vec::new();
    let unbalanced: Vec<String> = rows
        .iter()
        .filter_map(|r| match &r.money {
            None => Some(format!("{}'s money was not counted", r.api)),
            Some(m) if !m.balanced() => Some(format!(
                "{} has {} charges without order, {} orders without charge, {} double charges, \
                 {} amount mismatches",
                r.api,
                m.charges_without_order,
                m.orders_without_charge,
                m.double_charges,
                m.amount_mismatches
            )),
            Some(_) => None,
        })
        .collect();
    if !unbalanced.is_empty() {
        out.push(format!("MONEY NOT BALANCED: {}.", unbalanced.join("; ")));
    }
    out.extend(conclude(rows.len(), bound, || {
        let balanced: Vec<String> = rows
            .iter()
            .filter_map(|r| {
                let m = r.money.as_ref().filter(|m| m.balanced())?;
                Some(format!(
                    "{} ({} charges: {} orders, {} voided)",
                    r.api, m.charges, m.orders, m.voids
                ))
            })
            .collect();
        let mut lines = Vec::new();
        if !balanced.is_empty() {
            lines.push(format!(
                "Through payment faults, a kill -9 and a PostgreSQL restart, every charge ended as \
                 one order or one void for {}.",
                balanced.join(" and ")
            ));
        }
        let clients: Vec<String> = rows
            .iter()
            .filter_map(|r| {
                Some(format!(
                    "{} {} of {} clients got their 201, {} gave up",
                    r.api, r.ended_created?, r.clients?, r.gave_up?
                ))
            })
            .collect();
        if !clients.is_empty() {
            lines.push(format!("{}.", clients.join("; ")));
        }
        lines
    }));
    out
}

#[cfg(test)]
#[path = "pages_tests.rs"]
mod tests;
