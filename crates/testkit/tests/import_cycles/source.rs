//! Reading a crate's sources for the import check: files to modules, code without comments,
//! strings or test items, and the paths its `use` statements bring in.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One file of a crate, its code with comments removed and string literals defused.
pub struct Module {
    pub file: PathBuf,
    pub text: String,
    pub code: String,
}

/// The workspace's members, read from the root `Cargo.toml`.
pub fn members(root: &Path) -> Vec<PathBuf> {
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
pub fn clean(text: &str) -> String {
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

pub fn ident_before(c: &[char], i: usize) -> bool {
    i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_')
}

/// A byte of an identifier (the paths this check follows are ASCII).
pub fn ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The end (exclusive) of the item starting at `from`: its `;` or its matching `}`.
pub fn item_end(code: &[u8], from: usize) -> usize {
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
pub fn strip_tests(code: &mut String, dir: &Path, child_dir: &Path) -> Vec<PathBuf> {
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
pub fn modules(src: &Path) -> BTreeMap<String, Module> {
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
pub struct UsePath {
    pub at: usize,
    pub end: usize,
    /// A re-export (`pub use`, `pub(crate) use`): an alias, not an import.
    pub public: bool,
    pub segments: Vec<String>,
    /// The name it is known by where it is used (`as` or its last segment).
    pub name: String,
}

/// The `use` statements of a module's code, each flattened into its paths.
pub fn use_paths(code: &str) -> Vec<UsePath> {
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
pub fn flatten(tree: &str, prefix: Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
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
