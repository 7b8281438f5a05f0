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

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One file of a crate, its code with comments removed and string literals defused.
struct Module {
    file: PathBuf,
    text: String,
    code: String,
}

/// The workspace's members, read from the root `Cargo.toml`.
fn members(root: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(root.join("Cargo.toml")).expect("root Cargo.toml");
    let list = text
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("a [workspace] members list")
        .0;
    list.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter_map(|l| l.strip_prefix('"'))
        .filter_map(|l| l.split('"').next())
        .map(|m| root.join(m))
        .collect()
}

/// The code without comments, string and char literals blanked (only a `#[path = "…"]` keeps its
/// text, less anything that could be read as code). Newlines are kept, so offsets map to lines.
fn clean(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let defuse = |ch: char| if "{}();:/\"'".contains(ch) { ' ' } else { ch };
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            i += 2;
            while i < c.len() && !(c[i] == '*' && c.get(i + 1) == Some(&'/')) {
                out.push(if c[i] == '\n' { '\n' } else { ' ' });
                i += 1;
            }
            i += 2;
        } else if c[i] == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&c, i) {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            out.push_str("r\"");
            j += 1;
            while j < c.len()
                && !(c[j] == '"' && (0..hashes).all(|h| c.get(j + 1 + h) == Some(&'#')))
            {
                out.push(if c[j] == '\n' { '\n' } else { ' ' });
                j += 1;
            }
            out.push('"');
            i = j + 1 + hashes;
        } else if c[i] == '"' {
            // Only `#[path = "…"]` keeps its text.
            let keep = out.trim_end().ends_with("path =") || out.trim_end().ends_with("path=");
            out.push('"');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(if c[i] == '\n' {
                        '\n'
                    } else if keep {
                        defuse(c[i])
                    } else {
                        ' '
                    });
                }
                i += 1;
            }
            out.push('"');
            i += 1;
        } else if c[i] == '\'' && next == Some('\\') {
            // An escaped char literal: '\n', '\'', '\u{..}'.
            out.push(' ');
            i += 2;
            while i < c.len() && c[i] != '\'' {
                out.push(' ');
                i += 1;
            }
            i += 1;
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            out.push_str("   ");
            i += 3;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn ident_before(c: &[char], i: usize) -> bool {
    i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_')
}

/// A byte of an identifier (the paths this check follows are ASCII).
fn ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The end (exclusive) of the item starting at `from`: its `;` or its matching `}`.
fn item_end(code: &[u8], from: usize) -> usize {
    let mut depth = 0usize;
    for (i, &b) in code.iter().enumerate().skip(from) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            b';' if depth == 0 => return i + 1,
            _ => {}
        }
    }
    code.len()
}

/// Blanks every `#[cfg(test)]` item (newlines kept) and returns the files such items include:
/// `#[path = "…"]` relative to the file's directory, `mod name;` relative to its children's.
fn strip_tests(code: &mut String, dir: &Path, child_dir: &Path) -> Vec<PathBuf> {
    let mut included = Vec::new();
    while let Some(at) = code.find("#[cfg(test)]") {
        let end = item_end(code.as_bytes(), at);
        let item = code[at..end].to_string();
        if let Some(path) = item
            .split("#[path = \"")
            .nth(1)
            .and_then(|p| p.split('"').next())
        {
            included.push(dir.join(path));
        } else if let Some(name) = item
            .split_whitespace()
            .skip_while(|w| *w != "mod")
            .nth(1)
            .and_then(|n| n.strip_suffix(';'))
        {
            included.push(child_dir.join(format!("{name}.rs")));
            included.push(child_dir.join(name).join("mod.rs"));
        }
        let blank: String = item
            .chars()
            .map(|ch| if ch == '\n' { '\n' } else { ' ' })
            .collect();
        code.replace_range(at..end, &blank);
    }
    included
}

