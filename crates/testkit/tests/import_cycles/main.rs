//! No module of a workspace crate imports, directly or through others, a module that imports it.
//! A circle makes two files one unit in all but name: neither can be read, tested or moved alone,
//! and the usual cause is a type that lives in the wrong file. The fix is to move that one thing
//! down into a module both sides can import (`AppState` into `state.rs`).
//!
//! The graph is read from the sources, not from the compiler: one node per file (`foo/mod.rs` and
//! `foo.rs` are `foo`, `foo/bar.rs` is `foo::bar`, `lib.rs` the crate root). A module depends on
//! the modules it declares and on every module a path in it names through `crate::`, `super::`,
//! `self::` or one of its child modules, in a `use` or in the code. A module naming one of the
//! modules around it (`super::Variant` in `scenario/batching.rs`) is part of that module, not an
//! import of it. A `pub use` is a re-export, not an import: `crate::Name` re-exported by `lib.rs`
//! from `foo.rs` is an edge to `foo`. Test code is left out (`#[cfg(test)]` items and the files
//! they include): a test module importing its parent's siblings is no circle of the product's.
//! Every strongly connected component of more than one module is a circle; the test lists each
//! with the lines that close it.

use std::path::{Path, PathBuf};

mod graph;
mod source;

use graph::{Crate, Edge};
use source::members;

/// The circles still standing, each to go by moving the one thing named (the test fails when
/// one of them is gone, so the list only shrinks): crate's `src`, then its modules as listed, then
/// the thing to move. Empty: no module of the workspace is imported in a circle.
const STILL_STANDING: &[(&str, &str, &str)] = &[];

/// Every circle of the crates under `src` directories: the crate's `src` relative to `root`, its
/// modules (`(root)` for the crate root) joined by ` ↔ `, and the imports that close it.
fn circles(root: &Path, srcs: &[PathBuf]) -> Vec<(String, String, Vec<Edge>)> {
    let mut out = Vec::new();
    for src in srcs {
        let name = src.strip_prefix(root).unwrap_or(src).display().to_string();
        for (members, edges) in Crate::read(src).circles() {
            let shown: Vec<&str> = members
                .iter()
                .map(|m| if m.is_empty() { "(root)" } else { m.as_str() })
                .collect();
            out.push((name.clone(), shown.join(" ↔ "), edges));
        }
    }
    out
}

#[test]
fn no_module_of_a_workspace_crate_is_imported_in_a_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().expect("the workspace root");
    let srcs: Vec<PathBuf> = members(&root).into_iter().map(|m| m.join("src")).collect();
    assert!(srcs.len() >= 10, "the workspace's members: {srcs:?}");
    let found = circles(&root, &srcs);
    let mut new = String::new();
    for (krate, members, edges) in &found {
        if STILL_STANDING
            .iter()
            .any(|(k, m, _)| k == krate && m == members)
        {
            continue;
        }
        new.push_str(&format!("{krate}: {members}\n"));
        for e in edges {
            new.push_str(&format!("    {} → {}   {}\n", e.from, e.to, e.at));
        }
    }
    let gone: Vec<String> = STILL_STANDING
        .iter()
        .filter(|(k, m, _)| !found.iter().any(|(fk, fm, _)| fk == k && fm == m))
        .map(|(k, m, _)| format!("{k}: {m}"))
        .collect();
    assert!(
        new.is_empty(),
        "modules imported in a circle (move the shared thing down into a module both sides \
         import):\n{new}"
    );
    assert!(
        gone.is_empty(),
        "circles listed in STILL_STANDING that are gone (take them off the list): {gone:#?}"
    );
}

/// The check itself: a crate written to a temporary directory with one circle, made through a
/// re-export and a `super::` path, beside imports that make none (a comment, a string, a test
/// module, a test-only file, a one-way `use`).
#[test]
fn the_check_finds_a_circle_through_a_reexport_and_nothing_else() {
    let dir = std::env::temp_dir().join(format!("import-cycles-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("c")).unwrap();
    let files = [
        ("lib.rs", "mod a;\nmod c;\npub use a::Thing as Renamed;\n"),
        (
            "a.rs",
            "pub struct Thing;\npub fn f() -> crate::c::b::B { crate::c::b::B }\n",
        ),
        ("c/mod.rs", "pub mod b;\npub mod d;\n"),
        (
            "c/b.rs",
            "// crate::c::d is only named in a comment\npub struct B;\n\
             pub fn g(_: crate::Renamed) { let _ = \"crate::c::d\"; }\n\
             #[cfg(test)]\n#[path = \"b_tests.rs\"]\nmod tests;\n",
        ),
        ("c/b_tests.rs", "use crate::c::d::D;\n"),
        (
            "c/d.rs",
            "use super::b::B;\npub struct D(B);\n#[cfg(test)]\nmod tests { use crate::c::b::g; }\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(src.join(name), text).unwrap();
    }
    let found = Crate::read(&src).circles();
    std::fs::remove_dir_all(&dir).unwrap();
    let members: Vec<Vec<String>> = found.into_iter().map(|(m, _)| m).collect();
    assert_eq!(members, vec![vec!["a".to_string(), "c::b".to_string()]]);
}
