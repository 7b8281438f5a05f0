//! How each part of a chart looks, written into the SVG itself as presentation attributes, and
//! the `<svg>` element around every chart. A chart is read in two places: inline in report.html
//! and the scenario pages, and as a file of its own (`loadtest crossover --out`, the SVGs under
//! docs/) shown by a markdown viewer or a code host as an `<img>`. An image does not see the
//! page's stylesheet, so nothing of the look may live there: a path whose `fill="none"` came
//! from a CSS class is filled black in an image, a grid drawn by a class is not drawn at all.
//! Attributes rather than a `<style>` element: inline in HTML a `<style>` inside an SVG applies to
//! the whole page, and every renderer reads attributes. The page's stylesheet only scales the
//! chart and, on a phone, sets larger text through the classes, which CSS may do over an
//! attribute.

/// The namespace without which a browser does not take a file for an SVG image.
const XMLNS: &str = "http://www.w3.org/2000/svg";
const FONT: &str = "system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif";

/// Grid lines across the plot.
pub const GRID: &str = r##"stroke="#e6e9ed" stroke-width="1""##;
/// The axes and the tick marks.
pub const AXIS: &str = r##"stroke="#8a939e" stroke-width="1" fill="none""##;
/// Tick labels, bar labels and values.
pub const TICK: &str = r##"fill="#4a525c" font-size="12""##;
/// Axis titles and panel titles.
pub const LABEL: &str = r##"fill="#3a424b" font-size="13""##;
/// A series' line (its colour, dash and width are the series').
pub const SERIES: &str = r#"fill="none" stroke-linejoin="round" stroke-linecap="round""#;
/// A white halo behind text drawn over lines, so that it reads where it crosses them.
const HALO: &str =
    r##"paint-order="stroke" stroke="#fff" stroke-width="3" stroke-linejoin="round""##;
pub const PHASE_LINE: &str = r##"stroke="#9aa3ad" stroke-width="1" stroke-dasharray="4 3""##;
pub const MARK_LINE: &str = r##"stroke="#b3261e" stroke-width="1.5""##;
pub const REF_LINE: &str = r##"stroke="#1b1f24" stroke-width="1.2" stroke-dasharray="10 3 2 3""##;
/// A legend's swatch: the series' own colour and dash, a little thicker.
pub const SWATCH: &str = r#"stroke-width="2.5" fill="none""#;
pub const LEGEND_TEXT: &str = r##"fill="#1b1f24" font-size="12""##;
pub const NODATA: &str = r##"fill="#9aa3ad" font-size="14""##;

/// A phase marker's label.
pub fn phase_text() -> String {
    format!(r##"fill="#5b6470" font-size="12" {HALO}"##)
}

/// An event marker's label.
pub fn mark_text() -> String {
    format!(r##"fill="#b3261e" font-size="12" font-weight="600" {HALO}"##)
}

/// A reference line's label.
pub fn ref_text() -> String {
    format!(r##"fill="#1b1f24" font-size="12" font-weight="600" {HALO}"##)
}

/// The `<svg>` element of a chart `width` × `height` units: the namespace, a size (an image's
/// natural size; the page scales it by CSS), the font, its `<title>`, and a white ground that
/// reads in light and dark viewers alike. `style` is the root's own CSS, e.g. a maximum width on
/// the page (`""`: none); `title` is escaped already.
pub fn document(width: &str, height: &str, style: &str, title: &str, body: &str) -> String {
    let style = if style.is_empty() {
        String::new()
    } else {
        format!(r#" style="{style}""#)
    };
    format!(
        r##"<svg xmlns="{XMLNS}" class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" font-family="{FONT}"{style}><title>{title}</title><rect width="100%" height="100%" fill="#fff"/>{body}</svg>"##
    )
}
