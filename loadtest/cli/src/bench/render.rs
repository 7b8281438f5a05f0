//! The bench's tables, as markdown (stdout and bench.md).

use std::fmt::Write as _;

use lab_results::bench::{BenchCell, BenchResults};

use super::analysis::busy_unit;
use lab_report::markdown_table::{Column, Table};
use lab_report::thread_roles;
use lab_results::numbers::{NONE, fixed, kib, mib, percent};
use lab_results::{OUTCOME_CREATED, OUTCOME_REPLAYED};

/// Requests that did not end in a 201 (fresh or replayed).
pub fn errors(c: &BenchCell) -> u64 {
    c.outcomes
        .iter()
        .filter(|(k, _)| *k != OUTCOME_CREATED && *k != OUTCOME_REPLAYED)
        .map(|(_, v)| v)
        .sum()
}

/// A line per cell while the bench runs.
pub fn one_line(c: &BenchCell) -> String {
    let p = c.per_order.as_ref();
    format!(
        "  {} mocks {}: {:.0} orders/s, API {} µs/order ({} user + {} system), {} SQL and {} HTTP \
         calls per order, API at {} of its CPU",
        c.api,
        c.mocks,
        c.orders_per_s,
        fixed(p.map(|p| p.api_cpu_us), 0),
        fixed(p.map(|p| p.api_user_us), 0),
        fixed(p.map(|p| p.api_system_us), 0),
        fixed(p.and_then(|p| p.sql_statements), 2),
        fixed(p.and_then(|p| p.http_calls), 2),
        percent(c.api_cpu_share)
    )
}

/// The whole bench as markdown.
pub fn markdown(r: &BenchResults) -> String {
    let mut s = String::new();
    let e = &r.environment;
    let _ = writeln!(s, "# loadtest bench — {}\n", r.started_at);
    let _ = writeln!(s, "`{}`\n", r.command);
    let _ = writeln!(
        s,
        "Machine: {} CPUs ({}), {:.1} GiB, {}, kernel {}; APIs built `{}`, commit `{}`.",
        e.cores,
        e.cpu_model,
        e.memory_bytes as f64 / (1u64 << 30) as f64,
        e.os,
        e.kernel,
        e.build_profile,
        e.git_sha
    );
    let st = &r.settings;
    let limits = r.cells.first().map_or(NONE.to_owned(), |c| {
        if c.limits.limits_enforced {
            format!("{} ({})", c.limits.pod(), c.limits.mechanism)
        } else {
            c.limits.note.clone()
        }
    });
    let pin = st.pinning.as_ref().map_or(
        "not pinned (the API shares the CPUs with the harness)".to_owned(),
        |p| {
            format!(
                "pinned to CPU {:?}, generator/mock-deps/PostgreSQL on CPU {:?}",
                p.api_cpus, p.harness_cpus
            )
        },
    );
    if r.cells.is_empty() {
        let _ = writeln!(
            s,
            "Each API alone: {pin}; PostgreSQL durability {}.\n",
            st.db_durability
        );
    } else {
        let _ = writeln!(
            s,
            "Each API alone: limits {limits}, {pin}. Closed loop, {} s warm-up then {} s measured per \
             cell; PostgreSQL durability {}{}; admission control off (the loop bounds the load).\n",
            st.warmup_s,
            st.seconds,
            st.db_durability,
            if st.db_rtt_ms > 0.0 {
                format!(", {} ms RTT to it (latency-proxy)", st.db_rtt_ms)
            } else {
                String::new()
            }
        );
    }
    super::cost_render::instructions(&mut s, r);
    if !r.cells.is_empty() {
        per_order(&mut s, r);
        by_thread_role(&mut s, r);
        super::cost_render::postgres(
            &mut s,
            "over each CPU-time window",
            r.cells.iter().map(|c| {
                (
                    format!("{} mocks {}", c.api, c.mocks),
                    c.per_order.as_ref().and_then(|p| p.postgres),
                )
            }),
        );
        conditions(&mut s, r);
        memory(&mut s, r);
        targets(&mut s, r);
        statements(&mut s, r);
    }
    if !r.notes.is_empty() {
        let _ = writeln!(s, "## Notes\n");
        for n in &r.notes {
            let _ = writeln!(s, "- {n}");
        }
        s.push('\n');
    }
    s
}

