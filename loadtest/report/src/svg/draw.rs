//! Drawing a [`LineChart`]: the frame (plot area and axes), grid and tick labels, markers,
//! reference lines and the series paths (named in the legend: a name at a line's end needs a
//! leader when names collide, and a leader reads as data). Everything numeric passes through
//! [`coord`].

use std::fmt::Write as _;

use super::labels::{TickFormat, format_tick};
use super::ticks::{Axis, Scale};
use super::{LineChart, MarkerKind, coord, esc, legend, style};

pub(super) const WIDTH: f64 = 800.0;
pub(super) const PLOT_H: f64 = 220.0;
pub(super) const LEFT: f64 = 70.0;
/// The right margin: the same for every chart, so that charts stacked on the page share one plot
/// width and a time lands at the same x in each (lines are named in the legend, not at their end).
pub(super) const RIGHT: f64 = 20.0;
const MARKER_ROW: f64 = 13.0;

/// The drawable area and the two axes, shared by the drawing helpers.
struct Frame {
    x: Axis,
    y: Axis,
    top: f64,
}

impl Frame {
    fn px(&self, v: f64) -> Option<f64> {
        self.x
            .frac(v)
            .map(|f| LEFT + f * (self.plot_right() - LEFT))
    }
    fn plot_right(&self) -> f64 {
        WIDTH - RIGHT
    }
    fn py(&self, v: f64) -> Option<f64> {
        self.y.frac(v).map(|f| self.top + (1.0 - f) * PLOT_H)
    }
    fn bottom(&self) -> f64 {
        self.top + PLOT_H
    }
}

impl LineChart {
    /// Renders the chart as a standalone `<svg>` (see [`style::document`]), sized by its
    /// `viewBox` on the page.
    pub fn to_svg(&self) -> String {
        let (body, height) = self.body();
        style::document(&coord(WIDTH), &coord(height), "", &esc(&self.title), &body)
    }

    /// Several charts one above the other in one `<svg>` (charts that share an x axis), titled
    /// `title`: one image where a page would set them one after the other.
    pub fn stack(title: &str, charts: &[LineChart]) -> String {
        let (mut body, mut top) = (String::new(), 0.0);
        for c in charts {
            let (b, h) = c.body();
            let _ = write!(
                body,
                r#"<g transform="translate(0 {})"><title>{}</title>{b}</g>"#,
                coord(top),
                esc(&c.title)
            );
            top += h;
        }
        style::document(&coord(WIDTH), &coord(top), "", &esc(title), &body)
    }

    /// What is inside the `<svg>`, and its height.
    fn body(&self) -> (String, f64) {
        let frame = self.frame();
        let legend = legend::layout(&self.series, WIDTH - LEFT - RIGHT);
        let height = frame.bottom() + 46.0 + legend.height;
        let mut s = String::new();
        self.draw_axes(&mut s, &frame);
        self.draw_markers(&mut s, &frame);
        self.draw_ref_lines(&mut s, &frame);
        self.draw_series(&mut s, &frame);
        if !self.series.iter().any(|se| {
            se.points
                .iter()
                .any(|&(x, y)| frame.px(x).zip(frame.py(y)).is_some())
        }) {
            let _ = write!(
                s,
                r#"<text class="nodata" x="{}" y="{}" text-anchor="middle" {}>no data</text>"#,
                coord(LEFT + (frame.plot_right() - LEFT) / 2.0),
                coord(frame.top + PLOT_H / 2.0),
                style::NODATA
            );
        }
        legend.draw(&mut s, LEFT, frame.bottom() + 46.0);
        (s, height)
    }

