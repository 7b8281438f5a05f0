//! The charts draw only data, and the page's links all land: rendered from the synthetic fixtures
//! (see `fixtures/mod.rs`), the charts over time share one x-axis geometry, no path runs past the
//! last sample of its series, no two lines of a chart lie on top of each other, and every in-page
//! link (contents bar, trust strip) has its target, even for results that measured little.

mod fixtures;

use lab_report::render_html;
use lab_results::RunResults;

/// Each `<figure>` of the page: its id and its SVG.
fn charts(html: &str) -> Vec<(&str, &str)> {
    html.match_indices("<figure id=\"fig-")
        .map(|(i, _)| {
            let rest = &html[i + 16..];
            let id = &rest[..rest.find('"').expect("id")];
            let svg = &rest[rest.find("<svg").expect("svg")..rest.find("</svg>").expect("end")];
            (id, svg)
        })
        .collect()
}

/// The value of attribute `name` in a tag.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(&tag[start..start + tag[start..].find('"')?])
}

/// Every tag `<name …>` of `svg`.
fn tags<'a>(svg: &'a str, name: &str) -> Vec<&'a str> {
    svg.match_indices(&format!("<{name} "))
        .map(|(i, _)| &svg[i..i + svg[i..].find('>').expect("tag end")])
        .collect()
}

/// The x coordinates of a path's `d` (`M x y L x y …`).
fn xs(d: &str) -> Vec<f64> {
    d.split(['M', 'L'])
        .filter(|p| !p.is_empty())
        .map(|p| p.split(' ').next().expect("x").parse().expect("number"))
        .collect()
}

/// The x-axis of a time chart: its frame (`M<left> <top>V<bottom>H<right>` → left, right) and
/// each tick as (label, x).
struct XAxis {
    left: f64,
    right: f64,
    ticks: Vec<(String, f64)>,
}

fn x_axis(svg: &str) -> XAxis {
    let frame = tags(svg, "path")
        .into_iter()
        .find(|t| attr(t, "class") == Some("axis"))
        .and_then(|t| attr(t, "d"))
        .expect("frame");
    let left = frame[1..frame.find(' ').expect("M x")]
        .parse()
        .expect("left");
    let right = frame[frame.find('H').expect("H") + 1..]
        .parse()
        .expect("right");
    // x ticks: an axis line followed by a centred label.
    let ticks = svg
        .match_indices("<line class=\"axis\" x1=\"")
        .map(|(i, _)| {
            let rest = &svg[i..];
            let x = attr(rest, "x1").expect("x1").parse().expect("x");
            let text = &rest[rest.find("<text").expect("label")..];
            let label = &text[text.find('>').expect(">") + 1..];
            (label[..label.find('<').expect("<")].to_owned(), x)
        })
        .collect();
    XAxis { left, right, ticks }
}

/// The charts over time (those with a seconds axis).
fn time_charts(html: &str) -> Vec<(&str, &str)> {
    charts(html)
        .into_iter()
        .filter(|(_, svg)| svg.contains("time since the start of the measured part"))
        .collect()
}

#[test]
fn stacked_time_charts_share_one_x_axis_geometry() {
    let html = render_html(&fixtures::pair());
    let all = time_charts(&html);
    assert!(all.len() >= 12, "{}", all.len());
    let (first_id, first) = all[0];
    let reference = x_axis(first);
    assert!(
        reference.ticks.iter().any(|(l, _)| l == "40 s"),
        "{:?}",
        reference.ticks
    );
    for (id, svg) in &all[1..] {
        let a = x_axis(svg);
        assert_eq!(
            (a.left, a.right, &a.ticks),
            (reference.left, reference.right, &reference.ticks),
            "{id} against {first_id}"
        );
    }
}

/// Seconds → x, from the first two ticks of the axis (`0 s`, `10 s`, …).
fn scale(axis: &XAxis) -> impl Fn(f64) -> f64 + use<> {
    let secs = |l: &str| -> f64 { l.trim_end_matches(" s").parse().expect("seconds") };
    let ((l0, x0), (l1, x1)) = (axis.ticks[0].clone(), axis.ticks[1].clone());
    let (t0, t1) = (secs(&l0), secs(&l1));
    move |t| x0 + (t - t0) * (x1 - x0) / (t1 - t0)
}

