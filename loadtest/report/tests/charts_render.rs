//! Every chart the lab writes, opened as a file of its own by a real SVG renderer (resvg), as a
//! markdown viewer or a code host shows it: an `<img>`, without the page's stylesheet. Each must
//! be an SVG image (the namespace: without it a browser does not take the file for one), drawn
//! on white must show something, its grid and each of its lines, and no dark area where a line
//! should be (a path that is not told `fill="none"` is filled black). The charts: every one of
//! the fixture report, every scenario page's from the committed results and the test fixtures,
//! and the SVGs committed under docs/ (flamegraphs aside, which are not ours).

// The report tests' shared fixtures, of which this one draws the pair's report only.
#[allow(dead_code)]
mod fixtures;

use std::path::{Path, PathBuf};

use lab_report::scenario::{ScenarioTable, capacity_table, charts, crossover};
use lab_results::scenario::CapacityFile;
use resvg::{tiny_skia, usvg};
use serde::de::DeserializeOwned;

const SVG_NS: &str = "http://www.w3.org/2000/svg";
/// The grid's colour (crate::svg's `style::GRID`).
const GRID: [u8; 3] = [0xe6, 0xe9, 0xed];

/// Opens `svg` as an image and says what is wrong with it, if anything.
fn check(svg: &str) -> Result<(), String> {
    check_and_keep(svg, None)
}