/// Each cell's API CPU per order by thread role (`lab_report::thread_roles`' table).
fn by_thread_role(s: &mut String, r: &BenchResults) {
    if r.cells.iter().all(|c| c.cpu_by_role.is_none()) {
        return;
    }
    let _ = writeln!(
        s,
        "## API CPU per order by thread role (each window)\n\nEach of the API's threads read \
         from /proc/PID/task once a second over the window, given its role by its name; \
         exited/unseen is the process's CPU less the threads'. Per order persisted in the window.\n"
    );
    for c in &r.cells {
        let Some(rows) = c
            .cpu_by_role
            .as_ref()
            .and_then(|cpu| thread_roles::per_order(cpu, c.window.orders))
        else {
            continue;
        };
        let table = thread_roles::table(&rows);
        let _ = writeln!(s, "{} mocks {}:\n\n{table}", c.api, c.mocks);
    }
}

fn per_order(s: &mut String, r: &BenchResults) {
    let proxy = r
        .cells
        .iter()
        .any(|c| c.window.latency_proxy_cpu_s.is_some());
    let _ = writeln!(s, "## Per order\n");
    let mut columns = vec![Column::left("API"), Column::left("mocks")];
    columns.extend(
        [
            "clients",
            "orders/s",
            "API CPU µs/order (user + system)",
            "context switches/order (voluntary + not)",
            "SQL statements/order",
            "HTTP calls/order",
            "peak RSS",
            "PostgreSQL µs/order",
            "mock-deps µs/order",
            "generator µs/order",
        ]
        .map(Column::right),
    );
    if proxy {
        columns.push(Column::right("latency-proxy µs/order"));
    }
    let mut table = Table::new(columns);
    for c in &r.cells {
        let p = c.per_order.as_ref();
        let mut row = vec![
            c.api.clone(),
            c.mocks.clone(),
            c.clients.to_string(),
            format!("{:.0}", c.orders_per_s),
            format!(
                "{} ({} + {})",
                fixed(p.map(|p| p.api_cpu_us), 0),
                fixed(p.map(|p| p.api_user_us), 0),
                fixed(p.map(|p| p.api_system_us), 0)
            ),
            format!(
                "{} ({} + {})",
                fixed(p.map(|p| p.context_switches), 1),
                fixed(p.map(|p| p.voluntary_switches), 1),
                fixed(p.map(|p| p.involuntary_switches), 1)
            ),
            fixed(p.and_then(|p| p.sql_statements), 2),
            fixed(p.and_then(|p| p.http_calls), 2),
            mib(c.memory.peak_rss_bytes as f64),
            fixed(p.and_then(|p| p.postgres_cpu_us), 0),
            fixed(p.and_then(|p| p.mock_deps_cpu_us), 0),
            fixed(p.and_then(|p| p.generator_cpu_us), 0),
        ];
        if proxy {
            row.push(fixed(p.and_then(|p| p.latency_proxy_cpu_us), 0));
        }
        table.push_row(row);
    }
    let _ = writeln!(s, "{table}");
}

fn conditions(s: &mut String, r: &BenchResults) {
    let _ = writeln!(s, "## Conditions of each window\n");
    let _ = writeln!(
        s,
        "\"API CPU used\" is its CPU time over the window (100 % = its CPU saturated); \"threads \
         waiting\" how many of its threads were, on average, runnable without a CPU (schedstat); \
         \"other\" the machine's busy time outside the API and the measured harness (other tenants, \
         kernel threads), per order. Errors count the whole loop, warm-up included.\n"
    );
    let mut table = Table::new([
        Column::left("API"),
        Column::left("mocks"),
        Column::right("window"),
        Column::right("orders"),
        Column::right("API CPU used"),
        Column::right("threads waiting"),
        Column::right("machine busy"),
        Column::right("other µs/order"),
        Column::right("errors"),
        Column::left("not the API's capacity because"),
    ]);
    for c in &r.cells {
        let w = &c.window;
        let per_s = |x: Option<f64>| x.filter(|_| w.seconds > 0.0).map(|x| x / w.seconds);
        table.push_row([
            c.api.clone(),
            c.mocks.clone(),
            format!("{:.1} s", w.seconds),
            w.orders.to_string(),
            percent(c.api_cpu_share),
            fixed(per_s(w.api_cpu_wait_s), 2),
            per_s(w.machine_busy_s).map_or(NONE.to_owned(), |m| format!("{m:.2} CPUs")),
            fixed(c.per_order.as_ref().and_then(|p| p.other_cpu_us), 0),
            errors(c).to_string(),
            c.bound
                .clone()
                .unwrap_or_else(|| "— (saturated)".to_owned()),
        ]);
    }
    let _ = writeln!(s, "{table}");
}

