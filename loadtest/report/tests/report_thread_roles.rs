//! CPU per order by thread role, rendered from the synthetic fixtures (see `fixtures/mod.rs`):
//! the summary's table and the page's stacked bars show the numbers the results give, divided by
//! the plateau's orders; runs without a split show neither.

mod fixtures;

use lab_report::{render_html, render_markdown};
use lab_results::{RunResults, ThreadRole};

/// `role`'s CPU-ms per order in `run`, as the tables write it.
fn cpu_ms(run: &RunResults, role: ThreadRole) -> String {
    let r = run.cpu_by_role.as_ref().unwrap().role(role).unwrap();
    let orders = run.plateau.as_ref().unwrap().ok as f64;
    format!("{:.3}", 1000.0 * (r.user_s + r.system_s) / orders)
}

#[test]
fn the_summary_has_a_table_per_api_with_each_role_per_order() {
    let runs = fixtures::pair();
    let (blocking, reactive) = (&runs[0], &runs[1]);
    let md = render_markdown(&runs);
    let section = &md[md
        .find("### CPU per order by thread role (plateau)")
        .expect("the section")..];
    let orders = blocking.plateau.as_ref().unwrap().ok as f64;
    // 200 request threads, one of which exited: 1.64 CPU-s and 52,000 voluntary switches.
    let request = format!(
        "| request threads | 200 (1 exited) | {} | {:.3} | {:.3} |",
        cpu_ms(blocking, ThreadRole::RequestThreads),
        1000.0 * 1.20 / orders,
        1000.0 * 0.44 / orders
    );
    assert!(section.contains(&request), "{request} in\n{section}");
    let switches = format!("| {:.2} | {:.2} |", 52_000.0 / orders, 1_200.0 / orders);
    let line = section
        .lines()
        .find(|l| l.starts_with("| request threads"))
        .unwrap();
    assert!(line.ends_with(&switches), "{line}");
    // Its share of the 3.93 CPU-s the threads and the unseen remainder add up to.
    assert!(
        line.contains(&format!("| {:.1} % |", 100.0 * 1.64 / 3.93)),
        "{line}"
    );
    let unseen = section
        .lines()
        .find(|l| l.starts_with("| exited/unseen"))
        .unwrap();
    assert!(unseen.starts_with("| exited/unseen | — | "), "{unseen}");
    assert!(unseen.ends_with("| — | — |"), "{unseen}");
    let http = format!(
        "| HTTP client | 1 | {} |",
        cpu_ms(blocking, ThreadRole::HttpClient)
    );
    assert!(section.contains(&http), "{http}");
    // reactive-api's table: its event loop, and no role it does not have.
    let theirs = &section[section.find("**reactive-api**").unwrap()..];
    let event_loop = format!(
        "| event loop | 1 | {} |",
        cpu_ms(reactive, ThreadRole::EventLoop)
    );
    assert!(theirs.contains(&event_loop), "{event_loop} in\n{theirs}");
    assert!(!theirs.contains("request threads") && !theirs.contains("HTTP client"));
    // The total row is the summary's CPU per order, split.
    let total = 1000.0 * 2.01 / reactive.plateau.as_ref().unwrap().ok as f64;
    assert!(
        theirs.contains(&format!("| **all** | 3 | {total:.3} |")),
        "{theirs}"
    );
}

#[test]
fn the_page_draws_a_stacked_bar_per_api_with_the_same_numbers() {
    let runs = fixtures::pair();
    let html = render_html(&runs);
    fixtures::assert_offline(&html);
    let section = fixtures::section(&html, "cpu-by-role");
    let start = section
        .find("<figure id=\"fig-cpu-by-role\"")
        .expect("the figure");
    let fig = &section[start..start + section[start..].find("</figure>").unwrap()];
    for (run, role) in [
        (&runs[0], ThreadRole::RequestThreads),
        (&runs[0], ThreadRole::HttpClient),
        (&runs[0], ThreadRole::Unseen),
        (&runs[1], ThreadRole::EventLoop),
    ] {
        let title = format!("<title>{}: {} ms</title>", role.name(), cpu_ms(run, role));
        assert!(fig.contains(&title), "{title} in {fig}");
    }
    assert!(fig.contains(">blocking-api</text>") && fig.contains(">reactive-api</text>"));
    // Each bar's total is written beside it.
    let total = 1000.0 * 3.93 / runs[0].plateau.as_ref().unwrap().ok as f64;
    assert!(fig.contains(&format!(">{total:.3} ms</text>")), "{fig}");
    assert!(html.contains("href=\"#cpu-by-role\""));
}

#[test]
fn runs_without_a_split_show_no_section_and_no_link() {
    let mut runs = fixtures::pair();
    for r in &mut runs {
        r.cpu_by_role = None;
    }
    let (html, md) = (render_html(&runs), render_markdown(&runs));
    assert!(!html.contains("cpu-by-role"));
    assert!(!md.contains("by thread role"));
}
