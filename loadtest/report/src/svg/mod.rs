//! A small, dependency-free SVG line chart for the report (and, in `bars`, horizontal bars for the
//! scenario pages; in `stacked`, bars cut into parts): nice axes with units, several overlaid
//! series told apart by colour *and* dash pattern (readable in greyscale and by colour-blind
//! readers), vertical markers for phase boundaries and the run's timeline marks, horizontal reference lines
//! (e.g. the Little's-law bound), and an optional log scale for latencies.
//!
//! Output is SVG text that is a file of its own as it is (the namespace, its look in attributes,
//! a white ground: `style`) and is inlined into HTML as it is. Every number goes through [`coord`], and
//! points that cannot be drawn (NaN, ±∞, ≤ 0 on a log axis) break the line instead of reaching the
//! SVG, so the output never contains `NaN` or `inf`.

mod bars;
mod draw;
mod labels;
mod legend;
mod stacked;
mod style;
pub mod ticks;

pub use bars::{Bar, Panel, bars};
pub use labels::TickFormat;
pub use stacked::{Segment, StackedBar, stacked_bars};
pub use ticks::Scale;

/// Okabe–Ito palette: distinguishable for the common forms of colour blindness.
pub const PALETTE: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
];

/// Dash patterns, used together with colours so that no series relies on colour alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dash {
    #[default]
    Solid,
    Dashed,
    Dotted,
    DashDot,
}

impl Dash {
    pub const ALL: [Dash; 4] = [Dash::Solid, Dash::Dashed, Dash::Dotted, Dash::DashDot];

    fn dasharray(self) -> Option<&'static str> {
        match self {
            Dash::Solid => None,
            Dash::Dashed => Some("7 4"),
            Dash::Dotted => Some("2 3"),
            Dash::DashDot => Some("8 3 2 3"),
        }
    }
}

/// One line on the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub colour: &'static str,
    pub dash: Dash,
    /// Secondary lines (other repeats of the same run) are drawn lighter and not listed in the legend.
    pub secondary: bool,
    /// Mark every point with a dot: for a few measured points joined by straight lines.
    pub dots: bool,
    /// With `dots`: a short label beside each point, in the points' order (e.g. what stopped
    /// the API at that capacity); missing or empty ones draw nothing.
    pub labels: Vec<String>,
}

impl Series {
    pub fn new(
        name: impl Into<String>,
        points: Vec<(f64, f64)>,
        colour: &'static str,
        dash: Dash,
    ) -> Self {
        Series {
            name: name.into(),
            points,
            colour,
            dash,
            secondary: false,
            dots: false,
            labels: Vec::new(),
        }
    }
}

/// What a vertical marker stands for; decides its look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerKind {
    /// Ramp → constant → ramp-down boundaries.
    Phase,
    /// A mark on the run's timeline: something the lab did to the system, e.g. "payment latency
    /// 1000→5000 ms".
    TimelineMark,
}

/// A vertical line at `x` with a label at the top of the plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub x: f64,
    pub label: String,
    pub kind: MarkerKind,
}

/// A horizontal line at `y` with a label, e.g. the Little's-law throughput bound.
#[derive(Debug, Clone, PartialEq)]
pub struct RefLine {
    pub y: f64,
    pub label: String,
}

/// A chart description; [`LineChart::to_svg`] draws it.
#[derive(Debug, Clone, Default)]
pub struct LineChart {
    /// Short accessible title (also the SVG `<title>`).
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_format: TickFormat,
    pub y_format: TickFormat,
    pub y_scale: Scale,
    pub series: Vec<Series>,
    pub markers: Vec<Marker>,
    pub ref_lines: Vec<RefLine>,
    /// The x axis' domain; `None`: the extent of the series and markers. Charts stacked on one
    /// page share one, so that a time lands at the same x in each.
    pub x_range: Option<(f64, f64)>,
}

impl LineChart {
    /// A chart of plain numbers against a quantity spread over powers of ten (thread counts,
    /// batch sizes, critical paths): x spaced and labelled by powers of ten, y linear.
    pub fn log_x(title: &str, x_label: &str, y_label: &str, series: Vec<Series>) -> LineChart {
        LineChart {
            title: title.to_owned(),
            x_label: x_label.to_owned(),
            y_label: y_label.to_owned(),
            x_format: TickFormat::PowersOfTen,
            y_format: TickFormat::Number,
            y_scale: Scale::Linear,
            series,
            ..LineChart::default()
        }
    }
}

/// A chart with the words around it: what the report places in a `<figure>` (its `id`, heading
/// and caption).
pub struct Figure {
    pub id: String,
    pub title: String,
    pub caption: String,
    pub chart: LineChart,
}

/// Writes an SVG coordinate, not a figure for a reader (those are `lab_results::numbers`'): one
/// decimal at most (`12`, `12.5`), and non-finite values (which the callers filter out) become 0
/// rather than reaching the SVG.
pub fn coord(v: f64) -> String {
    if !v.is_finite() {
        return "0".to_owned();
    }
    let s = format!("{v:.1}");
    let s = s.strip_suffix(".0").unwrap_or(&s);
    if s == "-0" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

/// Escapes text for SVG/HTML content and attribute values with maud's escaper, the one the
/// page's templates use (`&`, `<`, `>` and `"`; every attribute value here is double-quoted).
/// The charts are SVG text built by this module and set into the page as `PreEscaped`: each
/// string in them that comes from the results (titles, names, labels, ticks) passes through here.
pub fn esc(text: &str) -> String {
    maud::html! { (text) }.into_string()
}

#[cfg(test)]
mod tests;
