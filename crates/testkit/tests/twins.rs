//! The two APIs run the same code where only the execution model differs: each file listed in
//! [`TWINS`] is, in blocking-api, reactive-api's file of the same name with the `async`/`.await`
//! taken out. This test holds them to it — a step added, removed or reordered in one and not the
//! other fails here, not in a lab run weeks later.
//!
//! Normalisation, the same for every pair: module docs (`//!`) and `use` items dropped (an import
//! follows from the code, and one the code does not need is a warning), `async ` and `.await`
//! removed, a closure called at once (`(|| { … })()`, the blocking twin of an `async { … }`
//! block) read as a block, then all whitespace and trailing commas removed (rustfmt lays out a
//! chain of `.await`s, and a signature that grew, differently). What each pair may differ by
//! beyond that is listed with it, and each listed difference must still be there (one that went
//! away is taken off the list):
//! - an item of its own, by the start of its first line: written for one model (a thread against
//!   a task) or one driver, left out of both sides;
//! - a text that names the model's own type or call (`std::thread::sleep` against
//!   `tokio::time::sleep`, `BlockingBroker` against `Broker`), read as one.
//!
//! The twins that differ by the driver too (`db.rs`, `db/*`, `batch.rs`, `outbox.rs`,
//! `connections.rs`), and those whose start-up and serving differ by the model (`lib.rs`,
//! `main.rs`, `startup.rs`, `routes.rs`), are held by their skeleton ([`SKELETONS`]): diesel and
//! sqlx bind and read rows differently on every line, but each file declares the same modules,
//! defines the same functions, runs the same SQL and touches the same metrics in the same order,
//! but for the entries listed with their reasons. Every file both APIs have is one or the other
//! (`every_file_both_apis_have_is_guarded`). The clients are not twins by name (`clients/`
//! against `clients.rs`): blocking-api's `Deps` builds each call once and sends it with either of
//! two clients (`DEPS_CLIENT`), ureq's or reqwest::blocking's.

use std::path::Path;

/// A pair of twin files and what they may differ by.
struct Twin {
    /// The file, under each API's `src/`.
    file: &'static str,
    /// Items written for one side, by the start of their first line (after `async ` is taken
    /// out), each with why; left out wherever found.
    own: &'static [(&'static str, &'static str)],
    /// Texts that say one thing in each model: (blocking-api's, reactive-api's); an empty one is
    /// a text only the other side has. Compared without whitespace, applied in order.
    same: &'static [(&'static str, &'static str)],
}

const TWINS: &[Twin] = &[
    Twin {
        file: "service.rs",
        own: &[],
        // The retry back-off sleeps on a blocking thread, and on the event loop.
        same: &[("std::thread::sleep", "tokio::time::sleep")],
    },
    Twin {
        file: "recovery.rs",
        own: &[(
            "pub fn spawn(",
            "the loop runs on a thread of its own, and as a task on the runtime",
        )],
        same: &[],
    },
    Twin {
        file: "retention.rs",
        own: &[],
        same: &[],
    },
    Twin {
        file: "state.rs",
        own: &[(
            "const CONNECT_PATIENCE",
            "the async client waits at start-up for NATS; the blocking facade has its own patience",
        )],
        same: &[
            (
                "/// The threads of `GET /orders/{id}`, apart from the orders', behind the reads' admission.
                 pub reads: ReadPool,",
                "/// The admission of `GET /orders/{id}`, apart from the orders'.
                 pub reads: ReadAdmission,",
            ),
            (
                "BlockingBroker::connect(&s.nats_url, s.nats_timeout())",
                "Broker::connect(&s.nats_url, s.nats_timeout(), CONNECT_PATIENCE)",
            ),
            ("Option<BlockingBroker>", "Option<Broker>"),
        ],
    },
    Twin {
        file: "persist.rs",
        own: &[
            (
                "struct RawTx",
                "blocking-api's transaction guard, rolled back on drop (a drop cannot await)",
            ),
            ("impl<'c> RawTx<'c>", "the guard's begin and end"),
            ("impl Drop for RawTx", "the guard's rollback"),
            (
                "pub fn persist_order(",
                "the same steps, through blocking-api's guard and reactive-api's explicit ROLLBACKs",
            ),
        ],
        same: &[("&BlockingBroker", "&Broker")],
    },
    Twin {
        file: "events.rs",
        own: &[
            ("pub(crate) fn exec(", "a control statement, through diesel or sqlx"),
            ("pub(crate) fn finish(", "reads the outcome back through diesel or sqlx"),
            ("pub fn resolve_in_doubt(", "reads the prepared transactions through diesel or sqlx"),
        ],
        same: &[("&BlockingBroker", "&Broker")],
    },
];

