//! Horizontal bar charts (a bar per run, its value written beside it), beside the line charts and
//! in their style (the same escaper, the palette given by the caller): what the scenario pages of
//! events, overload, remotecall, faults and capacity draw. The report's one bar-chart writer.

use super::{coord, esc, style};

/// One bar of a [`bars`] chart.
pub struct Bar {
    pub label: String,
    pub tip: String,
    pub colour: &'static str,
    pub value: f64,
}

/// A titled group of bars sharing one scale.
pub struct Panel<'a> {
    pub title: &'a str,
    pub unit: &'a str,
    pub bars: Vec<Bar>,
}

/// Horizontal bars in panels, each bar's value written beside it; an empty panel is left out.
/// Narrower than the report's charts (at most 730 units): on a phone its text scales down less.
pub fn bars(title: &str, panels: &[Panel]) -> String {
    // The labels' column as wide as the longest label (≈ 7.5 units a character at the tick size),
    // so that none is cut at the left edge; the bars keep 320 units and their values 80.
    let longest = panels
        .iter()
        .flat_map(|p| &p.bars)
        .map(|b| b.label.chars().count())
        .max()
        .unwrap_or(0);
    let label_w = (7.5 * longest as f64 + 10.0).clamp(120.0, 330.0);
    let (w, row_h) = (label_w + 400.0, 20.0);
    let mut svg = String::new();
    let mut y = 0.0;
    for p in panels.iter().filter(|p| !p.bars.is_empty()) {
        y += 22.0;
        svg.push_str(&format!(
            r#"<text class="label" {} x="0" y="{y}" font-weight="600">{}</text>"#,
            style::LABEL,
            esc(p.title)
        ));
        y += 8.0;
        let max = p.bars.iter().map(|b| b.value).fold(0.0, f64::max).max(1.0);
        for b in &p.bars {
            let len = (w - label_w - 80.0) * b.value / max;
            let value = if b.value >= 100.0 {
                format!("{:.0}", b.value)
            } else {
                format!("{:.1}", b.value).trim_end_matches(".0").to_owned()
            };
            svg.push_str(&format!(
                r#"<text class="tick" {tick} x="{lx}" y="{ty}" text-anchor="end">{}</text><rect x="{label_w}" y="{y}" width="{len:.1}" height="14" fill="{}"><title>{}</title></rect><text class="tick" {tick} x="{vx:.1}" y="{ty}">{}</text>"#,
                esc(&b.label),
                b.colour,
                esc(&b.tip),
                // A rate reads `75/s`; other units after a space (`12 ms`).
                esc(format!("{value}{}{}", if p.unit.starts_with('/') { "" } else { " " }, p.unit).trim_end()),
                tick = style::TICK,
                lx = label_w - 6.0,
                ty = y + 11.0,
                vx = label_w + len + 5.0,
            ));
            y += row_h;
        }
    }
    style::document(
        &coord(w),
        &format!("{:.0}", y + 6.0),
        "max-width:640px",
        &esc(title),
        &svg,
    )
}