/// [`check`], keeping the image drawn as a PNG at `keep` (to look at it).
fn check_and_keep(svg: &str, keep: Option<&Path>) -> Result<(), String> {
    let doc = usvg::roxmltree::Document::parse(svg).map_err(|e| format!("not XML: {e}"))?;
    let root = doc.root_element();
    if root.tag_name().namespace() != Some(SVG_NS) {
        return Err(format!(
            "<{}> is not in the SVG namespace: a browser does not show it as an image",
            root.tag_name().name()
        ));
    }
    let tree = usvg::Tree::from_str(svg, &usvg::Options::default())
        .map_err(|e| format!("not an SVG image: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("an empty image")?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    if let Some(path) = keep {
        pixmap
            .save_png(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let image = Image {
        width: size.width() as usize,
        pixels: pixmap
            .pixels()
            .iter()
            .map(|p| [p.red(), p.green(), p.blue()])
            .collect(),
    };
    let drawn = image.count(|p| p.iter().any(|&c| c < 245));
    if drawn < 300 {
        return Err(format!("blank: {drawn} pixels drawn"));
    }
    if svg.contains(r#"class="grid""#) && image.count(grid) < 200 {
        return Err("no grid drawn".to_owned());
    }
    for colour in line_colours(svg) {
        if image.count(|p| near(p, colour, 40)) < 10 {
            return Err(format!("a line of colour {colour:?} is not drawn"));
        }
    }
    let dark = image.dark_areas();
    // Only a chart that asks for a black fill may have a dark area (a black dot or bar).
    if dark > 0 && !svg.contains(r##"fill="#000000""##) {
        return Err(format!(
            "{dark} pixels inside dark areas: a line drawn as a filled shape"
        ));
    }
    Ok(())
}

struct Image {
    width: usize,
    pixels: Vec<[u8; 3]>,
}

impl Image {
    fn count(&self, f: impl Fn([u8; 3]) -> bool) -> usize {
        self.pixels.iter().filter(|&&p| f(p)).count()
    }

    /// Pixels whose whole 5×5 neighbourhood is near black: the inside of a dark shape, which no
    /// line (at most 2.5 units wide) has.
    fn dark_areas(&self) -> usize {
        let dark = |p: [u8; 3]| p.iter().all(|&c| c < 80);
        let (w, h) = (self.width, self.pixels.len() / self.width);
        let mut n = 0;
        for y in 2..h.saturating_sub(2) {
            for x in 2..w.saturating_sub(2) {
                let all = (y - 2..=y + 2)
                    .all(|yy| (x - 2..=x + 2).all(|xx| dark(self.pixels[yy * w + xx])));
                n += usize::from(all);
            }
        }
        n
    }
}

/// A pixel of a grid line: its colour, or (a line between two rows of pixels, anti-aliased) its
/// colour at least a third over white.
fn grid(p: [u8; 3]) -> bool {
    let over_white: Vec<f64> = p
        .iter()
        .zip(GRID)
        .map(|(&c, g)| f64::from(255 - c) / f64::from(255 - g))
        .collect();
    let (lo, hi) = over_white
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &a| (lo.min(a), hi.max(a)));
    lo >= 0.33 && hi <= 1.15 && hi - lo <= 0.2
}

fn near(p: [u8; 3], c: [u8; 3], tolerance: u8) -> bool {
    p.iter().zip(c).all(|(&a, b)| a.abs_diff(b) <= tolerance)
}

/// The colours of the chart's primary lines (a series path drawn at full opacity).
fn line_colours(svg: &str) -> Vec<[u8; 3]> {
    svg.match_indices(r#"<path class="series""#)
        .map(|(i, _)| &svg[i..i + svg[i..].find('>').expect("tag end")])
        .filter(|tag| !tag.contains("stroke-opacity") && !tag.contains(r#"d="""#))
        .filter_map(|tag| {
            let at = tag.find(r##"stroke="#"##)? + 9;
            let hex = |k: usize| u8::from_str_radix(&tag[at + k..at + k + 2], 16).ok();
            Some([hex(0)?, hex(2)?, hex(4)?])
        })
        .collect()
}

/// Checks every chart, naming each that fails. With `CHART_PNG_OUT=DIR` each image drawn is kept
/// there as a PNG, named after the chart.
fn assert_all_open(charts: &[(String, String)]) {
    let out = std::env::var_os("CHART_PNG_OUT").map(PathBuf::from);
    let failed: Vec<String> = charts
        .iter()
        .filter_map(|(name, svg)| {
            let keep = out.as_ref().map(|dir| {
                std::fs::create_dir_all(dir).expect("CHART_PNG_OUT");
                let file: String = name
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                    .collect();
                dir.join(format!("{file}.png"))
            });
            check_and_keep(svg, keep.as_deref())
                .err()
                .map(|e| format!("{name}: {e}"))
        })
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Each `<svg>…</svg>` of a page, in order.
fn svgs_of(html: &str) -> Vec<String> {
    html.match_indices("<svg ")
        .map(|(i, _)| {
            let end = i + html[i..].find("</svg>").expect("svg end") + 6;
            html[i..end].to_owned()
        })
        .collect()
}

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

fn read<T: DeserializeOwned>(path: &Path) -> T {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A scenario's rows: the file's array, or its `rows`.
fn rows<T: DeserializeOwned>(path: &Path) -> Vec<T> {
    let json: serde_json::Value = read(path);
    let rows = json.get("rows").cloned().unwrap_or(json);
    serde_json::from_value(rows).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn named(tables: &[ScenarioTable]) -> Vec<(String, String)> {
    tables
        .iter()
        .flat_map(|t| &t.charts)
        .map(|c| (c.title.clone(), c.svg.clone()))
        .collect()
}

#[test]
fn every_chart_of_the_report_opens_as_an_image() {
    let html = lab_report::render_html(&fixtures::pair());
    let svgs = svgs_of(&html);
    assert!(svgs.len() >= 12, "{} charts", svgs.len());
    let named: Vec<(String, String)> = svgs
        .into_iter()
        .enumerate()
        .map(|(i, svg)| (format!("report chart {i}"), svg))
        .collect();
    assert_all_open(&named);
}

#[test]
fn every_scenario_chart_opens_as_an_image() {
    let capacity = docs().join("results/capacity");
    let file = |name: &str| -> CapacityFile { read(&capacity.join(name)) };
    let mut tables: Vec<ScenarioTable> = ["cap", "cap1980", "threads", "xo22", "xo220"]
        .iter()
        .map(|n| capacity_table::table(&file(&format!("{n}.scenario.json"))))
        .collect();
    let pod: Vec<CapacityFile> = ["cp22", "cp220-durability-off", "cp2200", "cp22s"]
        .iter()
        .map(|n| file(&format!("pod-0125/{n}.scenario.json")))
        .collect();
    tables.extend(pod.iter().map(capacity_table::table));
    tables.push(crossover::table(&pod));
    tables.push(crossover::table(&[
        file("cap.scenario.json"),
        file("xo220.scenario.json"),
        file("xo22.scenario.json"),
    ]));
    let mut all = named(&tables);
    let results = docs().join("results");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/src/scenario/fixtures");
    for chart in [
        charts::events(&rows(&results.join("events-scenario.json"))),
        charts::batching(&rows(&results.join("batching-scenario.json"))),
        charts::db_latency(&rows(&fixtures.join("db-latency-scenario.json"))),
        charts::remotecall(&rows(&fixtures.join("remotecall-scenario.json"))),
        charts::overload(&rows(&fixtures.join("overload-scenario.json"))),
        charts::faults(&rows(&fixtures.join("faults-scenario.json"))),
    ] {
        all.push((chart.title, chart.svg));
    }
    assert!(all.len() >= 20, "{} charts", all.len());
    assert_all_open(&all);
}

/// Every `.svg` under `dir`, flamegraphs aside.
fn committed_svgs(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("docs") {
        let path = entry.expect("entry").path();
        if path.is_dir() && !path.ends_with("flamegraphs") {
            committed_svgs(&path, out);
        } else if path.extension().is_some_and(|e| e == "svg") {
            out.push(path);
        }
    }
}

#[test]
fn the_charts_committed_under_docs_open_as_images() {
    let mut paths = Vec::new();
    committed_svgs(&docs(), &mut paths);
    assert!(paths.len() >= 5, "{paths:?}");
    let charts: Vec<(String, String)> = paths
        .iter()
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(p).expect("svg"),
            )
        })
        .collect();
    assert_all_open(&charts);
    for (name, svg) in &charts {
        assert!(!svg.contains(".000k"), "{name}: a label such as 10.000k");
    }
}

#[test]
fn the_check_fails_on_a_broken_chart() {
    // The crossover of four critical paths, whose lines drawn filled made a black wedge.
    let pod: Vec<CapacityFile> = ["cp22", "cp220-durability-off", "cp2200", "cp22s"]
        .iter()
        .map(|n| read(&docs().join(format!("results/capacity/pod-0125/{n}.scenario.json"))))
        .collect();
    let good = crossover::table(&pod).charts[0].svg.clone();
    assert_eq!(check(&good), Ok(()));
    let no_namespace = good.replacen(&format!(r#" xmlns="{SVG_NS}""#), "", 1);
    assert!(check(&no_namespace).unwrap_err().contains("namespace"));
    // A line whose look came from a stylesheet the image does not have: filled black.
    let filled = good.replace(r#"fill="none" stroke-linejoin"#, "stroke-linejoin");
    assert!(
        check(&filled).unwrap_err().contains("dark areas"),
        "{filled}"
    );
    let no_grid = good.replace(r##"stroke="#e6e9ed""##, "");
    assert_eq!(check(&no_grid), Err("no grid drawn".to_owned()));
    let blank = format!(r#"<svg xmlns="{SVG_NS}" width="800" height="300"></svg>"#);
    assert!(check(&blank).unwrap_err().starts_with("blank"));
}
