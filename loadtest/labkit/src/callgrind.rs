//! Instructions a process executes, counted by valgrind's callgrind: a figure that does not
//! depend on the machine's speed, its other tenants or its clock, unlike CPU time.
//!
//! The program runs under [`valgrind_args`]; the lab then talks to it through `vgdb`, valgrind's
//! gdbserver relay, with callgrind's monitor commands ([`monitor`]): `zero` at a window's start,
//! `dump` at its end. vgdb, unlike `callgrind_control`, also reaches a program that is blocked in
//! a system call (an idle server in `epoll_wait`): it wakes it with ptrace, so a window can start
//! and end while the program is idle, and hold exactly the work in between.
//!
//! [`parse`] reads a dump (callgrind's profile format, `events: Ir`) into each function's own
//! instructions and its inclusive instructions (its own plus those of the calls it made; a call
//! of a function to itself is not added twice). Only user-space instructions are counted: the
//! kernel's side of a system call is not.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// `valgrind` arguments that run `program` under callgrind and write its dumps to `out_file`
/// (`out_file.1`, `.2`… for each `dump`; `out_file` itself at exit).
pub fn valgrind_args(out_file: &Path, program: &Path) -> Vec<String> {
    vec![
        "--tool=callgrind".to_owned(),
        format!("--callgrind-out-file={}", out_file.display()),
        // vgdb's monitor commands (`zero`, `dump`); the default, stated because the lab needs it.
        "--vgdb=yes".to_owned(),
        "--vgdb-error=999999".to_owned(),
        program.display().to_string(),
    ]
}

/// Runs one callgrind monitor command (`zero`, `dump`, `status`…) in the valgrind process `pid`
/// and returns what it printed.
pub fn monitor(pid: u32, command: &str) -> anyhow::Result<String> {
    let out = Command::new("vgdb")
        .arg(format!("--pid={pid}"))
        .args(command.split_whitespace())
        .output()
        .context("running vgdb (installed with valgrind)")?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        bail!("vgdb --pid={pid} {command} failed ({}): {text}", out.status);
    }
    Ok(text)
}

/// The newest numbered dump (`out_file.N`) of a run, if any.
pub fn last_dump(out_file: &Path) -> anyhow::Result<Option<PathBuf>> {
    let dir = out_file.parent().unwrap_or(Path::new("."));
    let stem = out_file
        .file_name()
        .and_then(|n| n.to_str())
        .context("callgrind output file has no name")?;
    let mut best: Option<(u32, PathBuf)> = None;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(n) = name
            .to_str()
            .and_then(|s| s.strip_prefix(stem))
            .and_then(|s| s.strip_prefix('.'))
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if best.as_ref().is_none_or(|(b, _)| n > *b) {
            best = Some((n, entry.path()));
        }
    }
    Ok(best.map(|(_, p)| p))
}

/// One function of a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionCost {
    /// Demangled name as callgrind wrote it.
    pub name: String,
    /// The ELF object it lives in (`ob=`), e.g. the binary or `libc.so.6`.
    pub object: String,
    /// Instructions executed in the function itself.
    pub self_ir: u64,
    /// Its own plus those of every call it made (self-recursion not added twice).
    pub inclusive_ir: u64,
}

/// A dump: its total and its functions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    /// Every instruction in the dump (`totals:` or `summary:`, else the sum of the functions).
    pub total_ir: u64,
    pub functions: Vec<FunctionCost>,
}

