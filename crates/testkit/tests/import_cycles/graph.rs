//! The import graph of a crate read by [`super::source`]: paths resolved to modules (re-exports
//! followed), edges, and Tarjan's strongly connected components.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::source::{Module, ident_byte, modules, use_paths};

pub fn join(module: &str, segment: &str) -> String {
    if module.is_empty() {
        segment.to_string()
    } else {
        format!("{module}::{segment}")
    }
}

/// Whether `outer` is `inner` or one of the modules around it (the root contains every module).
pub fn contains(outer: &str, inner: &str) -> bool {
    outer.is_empty() || inner == outer || inner.starts_with(&format!("{outer}::"))
}

pub fn parent(module: &str) -> &str {
    module.rsplit_once("::").map_or("", |(p, _)| p)
}

/// A crate read from its `src/`: its modules and what each re-exports.
pub struct Crate {
    pub modules: BTreeMap<String, Module>,
    /// (module, name) → the absolute path of what `pub use` makes that name stand for.
    pub reexports: BTreeMap<(String, String), Vec<String>>,
}

/// An import of one module by another, with where it is written.
pub struct Edge {
    pub from: String,
    pub to: String,
    pub at: String,
}

impl Crate {
    pub fn read(src: &Path) -> Crate {
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
    pub fn circles(&self) -> Vec<(Vec<String>, Vec<Edge>)> {
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
                // One line per import (a `use` of three names is one import).
                let mut seen = BTreeSet::new();
                let inside: Vec<Edge> = edges
                    .iter()
                    .filter(|e| members.contains(&e.from) && members.contains(&e.to))
                    .filter(|e| seen.insert((e.from.clone(), e.to.clone(), e.at.clone())))
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

pub struct Tarjan<'g> {
    pub next: &'g [BTreeSet<usize>],
    pub index: Vec<Option<usize>>,
    pub low: Vec<usize>,
    pub stack: Vec<usize>,
    pub on_stack: Vec<bool>,
    pub counter: usize,
    pub components: Vec<Vec<usize>>,
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