    fn frame(&self) -> Frame {
        let finite = |v: &f64| v.is_finite() && (self.y_scale == Scale::Linear || *v > 0.0);
        let xs = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(self.markers.iter().map(|m| m.x));
        let ys = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(self.ref_lines.iter().map(|r| r.y));
        let (xlo, xhi) = self
            .x_range
            .unwrap_or_else(|| min_max(xs.filter(|v| v.is_finite())));
        let (ylo, yhi) = min_max(ys.filter(finite));
        // Rates, counts and latencies read best from zero on a linear axis.
        let ylo = if self.y_scale == Scale::Linear {
            ylo.min(0.0)
        } else {
            ylo
        };
        let rows = self.markers.len().clamp(0, 3) as f64;
        let x = match self.x_format {
            // Whole nines only: 0 %, 90 %, 99 %, 99.9 %, …
            f if f == TickFormat::Nines || f.is_powers_of_ten() => {
                let hi = xhi.max(1.0).ceil();
                Axis::new(Scale::Linear, 0.0, hi, hi as usize + 1)
            }
            _ => Axis::new(Scale::Linear, xlo, xhi, 9),
        };
        Frame {
            x,
            y: Axis::new(self.y_scale, ylo, yhi, 6),
            top: 12.0 + rows * MARKER_ROW,
        }
    }

    fn draw_axes(&self, s: &mut String, f: &Frame) {
        let (x0, x1, bottom) = (LEFT, f.plot_right(), f.bottom());
        for &t in &f.y.ticks {
            let Some(y) = f.py(t) else { continue };
            let step = if f.y.scale == Scale::Log {
                t
            } else {
                f.y.step()
            };
            let _ = write!(
                s,
                r#"<line class="grid" x1="{}" x2="{}" y1="{y}" y2="{y}" {}/><text class="tick" x="{}" y="{}" text-anchor="end" {}>{}</text>"#,
                coord(x0),
                coord(x1),
                style::GRID,
                coord(x0 - 6.0),
                coord(y + 4.0),
                style::TICK,
                esc(&format_tick(t, step, self.y_format)),
                y = coord(y)
            );
        }
        for &t in &f.x.ticks {
            let Some(x) = f.px(t) else { continue };
            // A label centred on a tick at the plot's right edge would run past the chart's.
            let anchor = if x + 30.0 > WIDTH { "end" } else { "middle" };
            let _ = write!(
                s,
                r#"<line class="axis" x1="{x}" x2="{x}" y1="{}" y2="{}" {}/><text class="tick" x="{x}" y="{}" text-anchor="{anchor}" {}>{}</text>"#,
                coord(bottom),
                coord(bottom + 5.0),
                style::AXIS,
                coord(bottom + 18.0),
                style::TICK,
                esc(&format_tick(t, f.x.step(), self.x_format)),
                x = coord(x)
            );
        }
        let _ = write!(
            s,
            r#"<path class="axis" d="M{x0} {top}V{b}H{x1}" {axis}/><text class="label" x="{mid}" y="{xl}" text-anchor="middle" {label}>{xt}</text><text class="label" transform="translate(16 {ym}) rotate(-90)" text-anchor="middle" {label}>{yt}</text>"#,
            axis = style::AXIS,
            label = style::LABEL,
            x0 = coord(x0),
            x1 = coord(x1),
            top = coord(f.top),
            b = coord(bottom),
            mid = coord((x0 + x1) / 2.0),
            xl = coord(bottom + 36.0),
            xt = esc(&self.x_label),
            ym = coord(f.top + PLOT_H / 2.0),
            yt = esc(&self.y_label),
        );
    }