#[test]
fn no_path_runs_past_the_last_sample_of_its_series() {
    let runs = fixtures::pair();
    let html = render_html(&runs);
    let last = |r: &RunResults| f64::from(r.seconds.last().expect("seconds").t);
    let longest = runs.iter().map(last).fold(0.0, f64::max);
    for (id, svg) in time_charts(&html) {
        let px = scale(&x_axis(svg));
        for path in tags(svg, "path") {
            if attr(path, "class") == Some("axis") {
                continue;
            }
            // Only series are drawn as paths: no leader line, no label line that reads as data.
            assert_eq!(attr(path, "class"), Some("series"), "{id}: {path}");
            let title_at = svg.find(path).expect("path") + path.len();
            let title = &svg[title_at..];
            let title = &title
                [title.find("<title>").expect("title") + 7..title.find("</title>").expect("end")];
            let run = runs
                .iter()
                .find(|r| id.ends_with(&r.api) || title.starts_with(&r.api));
            let end = run.map_or(longest, last);
            let drawn = xs(attr(path, "d").expect("d"))
                .into_iter()
                .fold(0.0, f64::max);
            assert!(
                drawn <= px(end) + 0.11,
                "{id}: {title} drawn to x={drawn}, its last sample at {end} s is x={}",
                px(end)
            );
        }
    }
}

#[test]
fn no_line_is_hidden_under_another() {
    let html = render_html(&fixtures::pair());
    for (id, svg) in charts(&html) {
        let mut ds: Vec<&str> = tags(svg, "path")
            .into_iter()
            .filter(|p| attr(p, "class") == Some("series"))
            .filter_map(|p| attr(p, "d"))
            .collect();
        let n = ds.len();
        ds.sort_unstable();
        ds.dedup();
        assert_eq!(ds.len(), n, "{id}: two lines drawn on the same path");
    }
}

/// Every `href="#…"` of the page has an element with that id.
fn assert_links_resolve(html: &str) {
    for (i, _) in html.match_indices("href=\"#") {
        let target = &html[i + 7..];
        let target = &target[..target.find('"').expect("end")];
        assert!(
            html.contains(&format!("id=\"{target}\"")),
            "link to #{target} has no target"
        );
    }
}

#[test]
fn every_in_page_link_resolves_even_when_little_was_measured() {
    let runs = fixtures::pair();
    let html = render_html(&runs);
    assert!(html.matches("href=\"#").count() >= 15);
    assert_links_resolve(&html);
    // Older, thinner results: no Little's law, no dependency latencies (so no objective), no
    // money, no goose, no per-second series.
    let bare: Vec<RunResults> = runs
        .into_iter()
        .map(|mut r| {
            r.littles_law = None;
            r.config.mock_latency_ms = None;
            r.money = None;
            r.goose_reports.clear();
            r.seconds.clear();
            r
        })
        .collect();
    let html = render_html(&bare);
    assert_links_resolve(&html);
    fixtures::assert_offline(&html);
    for id in ["money", "goose", "littles-law"] {
        let s = fixtures::section(&html, id);
        assert!(
            s.contains("Not measured") || s.contains("No run"),
            "{id}: {s}"
        );
    }
}

#[test]
fn no_tick_label_runs_past_the_chart() {
    let html = render_html(&fixtures::pair());
    for (id, svg) in charts(&html) {
        for t in tags(svg, "text")
            .into_iter()
            .filter(|t| attr(t, "class") == Some("tick"))
        {
            let x: f64 = attr(t, "x").expect("x").parse().expect("number");
            // Centred labels need half their width (≤ 8 characters at 15 units) on the right.
            if attr(t, "text-anchor") == Some("middle") {
                assert!(x + 60.0 <= 800.0, "{id}: {t}");
            }
        }
    }
}

#[test]
fn charts_scale_to_the_page_and_the_summary_fits_a_phone() {
    let html = render_html(&fixtures::pair());
    // Scaled by their viewBox to the page's width (the stylesheet's, over the width an image of
    // the chart has on its own); nothing sets a minimum width that would scroll sideways.
    for (id, svg) in charts(&html) {
        let tag = &svg[..svg.find('>').expect("tag")];
        let view_box = attr(tag, "viewBox").expect("viewBox");
        assert_eq!(
            view_box.split(' ').nth(2),
            attr(tag, "width"),
            "{id}: its natural width is its viewBox's"
        );
    }
    assert!(lab_report::CSS.contains("svg.chart { width:100%;"));
    assert!(!lab_report::CSS.contains("min-width"));
    // One table per span, each with one column per API: both APIs side by side on a phone.
    let summary = fixtures::section(&html, "summary");
    assert_eq!(summary.matches("<table class=\"summary\">").count(), 2);
    assert_eq!(summary.matches("<th class=\"api\"").count(), 4);
}