/// A pair of twins that differ by the driver (diesel and sqlx bind and read rows differently on
/// every line) or by how each model starts and serves: held by their skeleton instead of line
/// for line — the modules it declares, the functions it defines, the SQL it runs (`sql::NAME`)
/// and the metrics it touches (`metrics.NAME`), each in the order they appear ([`skeleton`]). A step added, removed
/// or reordered in one and not the other changes it.
struct Skeleton {
    file: &'static str,
    /// Entries of the skeleton found on one side only, each with why; each must still be there.
    own: &'static [(&'static str, &'static str)],
}

const SKELETONS: &[Skeleton] = &[
    Skeleton {
        file: "lib.rs",
        own: &[
            (
                "mod broker",
                "blocking-api's blocking facade over the async NATS client",
            ),
            (
                "mod db_socket",
                "finds a diesel connection's socket for the watchdog",
            ),
            (
                "mod pool",
                "the bounded order pool and the reads' thread pool",
            ),
            (
                "mod watchdog",
                "bounds each database call of a blocking thread by its deadline",
            ),
        ],
    },
    Skeleton {
        file: "main.rs",
        own: &[],
    },
    Skeleton {
        file: "startup.rs",
        own: &[],
    },
    Skeleton {
        file: "routes.rs",
        own: &[],
    },
    Skeleton {
        file: "batch.rs",
        own: &[],
    },
    Skeleton {
        file: "outbox.rs",
        own: &[],
    },
    Skeleton {
        file: "db.rs",
        own: &[(
            "mod prepared",
            "diesel's statement cache opened to the fixed raw SQL (sqlx caches every statement)",
        )],
    },
    Skeleton {
        file: "db/queries.rs",
        own: &[],
    },
    Skeleton {
        file: "db/recovery_queries.rs",
        own: &[],
    },
    Skeleton {
        file: "db/retention_queries.rs",
        own: &[],
    },
    Skeleton {
        file: "db/error.rs",
        own: &[
            (
                "fn not_found_is_none",
                "diesel reports a missing row as an error, sqlx as None",
            ),
            (
                "fn sqlstate",
                "diesel classes errors by kind; the SQLSTATE behind each kind",
            ),
        ],
    },
    Skeleton {
        file: "db/tx.rs",
        own: &[
            (
                "fn commit",
                "blocking-api's guard commits itself; reactive-api sends COMMIT",
            ),
            (
                "fn conn",
                "each side's guard lends its connection (a different number of guards)",
            ),
            (
                "fn checkout",
                "reactive-api's acquire and its timing in one helper, used twice",
            ),
            (
                "metrics.start_acquire",
                "timed inline in blocking-api, in `checkout` in reactive-api",
            ),
            (
                "metrics.tx_timer",
                "started before or after the checkout, by where it is",
            ),
            (
                "fn durable_commit",
                "blocking-api's one statement helper for it",
            ),
            (
                "fn control",
                "reactive-api's helper for every control statement",
            ),
            (
                "sql::DURABLE_COMMIT",
                "sent by a helper in one, at both commit sites in the other",
            ),
        ],
    },
    Skeleton {
        file: "connections.rs",
        own: &[
            (
                "fn establish",
                "r2d2's connect, with the socket found for the watchdog",
            ),
            ("fn connect", "r2d2's ManageConnection"),
            (
                "fn is_valid",
                "r2d2's ManageConnection: the ping after a failure",
            ),
            (
                "fn has_broken",
                "r2d2's ManageConnection: an abandoned call's connection",
            ),
            (
                "fn with_libpq_options",
                "libpq reads its options from the URL; sqlx from its own",
            ),
            ("fn create", "deadpool's Manager"),
            ("fn recycle", "deadpool's Manager: the ping after a failure"),
            (
                "fn discard",
                "deadpool's lent connection, closed instead of returned",
            ),
            ("fn deref", "deadpool's lent connection"),
            ("fn deref_mut", "deadpool's lent connection"),
            ("fn drop", "deadpool's lent connection, returned on drop"),
            (
                "fn note_failure",
                "sqlx's errors classed as possibly losing the connection",
            ),
            (
                "fn acquire",
                "deadpool's wait bounded by the pool timeout (r2d2's own)",
            ),
            (
                "fn retryable",
                "sqlx's connect errors worth another attempt (r2d2 retries itself)",
            ),
        ],
    },
];

