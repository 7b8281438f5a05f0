//! The scenario pages' charts, one per scenario, drawing only the rows: batching's orders/s
//! against batch size (one line per API × RTT), db-latency's throughput and connections in use
//! against RTT (lines per API); bars, one per run, for events (req/s under a slow broker, events
//! lost in a crash), overload (201/s and p99, shedding off and on), remotecall (req/s and errors
//! per scope) and faults (each API's money). Drawn with the report's own SVG module (its escaper,
//! its palette, its bars), so they look like report.html's.

use crate::svg::{Bar, Dash, LineChart, PALETTE, Panel, Scale, Series, TickFormat, bars};
use lab_results::scenario::{
    BatchPoint, DbLatencyPoint, EventsPoint, FaultsPoint, OverloadPoint, RemotecallPoint,
};

use super::{ScenarioChart, apis};

/// Orders/s against batch size (log spacing), one line per API × RTT.
pub fn batching(rows: &[BatchPoint]) -> ScenarioChart {
    let swept: Vec<&BatchPoint> = rows.iter().filter(|r| r.swept()).collect();
    let mut rtts: Vec<f64> = swept.iter().map(|r| r.db_rtt_ms).collect();
    rtts.sort_by(f64::total_cmp);
    rtts.dedup();
    let mut series = Vec::new();
    for (ai, api) in apis(swept.iter().map(|r| r.api.as_str()))
        .into_iter()
        .enumerate()
    {
        for (ri, &rtt) in rtts.iter().enumerate() {
            let mut pts: Vec<(f64, f64)> = swept
                .iter()
                .filter(|r| r.api == api && r.db_rtt_ms == rtt)
                .map(|r| ((r.batch_max as f64).log10(), r.orders_per_s))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut s = Series::new(
                format!("{api}, {rtt} ms RTT"),
                pts,
                api_colour(ai),
                Dash::ALL[ri % 4],
            );
            s.dots = true;
            series.push(s);
        }
    }
    let chart = LineChart {
        y_format: TickFormat::PerSecond,
        ..LineChart::log_x(
            "Orders per second against persist batch size",
            "PERSIST_BATCH_MAX (orders per persist transaction, log spacing)",
            "orders per second",
            series,
        )
    };
    ScenarioChart {
        title: chart.title.clone(),
        caption:
            "Closed model, saturating clients, no commit_delay; one line per API (colour) and \
                  database round trip (dash). Each dot is one run; harness-bound runs are marked ⚠ \
                  in the table."
                .to_owned(),
        svg: chart.to_svg(),
    }
}

/// Horizontal bars, two panels: req/s with the broker slowed, and events lost when killed.
pub fn events(rows: &[EventsPoint]) -> ScenarioChart {
    let names = apis(rows.iter().map(|r| r.api.as_str()));
    let bar = |r: &EventsPoint, value: f64| Bar {
        label: format!("{} · {}", r.mode, r.api),
        tip: format!("{} {} {}", r.api, r.mode, r.broker),
        colour: colour_of(&names, &r.api),
        value,
    };
    let slowed = rows.iter().filter(|r| r.broker == "slowed" && !r.crash);
    let crashed = rows.iter().filter(|r| r.crash);
    ScenarioChart {
        title: "Throughput under a slow broker, events lost in a crash".to_owned(),
        caption: "Per mode and API (colour); each bar one run, its value written beside it."
            .to_owned(),
        svg: bars(
            "req/s and lost events per mode",
            &[
                Panel {
                    title: "req/s with the broker slowed",
                    unit: "req/s",
                    bars: slowed.map(|r| bar(r, r.req_per_s)).collect(),
                },
                Panel {
                    title: "events lost when the API was killed mid-run",
                    unit: "lost",
                    bars: crashed.map(|r| bar(r, r.events_lost as f64)).collect(),
                },
            ],
        ),
    }
}

/// Throughput and connections in use against the added RTT, one line per API, in two stacked
/// charts sharing the x axis.
pub fn db_latency(rows: &[DbLatencyPoint]) -> ScenarioChart {
    let names = apis(rows.iter().map(|r| r.api.as_str()));
    let lines = |f: &dyn Fn(&DbLatencyPoint) -> Option<f64>| -> Vec<Series> {
        names
            .iter()
            .enumerate()
            .map(|(i, api)| {
                let mut pts: Vec<(f64, f64)> = rows
                    .iter()
                    .filter(|r| r.api == *api)
                    .filter_map(|r| Some((r.db_rtt_ms, f(r)?)))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let mut s = Series::new(api.to_string(), pts, api_colour(i), Dash::ALL[i % 4]);
                s.dots = true;
                s
            })
            .collect()
    };
    let chart = |title: &str, y_label: &str, y_format, series| LineChart {
        title: title.to_owned(),
        x_label: "added round trip to PostgreSQL".to_owned(),
        y_label: y_label.to_owned(),
        x_format: TickFormat::Millis,
        y_format,
        y_scale: Scale::Linear,
        series,
        ..LineChart::default()
    };
    let throughput = chart(
        "Orders per second over the plateau",
        "orders per second",
        TickFormat::PerSecond,
        lines(&|r| Some(r.orders_per_s)),
    );
    let connections = chart(
        "Connections in use (mean over the plateau)",
        "connections",
        TickFormat::Number,
        lines(&|r| r.connections_mean),
    );
    ScenarioChart {
        title: "Throughput and connections in use against database RTT".to_owned(),
        caption:
            "One line per API; each dot one run at the same open rate. Harness-bound runs are \
                  marked ⚠ in the table."
                .to_owned(),
        svg: LineChart::stack(
            "Throughput and connections in use against database RTT",
            &[throughput, connections],
        ),
    }
}

