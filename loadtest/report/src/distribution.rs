//! The latency distribution of every API on one chart, HdrHistogram's percentile plot: latency
//! (log scale) against the percentile on a "nines" axis, so the tail gets as much room as the
//! median. Drawn from the percentiles the results keep of the span's full histogram.

use lab_results::{LatencyPercentiles, RunResults};

use super::model::ApiRuns;
use super::svg::{Dash, Figure, LineChart, Scale, Series, TickFormat};
use super::tables::Span;

/// The points of one histogram: x = −log10(1 − p), so 90 % → 1, 99 % → 2, 99.9 % → 3; the
/// maximum of `count` values stands at p = 1 − 1/count (at least just right of 99.9 %).
fn points(l: &LatencyPercentiles) -> Vec<(f64, f64)> {
    let max_x = (l.count.max(1) as f64).log10().max(3.3);
    vec![
        (2f64.log10(), l.p50),
        (1.0, l.p90),
        (2.0, l.p99),
        (3.0, l.p999),
        (max_x, l.max),
    ]
}

/// Which histogram of a run's span a line draws.
type Histogram = fn(&RunResults, Span) -> Option<LatencyPercentiles>;

pub fn figure(groups: &[ApiRuns<'_>]) -> Figure {
    let span = super::facts::span(groups);
    let which: [(&str, Dash, Histogram); 2] = [
        ("all", Dash::Solid, |r, span| {
            span.of(r).map(|s| s.latency_ms).filter(|l| l.count > 0)
        }),
        ("201s", Dash::Dashed, |r, span| {
            span.of(r)
                .and_then(|s| s.ok_latency_ms)
                .filter(|l| l.count > 0)
        }),
    ];
    let mut series = Vec::new();
    for g in groups {
        for (what, dash, get) in which {
            for (i, run) in g.runs.iter().enumerate() {
                let Some(l) = get(run, span) else { continue };
                let mut s = Series::new(format!("{} {what}", g.api), points(&l), g.colour, dash);
                s.secondary = i > 0;
                s.dots = true;
                series.push(s);
            }
        }
    }
    let over = match span {
        Span::Plateau => "the plateau",
        Span::Whole => "the whole run",
    };
    let title = "Latency distribution";
    Figure {
        id: "latency-distribution".to_owned(),
        title: title.to_owned(),
        caption: format!(
            "Every request answered over {over}, from intended send time: the latency below which each \
             percentile of them finished, on log scales (HdrHistogram's percentile plot). Solid: every \
             answer; dashed: the 201s alone, when recorded. The points are p50, p90, p99, p99.9 and the \
             maximum, from one histogram over the span; the maximum of n answers stands at 1 − 1/n."
        ),
        chart: LineChart {
            title: title.to_owned(),
            x_label: "percentile".to_owned(),
            y_label: "latency (log scale)".to_owned(),
            x_format: TickFormat::Nines,
            y_format: TickFormat::Millis,
            y_scale: Scale::Log,
            series,
            ..LineChart::default()
        },
    }
}