/// A crate's modules by path (`""` for the root), test-only files left out.
fn modules(src: &Path) -> BTreeMap<String, Module> {
    let root = if src.join("lib.rs").exists() {
        "lib.rs"
    } else {
        "main.rs"
    };
    let mut files = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                // src/bin/ holds other crates (binaries), each its own root.
                if path != src.join("bin") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let mut test_only = BTreeSet::new();
    let mut found = BTreeMap::new();
    for file in files {
        let rel = file
            .strip_prefix(src)
            .expect("under src")
            .to_string_lossy()
            .to_string();
        if (rel == "lib.rs" || rel == "main.rs") && rel != root {
            continue;
        }
        let is_dir_owner = rel == root || rel.ends_with("mod.rs");
        let name = if rel == root {
            String::new()
        } else {
            let stem = rel.strip_suffix(".rs").expect(".rs");
            stem.strip_suffix("/mod").unwrap_or(stem).replace('/', "::")
        };
        let text = std::fs::read_to_string(&file).expect("a source file");
        let mut code = clean(&text);
        let dir = file.parent().expect("a directory").to_path_buf();
        // A non-mod.rs file's children live in a directory named after it.
        let child_dir = if is_dir_owner {
            dir.clone()
        } else {
            file.with_extension("")
        };
        test_only.extend(strip_tests(&mut code, &dir, &child_dir));
        found.insert(name, Module { file, text, code });
    }
    found.retain(|_, m| !test_only.contains(&m.file));
    found
}

/// One path a `use` statement brings in.
struct UsePath {
    at: usize,
    end: usize,
    /// A re-export (`pub use`, `pub(crate) use`): an alias, not an import.
    public: bool,
    segments: Vec<String>,
    /// The name it is known by where it is used (`as` or its last segment).
    name: String,
}

/// The `use` statements of a module's code, each flattened into its paths.
fn use_paths(code: &str) -> Vec<UsePath> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(found) = code[from..].find("use ") {
        let at = from + found;
        from = at + 4;
        if at > 0 && ident_byte(bytes[at - 1]) {
            continue;
        }
        let before = code[..at].trim_end();
        let public = before.ends_with("pub")
            || (before.ends_with(')') && {
                let open = before.rfind('(').unwrap_or(0);
                before[..open].trim_end().ends_with("pub")
            });
        let Some(end) = code[at..].find(';') else {
            break;
        };
        // Whitespace goes, except around `as`, which becomes `@`.
        let spaced = code[at + 4..at + end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let tree: String = spaced.replace(" as ", "@").split_whitespace().collect();
        let mut paths = Vec::new();
        flatten(&tree, Vec::new(), &mut paths);
        out.extend(paths.into_iter().map(|(segments, name)| UsePath {
            at,
            end: at + end,
            public,
            segments,
            name,
        }));
        from = at + end;
    }
    out
}

/// Expands a use tree (`a::{b, c::{d@e}}`, `@` for `as`) into its paths with the name each is
/// known by; `self` inside braces names the prefix.
fn flatten(tree: &str, prefix: Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let split = |s: &str| -> Vec<String> {
        s.split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    if let Some(open) = tree.find('{') {
        let mut base = prefix;
        base.extend(split(&tree[..open]));
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let (mut depth, mut start) = (0, 0);
        let mut parts = Vec::new();
        for (i, ch) in inner.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&inner[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&inner[start..]);
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            flatten(part, base.clone(), out);
        }
    } else {
        let (path, alias) = tree.split_once('@').unwrap_or((tree, ""));
        let mut segments = prefix;
        segments.extend(split(path));
        if segments.last().is_some_and(|s| s == "self") {
            segments.pop();
        }
        let name = if alias.is_empty() {
            segments.last().cloned().unwrap_or_default()
        } else {
            alias.to_string()
        };
        out.push((segments, name));
    }
}

