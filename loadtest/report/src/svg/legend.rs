//! The chart legend: one swatch (colour + dash, exactly as drawn) and name per primary series,
//! flowed into rows under the plot.

use std::fmt::Write as _;

use super::{Series, coord, esc, style};

const ROW_H: f64 = 18.0;
const SWATCH: f64 = 26.0;
/// Rough advance of one character of the legend font; only used to flow entries into rows. Sized
/// for 15 units (the page sets that on a phone, where the chart is scaled down), so that no row
/// runs past the chart's edge at either size.
const CHAR_W: f64 = 8.2;

/// Entries placed in rows, relative to the legend's top-left corner.
pub struct Legend<'a> {
    entries: Vec<(f64, f64, &'a Series)>,
    pub height: f64,
}

/// Flows the legend entries into rows no wider than `width`.
pub fn layout(series: &[Series], width: f64) -> Legend<'_> {
    let mut entries = Vec::new();
    let (mut x, mut row) = (0.0, 0.0);
    for se in series.iter().filter(|s| !s.secondary) {
        let w = SWATCH + 6.0 + se.name.chars().count() as f64 * CHAR_W + 18.0;
        if x > 0.0 && x + w > width {
            x = 0.0;
            row += 1.0;
        }
        entries.push((x, row * ROW_H, se));
        x += w;
    }
    let height = if entries.is_empty() {
        0.0
    } else {
        (row + 1.0) * ROW_H
    };
    Legend { entries, height }
}

impl Legend<'_> {
    /// Draws the legend with its top-left corner at (`left`, `top`).
    pub fn draw(&self, s: &mut String, left: f64, top: f64) {
        if self.entries.is_empty() {
            return;
        }
        s.push_str(r#"<g class="legend">"#);
        for &(x, y, se) in &self.entries {
            let (x, y) = (left + x, top + y);
            let dash = se
                .dash
                .dasharray()
                .map(|a| format!(r#" stroke-dasharray="{a}""#))
                .unwrap_or_default();
            let _ = write!(
                s,
                r#"<line {} x1="{}" x2="{}" y1="{ly}" y2="{ly}" stroke="{}"{dash}/><text {} x="{}" y="{}">{}</text>"#,
                style::SWATCH,
                coord(x),
                coord(x + SWATCH),
                se.colour,
                style::LEGEND_TEXT,
                coord(x + SWATCH + 6.0),
                coord(y + 4.0),
                esc(&se.name),
                ly = coord(y),
            );
        }
        s.push_str("</g>");
    }
}
