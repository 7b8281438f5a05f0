//! The product depends on nothing of the lab: no manifest of the product (the workspace's members
//! outside `loadtest/`: the three services and `crates/*`) names a crate under `loadtest/` in any
//! of its dependency tables. The lab measures the product; a product crate built on the lab
//! makes the lab part of what ships, and the lab can no longer change without the product's
//! tests. What both need (a throw-away PostgreSQL and NATS, a freezable TCP proxy) belongs in a
//! product crate the lab uses, never the other way round.
//!
//! Read from the manifests with toml_edit: a dependency is the lab's when its `path` is under
//! `loadtest/`, or when it is `workspace = true` for a workspace dependency whose path is.

use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item, Table};

fn root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize()
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
}

fn manifest(path: &Path) -> DocumentMut {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn is_lab(path: &str) -> bool {
    Path::new(path).starts_with("loadtest")
}

/// Every dependency table of a manifest: `[dependencies]`, `[dev-dependencies]`,
/// `[build-dependencies]`, and the same under each `[target.'…']`.
fn dependency_tables(doc: &DocumentMut) -> Vec<&Table> {
    const KINDS: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];
    let mut tables: Vec<&Table> = KINDS
        .iter()
        .filter_map(|k| doc.get(k).and_then(Item::as_table))
        .collect();
    if let Some(targets) = doc.get("target").and_then(Item::as_table) {
        for (_, target) in targets.iter() {
            tables.extend(
                KINDS
                    .iter()
                    .filter_map(|k| target.get(k).and_then(Item::as_table)),
            );
        }
    }
    tables
}

/// The lab crates the manifest `doc` of the member at `member` (from the root) depends on;
/// `workspace` is the root manifest, for `workspace = true` dependencies.
fn lab_dependencies(doc: &DocumentMut, member: &str, workspace: &DocumentMut) -> Vec<String> {
    let shared = workspace
        .get("workspace")
        .and_then(|w| w.get("dependencies"));
    let mut found = Vec::new();
    for table in dependency_tables(doc) {
        for (name, dep) in table.iter() {
            let path = if dep.get("workspace").and_then(Item::as_bool) == Some(true) {
                shared
                    .and_then(|s| s.get(name))
                    .and_then(|d| d.get("path"))
                    .and_then(Item::as_str)
                    .map(str::to_owned)
            } else {
                dep.get("path")
                    .and_then(Item::as_str)
                    .map(|p| normalised(&Path::new(member).join(p)))
            };
            if path.as_deref().is_some_and(is_lab) {
                found.push(name.to_owned());
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// `path` with its `..` resolved against the parts before them (no file system involved).
fn normalised(path: &Path) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.iter().filter_map(|p| p.to_str()) {
        match part {
            ".." => {
                parts.pop();
            }
            "." => {}
            other => parts.push(other),
        }
    }
    parts.join("/")
}

/// The product's members (every member not under `loadtest/`), as written in the root manifest.
fn product_members(workspace: &DocumentMut) -> Vec<String> {
    workspace["workspace"]["members"]
        .as_array()
        .expect("workspace.members is an array")
        .iter()
        .map(|m| m.as_str().expect("a member is a path").to_owned())
        .filter(|m| !is_lab(m))
        .collect()
}

#[test]
fn no_product_manifest_names_a_lab_crate() {
    let root = root();
    let workspace = manifest(&root.join("Cargo.toml"));
    let members = product_members(&workspace);
    assert!(
        members.len() >= 6,
        "the product's members were read: {members:?}"
    );
    let mut found = Vec::new();
    for member in &members {
        let doc = manifest(&root.join(member).join("Cargo.toml"));
        for lab in lab_dependencies(&doc, member, &workspace) {
            found.push(format!("{member}/Cargo.toml depends on {lab} (loadtest/)"));
        }
    }
    assert!(
        found.is_empty(),
        "the product depends on the lab; move what it uses into a product crate (crates/testbed \
         holds what the product's tests and the lab share):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_lab_dependency_is_seen_by_path_and_through_the_workspace() {
    let workspace: DocumentMut = "[workspace]\nmembers = [\"crates/a\", \"loadtest/kit\"]\n\
        [workspace.dependencies]\nkit = { path = \"loadtest/kit\" }\nserde = \"1\"\n"
        .parse()
        .unwrap();
    let member: DocumentMut = "[dependencies]\nkit.workspace = true\nserde.workspace = true\n\
        [target.'cfg(unix)'.dev-dependencies]\nproxy = { path = \"../../loadtest/proxy\" }\n\
        near = { path = \"../near\" }\n"
        .parse()
        .unwrap();
    assert_eq!(product_members(&workspace), ["crates/a"]);
    assert_eq!(
        lab_dependencies(&member, "crates/a", &workspace),
        ["kit", "proxy"]
    );
}