/// The ordered skeleton of a source file: `mod NAME`, `fn NAME`, `sql::NAME` and `metrics.NAME`,
/// outside comments and before its tests (`#[cfg(test)]`), with `async ` taken out.
fn skeleton(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    // A chain rustfmt broke over lines (`self.metrics\n    .shed`) read as one line.
    let mut lines: Vec<String> = Vec::new();
    for line in code.lines().map(str::trim_start) {
        match lines.last_mut() {
            Some(last) if line.starts_with('.') => last.push_str(line),
            _ => lines.push(line.to_owned()),
        }
    }
    let mut out = Vec::new();
    for line in lines {
        let line = line.replace("async ", "");
        if line.starts_with("//") {
            continue;
        }
        let ident = |rest: &str| -> String {
            rest.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        };
        let mut at = 0;
        while at < line.len() {
            let rest = &line[at..];
            let (kind, skip) = if rest.starts_with("fn ")
                && (at == 0 || !line.as_bytes()[at - 1].is_ascii_alphanumeric())
            {
                ("fn ", 3)
            } else if rest.starts_with("mod ") && (at == 0 || line.as_bytes()[at - 1] == b' ') {
                ("mod ", 4)
            } else if rest.starts_with("sql::") {
                ("sql::", 5)
            } else if rest.starts_with("metrics.") {
                ("metrics.", 8)
            } else {
                at += rest.chars().next().map_or(1, char::len_utf8);
                continue;
            };
            let name = ident(&rest[skip..]);
            if !name.is_empty() {
                out.push(format!("{kind}{name}"));
            }
            at += skip + name.len();
        }
    }
    out
}

/// Both skeletons of `twin`, each without its own entries; panics if a listed entry is gone.
fn skeletons(twin: &Skeleton) -> [Vec<String>; 2] {
    let mut found = vec![0; twin.own.len()];
    let sides = ["blocking-api", "reactive-api"].map(|api| {
        skeleton(&read(api, twin.file))
            .into_iter()
            .filter(|entry| {
                let hit = twin.own.iter().position(|(own, _)| own == entry);
                if let Some(n) = hit {
                    found[n] += 1;
                }
                hit.is_none()
            })
            .collect::<Vec<_>>()
    });
    for ((own, _), n) in twin.own.iter().zip(found) {
        assert!(n > 0, "{}: {own:?} is in neither side any more", twin.file);
    }
    sides
}

