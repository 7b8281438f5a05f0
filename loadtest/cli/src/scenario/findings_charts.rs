//! The scenario pages' charts: batching's orders/s against batch size (one line per API × RTT),
//! events' req/s under a slow broker and events lost in a crash (bars, one per run). Drawn with
//! the report's own SVG module (its escaper, its palette), so they look like report.html's.

use lab_report::svg::{Dash, LineChart, PALETTE, Scale, Series, TickFormat, esc};

use super::findings::{BatchPoint, EventsPoint, apis};
use super::page::ScenarioChart;

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
        title: "Orders per second against persist batch size".to_owned(),
        x_label: "PERSIST_BATCH_MAX (orders per persist transaction, log spacing)".to_owned(),
        y_label: "orders per second".to_owned(),
        x_format: TickFormat::PowersOfTen,
        y_format: TickFormat::Number,
        y_scale: Scale::Linear,
        series,
        ..LineChart::default()
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
    let slowed: Vec<&EventsPoint> = rows
        .iter()
        .filter(|r| r.broker == "slowed" && !r.crash)
        .collect();
    let crashed: Vec<&EventsPoint> = rows.iter().filter(|r| r.crash).collect();
    let names = apis(rows.iter().map(|r| r.api.as_str()));
    let colour = |api: &str| api_colour(names.iter().position(|n| *n == api).unwrap_or(0));
    // Narrower than the report's charts (600 units): on a phone its text scales down less.
    let (w, label_w, row_h) = (600.0, 200.0, 20.0);
    let mut svg = String::new();
    let mut y = 0.0;
    for (title, of, value, unit) in [
        (
            "req/s with the broker slowed",
            &slowed,
            (|r: &EventsPoint| r.req_per_s) as fn(&EventsPoint) -> f64,
            "req/s",
        ),
        (
            "events lost when the API was killed mid-run",
            &crashed,
            |r: &EventsPoint| r.events_lost as f64,
            "lost",
        ),
    ] {
        if of.is_empty() {
            continue;
        }
        y += 22.0;
        svg.push_str(&format!(
            r#"<text class="label" x="0" y="{y}" font-weight="600">{}</text>"#,
            esc(title)
        ));
        y += 8.0;
        let max = of.iter().map(|r| value(r)).fold(0.0, f64::max).max(1.0);
        for r in of.iter() {
            let len = (w - label_w - 80.0) * value(r) / max;
            svg.push_str(&format!(
                r#"<text class="tick" x="{lx}" y="{ty}" text-anchor="end">{}</text><rect x="{label_w}" y="{y}" width="{len:.1}" height="14" fill="{}"><title>{}</title></rect><text class="tick" x="{vx:.1}" y="{ty}">{} {unit}</text>"#,
                esc(&format!("{} · {}", r.mode, r.api)),
                colour(&r.api),
                esc(&format!("{} {} {}", r.api, r.mode, r.broker)),
                if value(r) >= 100.0 { format!("{:.0}", value(r)) } else { format!("{:.1}", value(r)).trim_end_matches(".0").to_owned() },
                lx = label_w - 6.0,
                ty = y + 11.0,
                vx = label_w + len + 5.0,
            ));
            y += row_h;
        }
    }
    ScenarioChart {
        title: "Throughput under a slow broker, events lost in a crash".to_owned(),
        caption: "Per mode and API (colour); each bar one run, its value written beside it."
            .to_owned(),
        svg: format!(
            r#"<svg class="chart" viewBox="0 0 {w} {h:.0}" role="img" style="max-width:640px"><title>req/s and lost events per mode</title>{svg}</svg>"#,
            h = y + 6.0
        ),
    }
}

/// An API's colour, as the report gives it: vermillion, blue, then the rest of the palette.
fn api_colour(i: usize) -> &'static str {
    const ORDER: [usize; 7] = [1, 0, 2, 3, 4, 5, 6];
    PALETTE[ORDER[i % ORDER.len()]]
}
