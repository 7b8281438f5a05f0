//! The documentation kept true: README.md stays short enough to read in five minutes (lines and
//! words), every
//! relative link in README.md, loadtest/README.md and docs/ leads to a file that exists (a `#anchor`, to a heading of
//! that file under GitHub's slug), and the README's crate table names exactly the workspace's
//! members, each with its path.
//!
//! Markdown is read with pulldown-cmark (links in tables, reference links and code spans are its
//! business, not a regex's) and the workspace's members from the root Cargo.toml with toml_edit.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// A README a newcomer reads in five minutes; the rest belongs in docs/.
const README_MAX_LINES: usize = 250;
/// Five minutes at a reading pace of some 300 words a minute, counted as `wc -w` counts them.
const README_MAX_WORDS: usize = 1600;

fn root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
}

/// `path` as the reader of a failure knows it: from the repository's root.
fn shown(path: &Path) -> String {
    let root = root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// README.md, the lab's loadtest/README.md and every `.md` file under docs/, at any depth.
fn markdown_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "md") {
                out.push(path);
            }
        }
    }
    let mut files = vec![root().join("README.md"), root().join("loadtest/README.md")];
    walk(&root().join("docs"), &mut files);
    files.sort();
    files
}

fn parser(text: &str) -> Parser<'_> {
    Parser::new_ext(text, Options::ENABLE_TABLES)
}

/// Every link and image destination in `text`, with the line it is on.
fn links(text: &str) -> Vec<(String, usize)> {
    parser(text)
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => Some((
                dest_url.into_string(),
                text[..range.start].matches('\n').count() + 1,
            )),
            _ => None,
        })
        .collect()
}

/// The anchors GitHub gives the headings of `text`: the heading's text in lower case, every
/// character but letters, digits, `_`, `-` and spaces dropped, spaces made `-`; a repeated slug
/// gets `-1`, `-2`, … in order.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut slugs = BTreeSet::new();
    let mut heading: Option<String> = None;
    for event in parser(text) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let title = heading.take().expect("a heading ends after it starts");
                let slug: String = title
                    .to_lowercase()
                    .chars()
                    .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '))
                    .map(|c| if c == ' ' { '-' } else { c })
                    .collect();
                let mut unique = slug.clone();
                let mut n = 0;
                while slugs.contains(&unique) {
                    n += 1;
                    unique = format!("{slug}-{n}");
                }
                slugs.insert(unique);
            }
            _ => {}
        }
    }
    slugs
}

/// What is wrong with a relative link from `file` to `dest`, if anything.
fn broken(file: &Path, dest: &str) -> Option<String> {
    let (path, anchor) = match dest.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (dest, None),
    };
    let target = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().expect("a file has a folder").join(path)
    };
    if !target.exists() {
        return Some(format!("{} does not exist", shown(&target)));
    }
    let anchor = anchor?;
    if target.extension().is_none_or(|x| x != "md") {
        return Some(format!(
            "#{anchor} points into {}, not a markdown file",
            shown(&target)
        ));
    }
    let found = anchors(&read(&target));
    (!found.contains(anchor)).then(|| {
        format!(
            "{} has no heading #{anchor} (its headings: {found:?})",
            shown(&target)
        )
    })
}

/// The relative links of `file`, each with what is wrong with it.
fn broken_links(file: &Path) -> Vec<String> {
    links(&read(file))
        .into_iter()
        .filter(|(dest, _)| !dest.contains("://") && !dest.starts_with("mailto:"))
        .filter_map(|(dest, line)| {
            broken(file, &dest).map(|why| format!("{}:{line}: ({dest}): {why}", shown(file)))
        })
        .collect()
}

/// The rows of the README's crate table (header `crate | path | …`): (package name, path).
fn crate_table(readme: &str) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    let (mut in_header, mut in_table, mut row, mut cell) = (false, false, Vec::new(), None);
    for event in parser(readme) {
        match event {
            Event::Start(Tag::Table(_)) => rows.clear(),
            Event::Start(Tag::TableHead) => (in_header, row) = (true, Vec::new()),
            Event::End(TagEnd::TableHead) => {
                in_header = false;
                in_table = row.first().is_some_and(|c: &String| c == "crate")
                    && row.get(1).is_some_and(|c| c == "path");
            }
            Event::Start(Tag::TableRow) => row = Vec::new(),
            Event::Start(Tag::TableCell) => cell = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(c) = cell.as_mut() {
                    c.push_str(&t);
                }
            }
            Event::End(TagEnd::TableCell) => row.push(cell.take().unwrap_or_default()),
            Event::End(TagEnd::TableRow) if in_table && !in_header => {
                rows.push((row[0].clone(), row[1].clone()));
            }
            Event::End(TagEnd::Table) if in_table => return rows,
            _ => {}
        }
    }
    panic!("README.md has no table whose header begins `crate | path`");
}

/// The workspace's members from the root Cargo.toml: (package name, path).
fn workspace_members() -> Vec<(String, String)> {
    let manifest: toml_edit::DocumentMut = read(&root().join("Cargo.toml"))
        .parse()
        .expect("the root Cargo.toml parses");
    manifest["workspace"]["members"]
        .as_array()
        .expect("workspace.members is an array")
        .iter()
        .map(|member| {
            let path = member.as_str().expect("a member is a path").to_owned();
            let package: toml_edit::DocumentMut = read(&root().join(&path).join("Cargo.toml"))
                .parse()
                .expect("a member's Cargo.toml parses");
            let name = package["package"]["name"].as_str().expect("package.name");
            (name.to_owned(), path)
        })
        .collect()
}

#[test]
fn the_readme_reads_in_five_minutes() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: move detail to docs/ and link it"
    );
    let words = words(&readme);
    assert!(
        words <= README_MAX_WORDS,
        "README.md has {words} words, more than {README_MAX_WORDS}: move detail to docs/ and link it"
    );
}

/// Words as `wc -w` counts them: runs of characters between whitespace.
fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

#[test]
fn words_are_counted_as_wc_counts_them() {
    assert_eq!(
        words("# A title\n\nTwo  words, `code` and [a link](x.md).\n\t- one\n"),
        11
    );
    assert_eq!(words(""), 0);
}

#[test]
fn every_relative_link_in_the_readmes_and_docs_resolves() {
    let files = markdown_files();
    assert!(files.len() > 1, "docs/ holds markdown files");
    let broken: Vec<String> = files.iter().flat_map(|f| broken_links(f)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_crate_table_is_the_workspace() {
    let table: BTreeSet<_> = crate_table(&read(&root().join("README.md")))
        .into_iter()
        .collect();
    let members: BTreeSet<_> = workspace_members().into_iter().collect();
    assert!(!members.is_empty(), "the workspace has members");
    let missing: Vec<_> = members.difference(&table).collect();
    let extra: Vec<_> = table.difference(&members).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "README's crate table against Cargo.toml's members (package, path): \
         missing {missing:?}, not a member {extra:?}"
    );
}

#[test]
fn a_heading_anchor_is_github_s_slug() {
    let text =
        "# The flow (both APIs, same order)\n## `POST /orders`\n## Money: safe\n## Money: safe\n";
    let expected = [
        "the-flow-both-apis-same-order",
        "post-orders",
        "money-safe",
        "money-safe-1",
    ];
    assert_eq!(
        anchors(text),
        expected.into_iter().map(String::from).collect()
    );
}