fn join(module: &str, segment: &str) -> String {
    if module.is_empty() {
        segment.to_string()
    } else {
        format!("{module}::{segment}")
    }
}

/// Whether `outer` is `inner` or one of the modules around it (the root contains every module).
fn contains(outer: &str, inner: &str) -> bool {
    outer.is_empty() || inner == outer || inner.starts_with(&format!("{outer}::"))
}

fn parent(module: &str) -> &str {
    module.rsplit_once("::").map_or("", |(p, _)| p)
}

/// A crate read from its `src/`: its modules and what each re-exports.
struct Crate {
    modules: BTreeMap<String, Module>,
    /// (module, name) → the absolute path of what `pub use` makes that name stand for.
    reexports: BTreeMap<(String, String), Vec<String>>,
}

/// An import of one module by another, with where it is written.
struct Edge {
    from: String,
    to: String,
    at: String,
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut krate = Crate {
            modules: modules(src),
            reexports: BTreeMap::new(),
        };
        let mut reexports = BTreeMap::new();
        for (name, module) in &krate.modules {
            for used in use_paths(&module.code).into_iter().filter(|u| u.public) {
                if let Some((base, rest)) = krate.anchor(name, &used.segments) {
                    let mut absolute: Vec<String> = base
                        .split("::")
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect();
                    absolute.extend(rest.iter().cloned());
                    reexports.insert((name.clone(), used.name), absolute);
                }
            }
        }
        krate.reexports = reexports;
        krate
    }

    /// Where a path written in `module` starts: `crate::`, `super::`, `self::` or a child module
    /// of `module`; `None` for another crate or a local name.
    fn anchor<'p>(&self, module: &str, path: &'p [String]) -> Option<(String, &'p [String])> {
        let first = path.first()?;
        match first.as_str() {
            "crate" => Some((String::new(), &path[1..])),
            "self" => Some((module.to_string(), &path[1..])),
            "super" => {
                let mut base = module;
                let mut rest = path;
                while rest.first().is_some_and(|s| s == "super") {
                    base = parent(base);
                    rest = &rest[1..];
                }
                Some((base.to_string(), rest))
            }
            child if self.modules.contains_key(&join(module, child)) => {
                Some((module.to_string(), path))
            }
            _ => None,
        }
    }

    /// The module a path ends in: down through the modules it names; a name some module
    /// re-exports continues from the re-export's own path.
    fn resolve(&self, base: String, rest: &[String], depth: usize) -> String {
        let mut current = base;
        for (i, segment) in rest.iter().enumerate() {
            let next = join(&current, segment);
            if self.modules.contains_key(&next) {
                current = next;
                continue;
            }
            if depth < 8
                && let Some(target) = self.reexports.get(&(current.clone(), segment.clone()))
            {
                let mut full = target.clone();
                full.extend(rest[i + 1..].iter().cloned());
                return self.resolve(String::new(), &full, depth + 1);
            }
            break;
        }
        current
    }

    /// Every import of one module by another: `use` statements (re-exports aside) and paths
    /// written in the code.
    fn edges(&self) -> Vec<Edge> {
        let mut edges = Vec::new();
        for (name, module) in &self.modules {
            if !name.is_empty() {
                let owner = parent(name);
                edges.push(Edge {
                    from: owner.to_string(),
                    to: name.clone(),
                    at: format!("(declares {name})"),
                });
            }
            let line_at = |at: usize| {
                let line = module.code[..at].matches('\n').count();
                let text = module.text.lines().nth(line).unwrap_or("").trim();
                format!("{}:{}: {text}", module.file.display(), line + 1)
            };
            let mut edge = |segments: &[String], at: usize| {
                if let Some((base, rest)) = self.anchor(name, segments) {
                    let to = self.resolve(base, rest, 0);
                    if !contains(&to, name) {
                        edges.push(Edge {
                            from: name.clone(),
                            to,
                            at: line_at(at),
                        });
                    }
                }
            };
            let uses = use_paths(&module.code);
            for used in uses.iter().filter(|u| !u.public) {
                edge(&used.segments, used.at);
            }
            // Paths in the code: an identifier followed by `::` that does not continue a path.
            let code = module.code.as_bytes();
            let mut i = 0;
            while i < code.len() {
                let starts = ident_byte(code[i])
                    && (i == 0 || !(ident_byte(code[i - 1]) || code[i - 1] == b':'));
                if !starts || uses.iter().any(|u| (u.at..u.end).contains(&i)) {
                    i += 1;
                    continue;
                }
                let mut j = i;
                let mut segments = Vec::new();
                loop {
                    let s = j;
                    while j < code.len() && ident_byte(code[j]) {
                        j += 1;
                    }
                    if s == j {
                        break;
                    }
                    segments.push(module.code[s..j].to_string());
                    if code[j..].starts_with(b"::") {
                        j += 2;
                    } else {
                        break;
                    }
                }
                if segments.len() > 1 {
                    edge(&segments, i);
                }
                i = j.max(i + 1);
            }
        }
        edges
    }

    /// The circles: strongly connected components of more than one module (Tarjan), each with
    /// the imports inside it.
    fn circles(&self) -> Vec<(Vec<String>, Vec<Edge>)> {
        let edges = self.edges();
        let names: Vec<&String> = self.modules.keys().collect();
        let index_of: BTreeMap<&String, usize> =
            names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let mut next = vec![BTreeSet::new(); names.len()];
        for e in &edges {
            if let (Some(&a), Some(&b)) = (index_of.get(&e.from), index_of.get(&e.to)) {
                next[a].insert(b);
            }
        }
        let mut tarjan = Tarjan {
            next: &next,
            index: vec![None; names.len()],
            low: vec![0; names.len()],
            stack: Vec::new(),
            on_stack: vec![false; names.len()],
            counter: 0,
            components: Vec::new(),
        };
        for v in 0..names.len() {
            if tarjan.index[v].is_none() {
                tarjan.visit(v);
            }
        }
        tarjan
            .components
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|c| {
                let mut members: Vec<String> = c.iter().map(|&v| names[v].clone()).collect();
                members.sort();
                let inside: Vec<Edge> = edges
                    .iter()
                    .filter(|e| members.contains(&e.from) && members.contains(&e.to))
                    .map(|e| Edge {
                        from: e.from.clone(),
                        to: e.to.clone(),
                        at: e.at.clone(),
                    })
                    .collect();
                (members, inside)
            })
            .collect()
    }
}