fn read(api: &str, file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../{api}/src/{file}"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `text` without `async `, `.await`, whitespace, and the trailing commas rustfmt adds when it
/// breaks a list over lines.
fn squeezed(text: &str) -> String {
    let bare: String = text
        .replace("async ", "")
        .replace(".await", "")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    bare.replace(",)", ")")
        .replace(",}", "}")
        .replace(",]", "]")
}

/// `text` without its module docs, its `use` items and the items that start as one of `own`
/// does (with the comments and attributes above them); `found` counts each `own` entry seen.
fn without_items(text: &str, own: &[(&str, &str)], found: &mut [usize]) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut keep = vec![true; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].replace("async ", "");
        let hit = own.iter().position(|(start, _)| line.starts_with(start));
        if !line.starts_with("use ") && hit.is_none() {
            if line.trim_start().starts_with("//!") {
                keep[i] = false;
            }
            i += 1;
            continue;
        }
        if let Some(n) = hit {
            found[n] += 1;
        }
        let mut first = i;
        while first > 0 && {
            let above = lines[first - 1].trim_start();
            above.starts_with("///") || above.starts_with("#[") || above.starts_with("// ")
        } {
            first -= 1;
        }
        // One line (`struct X(…);`), a `use` to its `;`, or anything else to its closing line.
        let ends = |l: &str| match line.starts_with("use ") {
            true => l.ends_with(';'),
            false => l == "}" || l == "};" || !l.starts_with(' ') && l.ends_with(';'),
        };
        let last = (i..lines.len())
            .find(|&l| ends(lines[l]))
            .unwrap_or_else(|| panic!("the item at line {} ends", i + 1));
        keep[first..=last].iter_mut().for_each(|k| *k = false);
        i = last + 1;
    }
    lines
        .iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(l, _)| *l)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `(||{ … })()` of `squeezed` (a closure called at once) read as the block `{ … }`.
fn closures_as_blocks(squeezed: &str) -> String {
    let mut out = squeezed.to_owned();
    while let Some(at) = out.find("(||{") {
        let body = at + "(||".len();
        let mut depth = 0;
        let end = out[body..]
            .char_indices()
            .find_map(|(i, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(body + i)
            })
            .expect("a closure's braces are balanced");
        assert_eq!(&out[end..end + 4], "})()", "a closure called at once");
        out = format!("{}{}{}", &out[..at], &out[body..=end], &out[end + 4..]);
    }
    out
}

/// Both sides of `twin`, normalised; panics if one of its listed differences is gone.
fn normalised(twin: &Twin) -> (String, String) {
    let mut found = vec![0; twin.own.len()];
    let [mut blocking, mut reactive] = ["blocking-api", "reactive-api"]
        .map(|api| squeezed(&without_items(&read(api, twin.file), twin.own, &mut found)));
    blocking = closures_as_blocks(&blocking);
    for ((start, _), n) in twin.own.iter().zip(found) {
        assert!(
            n > 0,
            "{}: no item starts with {start:?} any more",
            twin.file
        );
    }
    for (n, (b, r)) in twin.same.iter().enumerate() {
        let mark = format!("⟨{n}⟩");
        for (side, text) in [(&mut blocking, b), (&mut reactive, r)] {
            let text = squeezed(text);
            if text.is_empty() {
                continue;
            }
            assert!(side.contains(&text), "{}: {text:?} is gone", twin.file);
            let into = if b.is_empty() || r.is_empty() {
                ""
            } else {
                &mark
            };
            *side = side.replace(&text, into);
        }
    }
    (blocking, reactive)
}