/// Reads a callgrind dump whose first event is `Ir`.
pub fn parse(text: &str) -> anyhow::Result<Profile> {
    let mut names = Names::default();
    let mut by_fn: HashMap<(String, String), (u64, u64)> = HashMap::new();
    let (mut object, mut function) = (String::new(), String::new());
    let (mut call_object, mut call_fn): (Option<String>, Option<String>) = (None, None);
    let mut in_call = false;
    let mut total: Option<u64> = None;
    let mut first_event_is_ir = false;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(v) = line.strip_prefix("events:") {
            first_event_is_ir = v.split_whitespace().next() == Some("Ir");
        } else if let Some(v) = line
            .strip_prefix("totals:")
            .or_else(|| line.strip_prefix("summary:"))
        {
            total = v.split_whitespace().next().and_then(|n| n.parse().ok());
        } else if let Some(v) = line.strip_prefix("ob=") {
            object = names.resolve('o', v);
        } else if let Some(v) = line.strip_prefix("fn=") {
            function = names.resolve('f', v);
            call_object = None;
        } else if let Some(v) = line.strip_prefix("cob=") {
            call_object = Some(names.resolve('o', v));
        } else if let Some(v) = line.strip_prefix("cfn=") {
            call_fn = Some(names.resolve('f', v));
        } else if line.starts_with("calls=") {
            in_call = true;
        } else if line.starts_with(|c: char| c.is_ascii_digit() || "+-*".contains(c)) {
            let ir: u64 = line
                .split_whitespace()
                .nth(1)
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let entry = by_fn.entry((function.clone(), object.clone())).or_default();
            if in_call {
                let callee = call_fn.take().unwrap_or_default();
                let callee_object = call_object.take().unwrap_or_else(|| object.clone());
                if callee != function || callee_object != object {
                    entry.1 += ir;
                }
                in_call = false;
            } else {
                entry.0 += ir;
                entry.1 += ir;
            }
        } else if let Some(v) = line
            .strip_prefix("fl=")
            .or_else(|| line.strip_prefix("fi="))
            .or_else(|| line.strip_prefix("fe="))
            .or_else(|| line.strip_prefix("cfl="))
            .or_else(|| line.strip_prefix("cfi="))
        {
            // File names share one table; kept so later references resolve.
            names.resolve('l', v);
        }
    }
    if !first_event_is_ir {
        bail!("not a callgrind dump with Ir as its first event");
    }
    let functions: Vec<FunctionCost> = by_fn
        .into_iter()
        .map(|((name, object), (self_ir, inclusive_ir))| FunctionCost {
            name,
            object,
            self_ir,
            inclusive_ir,
        })
        .collect();
    let sum = functions.iter().map(|f| f.self_ir).sum();
    Ok(Profile {
        total_ir: total.unwrap_or(sum),
        functions,
    })
}

/// callgrind's name compression: `(id) name` defines, `(id)` refers back.
#[derive(Default)]
struct Names {
    table: HashMap<(char, String), String>,
}

impl Names {
    fn resolve(&mut self, kind: char, v: &str) -> String {
        let v = v.trim();
        let Some(rest) = v.strip_prefix('(') else {
            return v.to_owned();
        };
        let Some((id, name)) = rest.split_once(')') else {
            return v.to_owned();
        };
        let name = name.trim();
        let key = (kind, id.to_owned());
        if name.is_empty() {
            self.table.get(&key).cloned().unwrap_or_default()
        } else {
            self.table.insert(key, name.to_owned());
            name.to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = "# callgrind format
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: 1000

ob=(1) /bin/api
fl=(1) src/main.rs
fn=(1) api::main
10 100
cfl=(2) src/order.rs
cfn=(2) api::order
calls=2 20
11 700
cob=(2) /lib/libc.so.6
cfn=(3) memcpy
calls=1 0
+1 50
fn=(2)
20 600
cfn=(2)
calls=1 20
21 300
cfn=(1)
calls=1 10
22 0
ob=(2)
fn=(3)
0 150

totals: 1000
";

    #[test]
    fn a_dump_gives_each_functions_own_and_inclusive_instructions() {
        let p = parse(DUMP).unwrap();
        assert_eq!(p.total_ir, 1000);
        let f = |n: &str| p.functions.iter().find(|f| f.name == n).unwrap().clone();
        let main = f("api::main");
        assert_eq!((main.self_ir, main.inclusive_ir), (100, 850));
        // A call to itself is not added twice; the call back to main (0 here) is.
        let order = f("api::order");
        assert_eq!((order.self_ir, order.inclusive_ir), (600, 600));
        let memcpy = f("memcpy");
        assert_eq!(memcpy.object, "/lib/libc.so.6");
        assert_eq!((memcpy.self_ir, memcpy.inclusive_ir), (150, 150));
        assert_eq!(p.functions.iter().map(|f| f.self_ir).sum::<u64>(), 850);
    }

    #[test]
    fn other_files_are_refused() {
        assert!(parse("events: Dr\nfn=x\n1 2\n").is_err());
        assert!(parse("hello").is_err());
    }

    #[test]
    fn the_newest_numbered_dump_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("cg.out");
        assert_eq!(last_dump(&out).unwrap(), None);
        for n in ["cg.out", "cg.out.1", "cg.out.10", "cg.out.2", "cg.outx.99"] {
            std::fs::write(dir.path().join(n), "").unwrap();
        }
        assert_eq!(last_dump(&out).unwrap(), Some(dir.path().join("cg.out.10")));
    }
}