struct Tarjan<'g> {
    next: &'g [BTreeSet<usize>],
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: Vec<bool>,
    counter: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.counter);
        self.low[v] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in self.next[v].iter() {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(i) if self.on_stack[w] => self.low[v] = self.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

/// The circles still standing, each to go by moving the one thing named (the test fails when
/// one of them is gone, so the list only shrinks): crate's `src`, then its modules as listed.
const STILL_STANDING: &[(&str, &str, &str)] = &[
    ("blocking-api/src", "events ↔ state", "found by this check"),
    ("reactive-api/src", "events ↔ state", "found by this check"),
    (
        "crates/order-core/src",
        "request_hash ↔ settings",
        "CommonSettings::validate checks the key through RequestHashKey::from_settings, which \
         reads CommonSettings: the key's choice belongs in settings.rs, held by another change",
    ),
    (
        "loadtest/cli/src",
        "scenario::page ↔ scenario::render",
        "found by this check",
    ),
    (
        "loadtest/cli/src",
        "scenario::findings ↔ scenario::findings_charts",
        "found by this check",
    ),
    (
        "loadtest/report/src",
        "chart_errors ↔ charts",
        "found by this check",
    ),
    (
        "loadtest/report/src",
        "slo_verdict ↔ trust",
        "found by this check",
    ),
];

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
