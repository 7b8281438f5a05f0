//! One build: every set of packages the project builds (`-p loadtest` under `cargo run`, the
//! services the lab then builds, the test command's and CI's builds) resolves each dependency with
//! the features the whole workspace's test build gives it. Cargo unifies features only across the
//! packages of one invocation, so without this the lab's `cargo build -p blocking-api -p
//! reactive-api -p mock-deps` after `cargo run -p loadtest` compiled the shared dependencies a
//! second time with other features (and measured other binaries than CI's cost gate). The
//! `workspace-hack` crate, which every member depends on, holds the union; when this test fails,
//! `cargo hakari generate` (cargo-hakari) writes it again (docs/benchmarks.md, "One build").
//!
//! Read with `cargo tree` (normal and build edges: what a build of those packages compiles), each
//! package's features per appearance; a package built for the host (a proc macro's dependency)
//! and for the target may have two sets, each of which must be one the workspace build has too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// The package sets the project builds: the lab (`cargo run -p loadtest`), the services it builds
/// before a run (both APIs or one, with mock-deps), scripts/test.sh's binaries, CI's cost gate
/// and the Dockerfile's four.
const BUILDS: &[&[&str]] = &[
    &["loadtest"],
    &["blocking-api", "reactive-api", "mock-deps"],
    &["blocking-api", "mock-deps"],
    &["reactive-api", "mock-deps"],
    &["blocking-api", "reactive-api", "mock-deps", "testbed"],
    &["blocking-api", "reactive-api", "mock-deps", "loadtest"],
];

/// Each third-party package (`name vX.Y.Z`) with the feature lists it is compiled with.
type Features = BTreeMap<String, BTreeSet<String>>;

fn features(args: &[&str]) -> Features {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO"))
        .current_dir(&root)
        .args([
            "tree", "--locked", "--prefix", "none", "--format", "{p}|{f}",
        ])
        .args(args)
        .output()
        .expect("running cargo tree");
    assert!(
        out.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut found = Features::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let Some((package, features)) = line.split_once('|') else {
            continue;
        };
        // The workspace's own packages carry a path (`name v0.1.0 (/…)`); a repeat ends in `(*)`.
        let features = features.trim_end_matches(" (*)").trim();
        if package.contains(" (/") {
            continue;
        }
        found
            .entry(package.trim().to_owned())
            .or_default()
            .insert(features.to_owned());
    }
    found
}

#[test]
fn every_package_set_the_project_builds_compiles_dependencies_as_the_workspace_does() {
    // The test build of the whole workspace: what scripts/test.sh compiles.
    let workspace = features(&["--workspace", "--edges", "normal,build,dev"]);
    let mut differ = Vec::new();
    for packages in BUILDS {
        let mut args = vec!["--edges", "normal,build"];
        for p in *packages {
            args.extend(["-p", p]);
        }
        for (package, sets) in features(&args) {
            let known = workspace.get(&package).cloned().unwrap_or_default();
            for set in sets.difference(&known) {
                differ.push(format!(
                    "-p {}: {package} with [{set}], the workspace with {known:?}",
                    packages.join(" -p ")
                ));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "features differ from the workspace build (run `cargo hakari generate`, and for a new \
         member `cargo hakari manage-deps`):\n{}",
        differ.join("\n")
    );
}