/// 201s per second and their p99, per API with shedding off and on.
pub fn overload(rows: &[OverloadPoint]) -> ScenarioChart {
    let names = apis(rows.iter().map(|r| r.api.as_str()));
    let bar = |r: &OverloadPoint, value: f64| Bar {
        label: format!("{} · shedding {}", r.api, r.shedding),
        tip: format!("{} shedding {}", r.api, r.shedding),
        colour: colour_of(&names, &r.api),
        value,
    };
    ScenarioChart {
        title: "Orders per second and their p99, shedding off and on".to_owned(),
        caption: "Per API (colour) and shedding; each bar one run. A run without a 201 has no p99 \
                  bar."
            .to_owned(),
        svg: bars(
            "201/s and 201 p99 with shedding off and on",
            &[
                Panel {
                    title: "201s per second of the schedule",
                    unit: "/s",
                    bars: rows.iter().map(|r| bar(r, r.ok_per_s)).collect(),
                },
                Panel {
                    title: "p99 of the 201s, ms",
                    unit: "ms",
                    bars: rows
                        .iter()
                        .filter_map(|r| Some(bar(r, r.ok_p99_ms?)))
                        .collect(),
                },
            ],
        ),
    }
}

/// req/s per API, transaction scope and payment latency.
pub fn remotecall(rows: &[RemotecallPoint]) -> ScenarioChart {
    let names = apis(rows.iter().map(|r| r.api.as_str()));
    let bar = |r: &RemotecallPoint, value: f64| Bar {
        label: format!("{} ms · {} · {}", r.payment_ms, r.tx_scope, r.api),
        tip: format!(
            "{} {} scope, payment {} ms",
            r.api, r.tx_scope, r.payment_ms
        ),
        colour: colour_of(&names, &r.api),
        value,
    };
    ScenarioChart {
        title: "Requests per second and errors by transaction scope".to_owned(),
        caption: "Per payment latency, scope and API (colour); each bar one run.".to_owned(),
        svg: bars(
            "req/s and errors by transaction scope",
            &[
                Panel {
                    title: "requests per second",
                    unit: "req/s",
                    bars: rows.iter().map(|r| bar(r, r.req_per_s)).collect(),
                },
                Panel {
                    title: "failed requests",
                    unit: "errors",
                    bars: rows.iter().map(|r| bar(r, r.errors as f64)).collect(),
                },
            ],
        ),
    }
}

/// The money of each API's run through the faults: charges, orders, voids, and what must be 0.
pub fn faults(rows: &[FaultsPoint]) -> ScenarioChart {
    let names = apis(rows.iter().map(|r| r.api.as_str()));
    let panels: Vec<Panel> = rows
        .iter()
        .filter_map(|r| {
            let m = r.money.as_ref()?;
            let colour = colour_of(&names, &r.api);
            let bar = |label: &str, value: u64| Bar {
                label: label.to_owned(),
                tip: format!("{}: {label}", r.api),
                colour,
                value: value as f64,
            };
            Some(Panel {
                title: &r.api,
                unit: "",
                bars: vec![
                    bar("charges", m.charges),
                    bar("orders", m.orders),
                    bar("voids", m.voids),
                    bar("charges without order", m.charges_without_order),
                    bar("orders without charge", m.orders_without_charge),
                    bar("double charges", m.double_charges),
                ],
            })
        })
        .collect();
    ScenarioChart {
        title: "The money of each run through the faults".to_owned(),
        caption:
            "Per API, counted once no key was CHARGING: every charge must be one order or one \
                  void, so the last three bars must be empty. One run holds every fault (payment \
                  errors throughout, kill -9, PostgreSQL restart): the census is per run, not per \
                  fault."
                .to_owned(),
        svg: bars("money per API", &panels),
    }
}

fn colour_of(names: &[&str], api: &str) -> &'static str {
    api_colour(names.iter().position(|n| *n == api).unwrap_or(0))
}

/// An API's colour, as the report gives it: vermillion, blue, then the rest of the palette.
fn api_colour(i: usize) -> &'static str {
    const ORDER: [usize; 7] = [1, 0, 2, 3, 4, 5, 6];
    PALETTE[ORDER[i % ORDER.len()]]
}