fn memory(s: &mut String, r: &BenchResults) {
    let _ = writeln!(s, "## Memory\n");
    let _ = writeln!(
        s,
        "RSS of the API: at `/ready` before any order (idle), mean over the window (sampled twice a \
         second), peak (`VmHWM`, warm-up included); thread stacks: the anonymous 2 MiB mappings of \
         `/proc/PID/smaps` at the window's end and the RSS each holds on average. Busy: blocking-api's `blocking_pool_busy`, \
         reactive-api's `http_requests_in_flight`. Growth per busy = (mean − idle) ÷ mean busy: an \
         upper bound, since it also holds the pool connections, buffers and allocator arenas a \
         first load makes.\n"
    );
    let mut table = Table::new([
        Column::left("API"),
        Column::left("mocks"),
        Column::right("idle RSS"),
        Column::right("mean RSS"),
        Column::right("peak RSS"),
        Column::right("threads"),
        Column::right("thread stacks: RSS each"),
        Column::left("busy (mean)"),
        Column::right("RSS growth per busy"),
    ]);
    for c in &r.cells {
        let m = &c.memory;
        table.push_row([
            c.api.clone(),
            c.mocks.clone(),
            mib(m.idle_rss_bytes as f64),
            mib(m.window_mean_rss_bytes as f64),
            mib(m.peak_rss_bytes as f64),
            format!("{:.0}", m.window_mean_threads),
            match (m.thread_stacks, m.thread_stack_rss_bytes) {
                (Some(n), Some(rss)) if n > 0 => format!("{n}: {}", kib(rss as f64 / n as f64)),
                _ => NONE.to_owned(),
            },
            format!("{} {}", fixed(m.window_mean_busy, 0), m.busy_kind),
            m.rss_growth_per_busy_bytes.map_or(NONE.to_owned(), kib),
        ]);
    }
    let _ = writeln!(s, "{table}");
    for sl in &r.memory_slopes {
        let _ = writeln!(
            s,
            "- {}: **{} per {}** — the slope of mean RSS from mocks {} ({:.0} busy, {}) to mocks {} \
             ({:.0} busy, {}).",
            sl.api,
            kib(sl.bytes_per_busy),
            busy_unit(&sl.busy_kind),
            sl.from_mocks,
            sl.from_busy,
            mib(sl.from_rss_bytes as f64),
            sl.to_mocks,
            sl.to_busy,
            mib(sl.to_rss_bytes as f64),
        );
    }
    if !r.memory_slopes.is_empty() {
        s.push('\n');
    }
}

fn targets(s: &mut String, r: &BenchResults) {
    if r.targets.is_empty() {
        return;
    }
    let _ = writeln!(s, "## The bench's targets\n");
    let mut table = Table::new([
        Column::left("target"),
        Column::right("measured"),
        Column::right("limit"),
        Column::left("met"),
    ]);
    for t in &r.targets {
        let show = |v: Option<f64>| match t.unit.as_str() {
            "bytes" => v.map_or(NONE.to_owned(), kib),
            "statements" => fixed(v, 0),
            unit => v.map_or(NONE.to_owned(), |v| format!("{v:.0} {unit}")),
        };
        let met = match t.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => NONE,
        };
        table.push_row([
            t.name.clone(),
            show(t.measured),
            t.limit.map_or("(none set)".to_owned(), |l| show(Some(l))),
            met.to_owned(),
        ]);
    }
    let _ = writeln!(s, "{table}");
}

fn statements(s: &mut String, r: &BenchResults) {
    if r.cells.iter().all(|c| c.statements.is_empty()) {
        return;
    }
    let _ = writeln!(
        s,
        "## SQL statements per order (pg_stat_statements, each window)\n"
    );
    for c in &r.cells {
        let _ = writeln!(
            s,
            "{} mocks {}: {} statements per order on its path (each statement's calls per order, \
             rounded, summed); {} per order over the window, its edges included:\n",
            c.api,
            c.mocks,
            c.order_path_statements
                .map_or(NONE.to_owned(), |n| n.to_string()),
            fixed(c.per_order.as_ref().and_then(|p| p.sql_statements), 2)
        );
        let mut table = Table::new([
            Column::right("calls/order"),
            Column::right("mean ms"),
            Column::left("statement"),
        ]);
        for st in c.statements.iter().filter(|st| st.per_order >= 0.001) {
            let mut q: String = st.query.chars().take(100).collect();
            if q.len() < st.query.len() {
                q.push('…');
            }
            table.push_row([
                format!("{:.3}", st.per_order),
                format!("{:.3}", st.mean_ms),
                format!("`{q}`"),
            ]);
        }
        let _ = writeln!(s, "{table}");
    }
}
