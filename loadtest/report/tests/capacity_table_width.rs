//! The capacity and threads pages' table reads at a laptop's width (1,400 px) and a phone's
//! (390 px): what stopped each step — the reason a reader opens the page — is one word among the
//! columns above the fold, and the measurement behind it is listed under the table. Without a
//! browser here, the widths are estimated from the rendered table's text at the page's font
//! sizes (report.html's stylesheet: 14 px cells padded 10 px a side; 13 px padded 5 px on a
//! phone), each text cell at its longest word since text cells wrap (`page.rs`);
//! `scripts/report-screenshots.sh scenarios` measures the same pages in Chromium where it is
//! installed (`SCENARIO_FIXTURE_OUT` keeps them for it).

use std::path::Path;

use lab_report::scenario::capacity_table::table;
use lab_report::scenario::render_html;
use lab_results::scenario::CapacityFile;

const FILES: [&str; 4] = [
    "threads.scenario.json",
    "cap1980.scenario.json",
    "pod-0125/cp22s.scenario.json",
    "pod-0125-2200/search-a/scenario.json",
];

fn committed(name: &str) -> CapacityFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/results/capacity")
        .join(name);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The first table of the page: its headers and rows of cell texts.
fn first_table(html: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let t = &html[html.find("<table").expect("table")..html.find("</table>").expect("end")];
    let cells = |part: &str, tag: &str| -> Vec<String> {
        // `<th>` (not `<thead>`), `<td>` or `<td class=…>`.
        part.split(&format!("<{tag}"))
            .skip(1)
            .filter(|c| c.starts_with(['>', ' ']))
            .map(|c| {
                let text =
                    &c[c.find('>').expect(">") + 1..c.find(&format!("</{tag}>")).expect("</")];
                // Markup inside a cell (the harness-bound mark) is not text.
                let mut plain = String::new();
                let mut in_tag = false;
                for ch in text.chars() {
                    match ch {
                        '<' => in_tag = true,
                        '>' => in_tag = false,
                        c if !in_tag => plain.push(c),
                        _ => {}
                    }
                }
                plain
                    .replace("&gt;", ">")
                    .replace("&lt;", "<")
                    .replace("&amp;", "&")
            })
            .collect()
    };
    let head = &t[..t.find("</thead>").expect("thead")];
    let rows = t[t.find("<tbody>").expect("tbody")..]
        .split("<tr")
        .skip(1)
        .map(|r| cells(r, "td"))
        .collect();
    (cells(head, "th"), rows)
}

/// Each column's width in px at `char_px` a character and `pad` px of padding: a header whole
/// (headers do not wrap here), a text cell at its longest word.
fn widths(head: &[String], rows: &[Vec<String>], char_px: f64, pad: f64) -> Vec<f64> {
    head.iter()
        .enumerate()
        .map(|(c, h)| {
            let longest = rows
                .iter()
                .filter_map(|r| r.get(c))
                .map(|cell| {
                    let words = cell.split_whitespace().map(|w| w.chars().count());
                    if c == 0 {
                        cell.chars().count()
                    } else {
                        words.max().unwrap_or(0)
                    }
                })
                .chain([h.chars().count()])
                .max()
                .unwrap_or(0);
            longest as f64 * char_px + pad
        })
        .collect()
}

#[test]
fn what_stopped_each_step_is_a_word_above_the_fold_and_its_evidence_is_under_the_table() {
    for name in FILES {
        let file = committed(name);
        let t = table(&file);
        let html = render_html(&t);
        if let Some(dir) = std::env::var_os("SCENARIO_FIXTURE_OUT") {
            let dir = std::path::PathBuf::from(dir);
            std::fs::create_dir_all(&dir).expect("dir");
            let page = name
                .trim_end_matches(".json")
                .trim_end_matches("scenario")
                .trim_end_matches(['.', '/'])
                .replace('/', "-");
            std::fs::write(dir.join(format!("capacity-{page}-scenario.html")), &html)
                .expect("written");
        }
        let (head, rows) = first_table(&html);
        let col = head
            .iter()
            .position(|h| h == "stopped by")
            .unwrap_or_else(|| panic!("{name}: no \"stopped by\" above the fold: {head:?}"));
        for row in &rows {
            let cause = row[col].trim_start_matches("⚠ ");
            assert!(cause.chars().count() <= 12, "{name}: a long cell: {cause}");
        }
        // Every step that was stopped has its evidence in the list under the table.
        let evidence = t.evidence.as_ref().expect("evidence");
        let stopped = rows.iter().filter(|r| r[col] != "—").count();
        assert_eq!(evidence.items.len(), stopped, "{name}");
        assert!(
            stopped > 0,
            "{name}: the committed searches missed some step"
        );
        let list = &html[html.find("</table>").expect("table end")..];
        assert!(
            list.matches("<li>").count() >= stopped && list.contains("<ul class=\"evidence\">"),
            "{name}"
        );
        for (step, item) in file
            .capacities
            .iter()
            .flat_map(|c| &c.steps)
            .chain(&file.sweep)
            .filter_map(|s| Some((s, s.cause.as_ref()?)))
            .zip(&evidence.items)
        {
            assert!(item.contains(&step.1.evidence), "{name}: {item}");
            assert!(item.starts_with(&step.0.api), "{name}: {item}");
        }
        // 1,400 px: the page's column is 1,120 px less 64 of padding.
        let desktop: f64 = widths(&head, &rows, 7.7, 20.0).iter().sum();
        assert!(
            desktop <= 1056.0,
            "{name}: {desktop:.0} px at 1,400: {head:?}"
        );
        // 390 px, less 28 of padding: the columns up to "stopped by" without scrolling sideways.
        let phone: f64 = widths(&head, &rows, 7.2, 10.0)[..=col].iter().sum();
        assert!(
            phone <= 362.0,
            "{name}: {phone:.0} px at 390 to \"stopped by\""
        );
    }
}
