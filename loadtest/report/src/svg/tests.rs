use super::draw::{LEFT, PLOT_H, RIGHT, WIDTH};
use super::*;

fn chart(series: Vec<Series>) -> LineChart {
    LineChart {
        title: "rate".into(),
        x_label: "time since start (s)".into(),
        y_label: "req/s".into(),
        series,
        ..LineChart::default()
    }
}

fn assert_no_bad_numbers(svg: &str) {
    for bad in ["NaN", "nan", "inf", "Infinity"] {
        assert!(!svg.contains(bad), "found {bad} in {svg}");
    }
}

#[test]
fn draws_one_path_per_series_with_distinct_styles() {
    let a = Series::new(
        "blocking-api",
        vec![(0.0, 0.0), (1.0, 50.0), (2.0, 90.0)],
        PALETTE[1],
        Dash::Solid,
    );
    let b = Series::new(
        "reactive-api",
        vec![(0.0, 0.0), (1.0, 60.0), (2.0, 150.0)],
        PALETTE[0],
        Dash::Dashed,
    );
    let svg = chart(vec![a, b]).to_svg();
    assert_eq!(svg.matches(r#"class="series""#).count(), 2);
    assert!(svg.contains("<title>blocking-api</title>"));
    assert!(svg.contains(r#"stroke-dasharray="7 4""#));
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    // A file of its own: a browser takes it for an SVG image only with the namespace.
    assert!(svg.starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg""#));
}

#[test]
fn scales_points_into_the_plot_area() {
    let s = Series::new(
        "x",
        vec![(0.0, 0.0), (10.0, 100.0)],
        PALETTE[0],
        Dash::Solid,
    );
    let svg = chart(vec![s]).to_svg();
    // x 0 → left margin, x 10 → right edge; y 0 → plot bottom, y 100 → plot top.
    let (left, right, top) = (LEFT, WIDTH - RIGHT, 12.0);
    let expected = format!(
        "M{} {}L{} {}",
        coord(left),
        coord(top + PLOT_H),
        coord(right),
        coord(top)
    );
    assert!(svg.contains(&expected), "expected {expected} in {svg}");
}

#[test]
fn empty_chart_says_no_data() {
    let svg = chart(vec![Series::new("x", vec![], PALETTE[0], Dash::Solid)]).to_svg();
    assert!(svg.contains("no data"));
    assert!(!svg.contains(r#"class="series""#));
    assert_no_bad_numbers(&svg);
    let svg = chart(vec![]).to_svg();
    assert!(svg.contains("no data"));
}

#[test]
fn nan_and_infinity_break_the_line_and_never_reach_the_svg() {
    let pts = vec![
        (0.0, 1.0),
        (1.0, f64::NAN),
        (2.0, 3.0),
        (f64::INFINITY, 4.0),
        (4.0, f64::NEG_INFINITY),
        (5.0, 2.0),
    ];
    let svg = chart(vec![Series::new("x", pts, PALETTE[0], Dash::Solid)]).to_svg();
    assert_no_bad_numbers(&svg);
    let d = svg
        .split(r#"d=""#)
        .nth(2)
        .expect("series path")
        .split('"')
        .next()
        .unwrap_or_default();
    assert_eq!(d.matches('M').count(), 3, "three separate pieces: {d}");
    let only_nan = Series::new("y", vec![(f64::NAN, f64::NAN); 3], PALETTE[0], Dash::Solid);
    let mut c = chart(vec![only_nan]);
    c.markers.push(Marker {
        x: f64::NAN,
        label: "nan marker".into(),
        kind: MarkerKind::TimelineMark,
    });
    c.ref_lines.push(RefLine {
        y: f64::INFINITY,
        label: "inf ref".into(),
    });
    assert_no_bad_numbers(&c.to_svg());
}

#[test]
fn log_scale_skips_non_positive_values() {
    let pts = vec![
        (0.0, 0.0),
        (1.0, 10.0),
        (2.0, 2000.0),
        (3.0, -5.0),
        (4.0, 30_000.0),
    ];
    let mut c = chart(vec![Series::new("p99", pts, PALETTE[0], Dash::Solid)]);
    c.y_scale = Scale::Log;
    c.y_format = TickFormat::Millis;
    let svg = c.to_svg();
    assert_no_bad_numbers(&svg);
    assert!(svg.contains(">10 ms<") && svg.contains(">100 s<"), "{svg}");
}

#[test]
fn markers_and_reference_lines_are_labelled_and_escaped() {
    let mut c = chart(vec![Series::new(
        "a",
        vec![(0.0, 10.0), (90.0, 80.0)],
        PALETTE[0],
        Dash::Solid,
    )]);
    c.markers.push(Marker {
        x: 30.0,
        label: "constant".into(),
        kind: MarkerKind::Phase,
    });
    c.markers.push(Marker {
        x: 45.0,
        label: "payment latency 1000→5000 ms".into(),
        kind: MarkerKind::TimelineMark,
    });
    c.ref_lines.push(RefLine {
        y: 91.0,
        label: "Little's law <bound>".into(),
    });
    let svg = c.to_svg();
    assert!(svg.contains(r#"class="marker phase""#) && svg.contains(r#"class="marker event""#));
    assert!(svg.contains("payment latency 1000→5000 ms"));
    assert!(svg.contains("Little's law &lt;bound&gt;"));
    // The y axis grows to include the reference line.
    assert!(svg.contains(">100<"), "{svg}");
}

#[test]
fn secondary_series_are_faint_and_not_in_the_legend() {
    let mut extra = Series::new(
        "repeat 2",
        vec![(0.0, 1.0), (1.0, 2.0)],
        PALETTE[0],
        Dash::Solid,
    );
    extra.secondary = true;
    let main = Series::new(
        "repeat 1",
        vec![(0.0, 1.0), (1.0, 3.0)],
        PALETTE[0],
        Dash::Solid,
    );
    let svg = chart(vec![extra, main]).to_svg();
    assert!(svg.contains(r#"stroke-opacity="0.4""#));
    let legend = svg
        .split(r#"<g class="legend">"#)
        .nth(1)
        .unwrap_or_default();
    assert!(legend.contains("repeat 1") && !legend.contains("repeat 2"));
}

#[test]
fn legend_wraps_into_rows() {
    let many: Vec<Series> = (0..12)
        .map(|i| {
            Series::new(
                format!("a fairly long series name {i}"),
                vec![(0.0, 1.0)],
                PALETTE[i % 7],
                Dash::ALL[i % 4],
            )
        })
        .collect();
    let l = legend::layout(&many, 670.0);
    assert!(
        l.height >= 4.0 * 18.0,
        "12 long names need several rows, got {}",
        l.height
    );
}

#[test]
fn num_is_compact_and_finite() {
    assert_eq!(coord(12.0), "12");
    assert_eq!(coord(12.345), "12.3");
    assert_eq!(coord(-0.01), "0");
    assert_eq!(coord(f64::NAN), "0");
}
