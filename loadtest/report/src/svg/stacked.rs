//! Horizontal stacked bars: one bar per row, cut into its parts (each part's value in its
//! `<title>`), its total written beside it, and the parts named once in a legend under the bars,
//! in the order they are stacked. What the report draws for an API's CPU per order by thread role.
//! In the style of [`super::bars`] (the same label column, escaper and tick text).

use super::{coord, esc, style};

/// One part of a [`StackedBar`].
pub struct Segment {
    pub name: &'static str,
    pub colour: &'static str,
    pub value: f64,
}

/// One bar: its label and its parts, stacked from the left in this order.
pub struct StackedBar {
    pub label: String,
    pub segments: Vec<Segment>,
}

impl StackedBar {
    fn total(&self) -> f64 {
        self.segments.iter().map(|s| s.value.max(0.0)).sum()
    }
}

/// The bars on one scale, each total written as `{total} {unit}` with `decimals` decimals.
pub fn stacked_bars(title: &str, unit: &str, decimals: usize, bars: &[StackedBar]) -> String {
    let longest = bars
        .iter()
        .map(|b| b.label.chars().count())
        .max()
        .unwrap_or(0);
    let label_w = (7.5 * longest as f64 + 10.0).clamp(120.0, 330.0);
    let (bar_w, row_h) = (320.0, 22.0);
    let w = label_w + bar_w + 110.0;
    let max = bars.iter().map(StackedBar::total).fold(0.0, f64::max);
    let scale = if max > 0.0 { bar_w / max } else { 0.0 };
    let mut svg = String::new();
    let mut y = 6.0;
    for b in bars {
        let ty = coord(y + 12.0);
        svg.push_str(&format!(
            r#"<text class="tick" {} x="{}" y="{ty}" text-anchor="end">{}</text>"#,
            style::TICK,
            coord(label_w - 6.0),
            esc(&b.label)
        ));
        let mut x = label_w;
        for s in b.segments.iter().filter(|s| s.value > 0.0) {
            let len = s.value * scale;
            svg.push_str(&format!(
                r##"<rect x="{}" y="{}" width="{}" height="16" fill="{}" stroke="#fff" stroke-width="0.5"><title>{}</title></rect>"##,
                coord(x),
                coord(y),
                coord(len),
                s.colour,
                esc(&format!("{}: {:.*} {unit}", s.name, decimals, s.value))
            ));
            x += len;
        }
        svg.push_str(&format!(
            r#"<text class="tick" {} x="{}" y="{ty}">{}</text>"#,
            style::TICK,
            coord(x + 5.0),
            esc(format!("{:.*} {unit}", decimals, b.total()).trim_end())
        ));
        y += row_h;
    }
    // The legend: each part named once, in the order of its first appearance.
    let mut named: Vec<(&str, &str)> = Vec::new();
    for s in bars
        .iter()
        .flat_map(|b| &b.segments)
        .filter(|s| s.value > 0.0)
    {
        if !named.iter().any(|(n, _)| *n == s.name) {
            named.push((s.name, s.colour));
        }
    }
    let (mut x, mut ly) = (0.0, y + 10.0);
    for (name, colour) in named {
        let item_w = 22.0 + 7.5 * name.chars().count() as f64 + 14.0;
        if x > 0.0 && x + item_w > w {
            (x, ly) = (0.0, ly + 18.0);
        }
        svg.push_str(&format!(
            r#"<rect x="{}" y="{}" width="14" height="10" fill="{colour}"/><text class="tick" {} x="{}" y="{}">{}</text>"#,
            coord(x),
            coord(ly - 9.0),
            style::TICK,
            coord(x + 20.0),
            coord(ly),
            esc(name)
        ));
        x += item_w;
    }
    style::document(
        &coord(w),
        &coord(ly + 8.0),
        "max-width:640px",
        &esc(title),
        &svg,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_stacked_on_one_scale_and_named_once() {
        let seg = |name, colour, value| Segment {
            name,
            colour,
            value,
        };
        let bars = [
            StackedBar {
                label: "blocking-api".to_owned(),
                segments: vec![seg("a", "#111", 3.0), seg("b", "#222", 1.0)],
            },
            StackedBar {
                label: "reactive-api".to_owned(),
                segments: vec![seg("a", "#111", 2.0), seg("b", "#222", 0.0)],
            },
        ];
        let svg = stacked_bars("CPU <per> order", "ms", 2, &bars);
        assert!(svg.contains("<title>CPU &lt;per&gt; order</title>"));
        // 4 ms is the widest bar: 320 units; 3 ms of it 240, 1 ms 80, and the other's 2 ms 160.
        for part in [
            r##"width="240" height="16" fill="#111""##,
            r##"width="80" height="16" fill="#222""##,
            r##"width="160" height="16" fill="#111""##,
        ] {
            assert!(svg.contains(part), "{part} in {svg}");
        }
        assert!(svg.contains("<title>a: 3.00 ms</title>"));
        assert!(svg.contains(">4.00 ms</text>") && svg.contains(">2.00 ms</text>"));
        // The empty part is neither drawn nor doubled in the legend.
        assert_eq!(svg.matches(r##"fill="#222""##).count(), 2, "{svg}");
        assert_eq!(svg.matches(r##"fill="#111""##).count(), 3, "{svg}");
    }
}