#[test]
fn the_model_only_twins_differ_by_the_model_only() {
    let mut failures = Vec::new();
    for twin in TWINS {
        let (blocking, reactive) = normalised(twin);
        if blocking == reactive {
            continue;
        }
        let at = blocking
            .chars()
            .zip(reactive.chars())
            .take_while(|(a, b)| a == b)
            .count();
        let around = |s: &str| {
            s.chars()
                .skip(at.saturating_sub(80))
                .take(160)
                .collect::<String>()
        };
        failures.push(format!(
            "blocking-api/src/{f} and reactive-api/src/{f} differ beyond the model (normalised, \
             from character {at}):\nblocking: …{}…\nreactive: …{}…",
            around(&blocking),
            around(&reactive),
            f = twin.file,
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_normalisation_still_sees_a_changed_step() {
    let service = &TWINS[0];
    let (blocking, reactive) = normalised(service);
    assert!(
        blocking.len() > 2000,
        "the file was read: {} chars",
        blocking.len()
    );
    assert_eq!(blocking, reactive);
    let tampered = blocking.replacen("check_deadline", "check_nothing", 1);
    assert_ne!(tampered, reactive);
}

#[test]
fn a_closure_called_at_once_reads_as_a_block() {
    assert_eq!(
        closures_as_blocks("letr=(||{if{a}Ok(1)})();f(|x|{x})"),
        "letr={if{a}Ok(1)};f(|x|{x})"
    );
}

#[test]
fn an_item_of_its_own_goes_with_its_docs_and_nothing_else() {
    let text = "use a::{\n    b,\n};\n\nfn kept() {}\n\n/// Its doc.\n#[inline]\npub fn spawn(\n    x: u8,\n) {\n    x;\n}\n\nconst C: u8 = 1;\n";
    let mut found = [0];
    let out = without_items(text, &[("pub fn spawn(", "")], &mut found);
    assert_eq!(found, [1]);
    assert_eq!(squeezed(&out), "fnkept(){}constC:u8=1;");
}

#[test]
fn the_driver_twins_keep_the_same_skeleton() {
    let mut failures = Vec::new();
    for twin in SKELETONS {
        let [blocking, reactive] = skeletons(twin);
        if blocking != reactive {
            let at = blocking
                .iter()
                .zip(&reactive)
                .take_while(|(a, b)| a == b)
                .count();
            failures.push(format!(
                "{}: the skeletons part at entry {at}:\nblocking: {:?}\nreactive: {:?}",
                twin.file,
                &blocking[at.min(blocking.len())..blocking.len().min(at + 6)],
                &reactive[at.min(reactive.len())..reactive.len().min(at + 6)],
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_file_both_apis_have_is_guarded() {
    fn files(dir: &Path, under: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, under, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path.strip_prefix(under).unwrap().display().to_string());
            }
        }
    }
    let listed = |api: &str| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../{api}/src"));
        let mut out = Vec::new();
        files(&src, &src, &mut out);
        out
    };
    let reactive = listed("reactive-api");
    let mut both: Vec<String> = listed("blocking-api")
        .into_iter()
        .filter(|f| reactive.contains(f))
        .collect();
    both.sort();
    let mut guarded: Vec<String> = TWINS
        .iter()
        .map(|t| t.file)
        .chain(SKELETONS.iter().map(|t| t.file))
        .map(str::to_owned)
        .collect();
    guarded.sort();
    assert_eq!(
        guarded, both,
        "every file both APIs have is a twin, compared line for line (TWINS) or by its skeleton \
         (SKELETONS)"
    );
}

#[test]
fn the_skeleton_sees_a_step_added_removed_or_moved() {
    let text = "//! Doc: fn not_this.\nasync fn persist(c: &mut C) {\n    // sql::NOT_THIS\n    c.run(sql::INSERT_ORDER)?;\n    c.run(sql::INSERT_ITEMS)?;\n    app.metrics.persist_retries.inc();\n    self.metrics\n        .shed\n        .inc();\n}\n#[cfg(test)]\nmod tests { fn t() {} }\n";
    let entries = [
        "fn persist",
        "sql::INSERT_ORDER",
        "sql::INSERT_ITEMS",
        "metrics.persist_retries",
        "metrics.shed",
    ];
    assert_eq!(skeleton(text), entries.map(str::to_owned));
    let moved = text.replace(
        "c.run(sql::INSERT_ORDER)?;\n    c.run(sql::INSERT_ITEMS)?;",
        "c.run(sql::INSERT_ITEMS)?;\n    c.run(sql::INSERT_ORDER)?;",
    );
    assert_ne!(skeleton(&moved), skeleton(text));
    assert_ne!(
        skeleton(&text.replace("    c.run(sql::INSERT_ITEMS)?;\n", "")),
        skeleton(text)
    );
}