    fn draw_markers(&self, s: &mut String, f: &Frame) {
        for (i, m) in self.markers.iter().enumerate() {
            let Some(x) = f.px(m.x) else { continue };
            // Labels are staggered over three rows so neighbouring markers do not overprint.
            let row = (i % 3) as f64;
            let label_y = 10.0 + row * MARKER_ROW;
            let (class, line, text) = match m.kind {
                MarkerKind::Phase => ("marker phase", style::PHASE_LINE, style::phase_text()),
                MarkerKind::TimelineMark => ("marker event", style::MARK_LINE, style::mark_text()),
            };
            // Labels right of the middle are written leftwards so they stay inside the chart.
            let (anchor, dx) = if x > WIDTH * 0.6 {
                ("end", -3.0)
            } else {
                ("start", 3.0)
            };
            let _ = write!(
                s,
                r#"<g class="{class}"><line x1="{x}" x2="{x}" y1="{}" y2="{}" {line}/><text x="{}" y="{}" text-anchor="{anchor}" {text}>{}</text></g>"#,
                coord(label_y - 9.0),
                coord(f.bottom()),
                coord(x + dx),
                coord(label_y),
                esc(&m.label),
                x = coord(x)
            );
        }
    }

    fn draw_ref_lines(&self, s: &mut String, f: &Frame) {
        for r in &self.ref_lines {
            let Some(y) = f.py(r.y) else { continue };
            // Above the line, unless that would run into the marker labels over the plot.
            let label_y = if y - f.top < 14.0 { y + 13.0 } else { y - 4.0 };
            let _ = write!(
                s,
                r#"<g class="ref"><line x1="{}" x2="{}" y1="{y}" y2="{y}" {}/><text x="{}" y="{}" text-anchor="end" {}>{}</text></g>"#,
                coord(LEFT),
                coord(f.plot_right()),
                style::REF_LINE,
                coord(f.plot_right() - 4.0),
                coord(label_y),
                style::ref_text(),
                esc(&r.label),
                y = coord(y)
            );
        }
    }

    fn draw_series(&self, s: &mut String, f: &Frame) {
        // Secondary lines first so the primary ones are drawn on top.
        let ordered = self
            .series
            .iter()
            .filter(|x| x.secondary)
            .chain(self.series.iter().filter(|x| !x.secondary));
        for se in ordered {
            let d = path_data(&se.points, f);
            if d.is_empty() {
                continue;
            }
            let dash = se
                .dash
                .dasharray()
                .map(|a| format!(r#" stroke-dasharray="{a}""#))
                .unwrap_or_default();
            let extra = if se.secondary {
                r#" stroke-opacity="0.4" stroke-width="1.2""#
            } else {
                r#" stroke-width="2""#
            };
            let _ = write!(
                s,
                r#"<path class="series" d="{d}" stroke="{}"{dash}{extra} {}><title>{}</title></path>"#,
                se.colour,
                style::SERIES,
                esc(&se.name)
            );
            if se.dots {
                for (i, (x, y)) in se
                    .points
                    .iter()
                    .enumerate()
                    .filter_map(|(i, &(x, y))| Some((i, f.px(x).zip(f.py(y))?)))
                {
                    let _ = write!(
                        s,
                        r#"<circle class="dot" cx="{}" cy="{}" r="3" fill="{}"/>"#,
                        coord(x),
                        coord(y),
                        se.colour
                    );
                    if let Some(label) = se.labels.get(i).filter(|l| !l.is_empty()) {
                        let _ = write!(
                            s,
                            r#"<text class="point-label" x="{}" y="{}" font-size="10" fill="{}">{}</text>"#,
                            coord(x + 5.0),
                            coord(y - 5.0),
                            se.colour,
                            esc(label)
                        );
                    }
                }
            }
        }
    }
}

/// `M x y L x y …`, starting a new sub-path after every point that cannot be drawn.
fn path_data(points: &[(f64, f64)], f: &Frame) -> String {
    let mut d = String::new();
    let mut pen_down = false;
    for &(x, y) in points {
        match f.px(x).zip(f.py(y)) {
            Some((px, py)) => {
                d.push(if pen_down { 'L' } else { 'M' });
                let _ = write!(d, "{} {}", coord(px), coord(py));
                pen_down = true;
            }
            None => pen_down = false,
        }
    }
    d
}

fn min_max(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::NAN, f64::NAN), |(lo, hi), v| (lo.min(v), hi.max(v)))
}
