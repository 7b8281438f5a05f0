//! The cost tables: instructions per order and where they go, PostgreSQL's share per order, and
//! the gate against the committed baseline.

use std::fmt::Write as _;
use std::path::Path;

use lab_results::bench::BenchResults;
use lab_results::cost::{CostBaseline, PgPerOrder};

use super::cost_gate::GateLine;
use lab_report::markdown_table::{Column, Table};
use lab_results::numbers::{NONE, fixed, grouped};

/// Instructions as thousands with no decimals: `1,234 k`.
fn k(x: f64) -> String {
    format!("{} k", grouped(x / 1000.0))
}

/// The `--instructions` sections of bench.md.
pub fn instructions(s: &mut String, r: &BenchResults) {
    let Some(st) = &r.instruction_settings else {
        return;
    };
    let _ = writeln!(s, "## Instructions per order\n");
    let _ = writeln!(
        s,
        "Each API's release build under {}, mocks at 0 ms, a closed loop of {} \
         clients: {} orders of warm-up, then a window of {} orders, counted alone (callgrind \
         zeroed at its start, dumped at its end). User-space instructions of the whole process; \
         the kernel's side of its system calls is not in them. Hardware instruction \
         counters: {}.\n",
        st.valgrind, st.clients, st.warmup_orders, st.orders, st.hardware_counters
    );
    let mut table = Table::new([
        Column::left("API"),
        Column::right("orders"),
        Column::right("instructions/order"),
        Column::right("window under valgrind"),
    ]);
    for c in &r.instructions {
        table.push_row([
            c.api.clone(),
            c.orders.to_string(),
            k(c.instructions_per_order),
            format!("{:.1} s", c.window_s),
        ]);
    }
    let _ = writeln!(s, "{table}");
    for c in &r.instructions {
        let _ = writeln!(
            s,
            "### {}: where the instructions go\n\nBy group (each function's own instructions; \
             the groups add up to the total):\n",
            c.api
        );
        let mut groups = Table::new([
            Column::left("group"),
            Column::right("instructions/order"),
            Column::right("share"),
        ]);
        for g in &c.groups {
            groups.push_row([
                g.name.clone(),
                k(g.per_order),
                format!("{:.1} %", g.share * 100.0),
            ]);
        }
        let _ = writeln!(
            s,
            "{groups}\nEach group's top frames by inclusive instructions (own + callees'; nested \
             frames overlap, so these do not add up):\n"
        );
        let mut frames = Table::new([
            Column::left("frame"),
            Column::left("group"),
            Column::right("inclusive/order"),
            Column::right("self/order"),
        ]);
        for f in &c.frames {
            frames.push_row([
                format!("`{}`", f.name),
                f.group.clone(),
                k(f.inclusive_per_order),
                k(f.self_per_order),
            ]);
        }
        let _ = writeln!(s, "{frames}");
    }
    postgres(
        s,
        "over each instruction window",
        r.instructions
            .iter()
            .map(|c| (c.api.clone(), c.postgres_per_order)),
    );
}

/// PostgreSQL's share per order, one row per window.
pub fn postgres(
    s: &mut String,
    over: &str,
    rows: impl Iterator<Item = (String, Option<PgPerOrder>)>,
) {
    let rows: Vec<(String, Option<PgPerOrder>)> = rows.collect();
    if rows.iter().all(|(_, p)| p.is_none()) {
        return;
    }
    let _ = writeln!(s, "## PostgreSQL per order, {over}\n");
    let _ = writeln!(
        s,
        "From PostgreSQL's own counters: `pg_stat_wal` (the cluster's WAL) and `pg_stat_database` \
         (the orders' database; the lab's own statements add a handful of commits per window).\n"
    );
    let mut table = Table::new(
        std::iter::once(Column::left("window")).chain(
            [
                "WAL records",
                "WAL bytes",
                "full-page images",
                "WAL flushes",
                "commits",
                "rollbacks",
                "buffer hits",
                "buffer reads",
            ]
            .map(Column::right),
        ),
    );
    for (label, p) in rows {
        let p = p.as_ref();
        table.push_row([
            label,
            fixed(p.map(|p| p.wal_records), 2),
            fixed(p.map(|p| p.wal_bytes), 0),
            fixed(p.map(|p| p.wal_fpi), 3),
            fixed(p.map(|p| p.wal_syncs), 2),
            fixed(p.map(|p| p.commits), 2),
            fixed(p.map(|p| p.rollbacks), 3),
            fixed(p.map(|p| p.blocks_hit), 1),
            fixed(p.map(|p| p.blocks_read), 2),
        ]);
    }
    let _ = writeln!(s, "{table}");
}

/// The gate's verdict, line by line, and what to do about a failure.
pub fn gate(lines: &[GateLine], baseline: &CostBaseline, path: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## Against the baseline {} (commit {}, {})\n",
        path.display(),
        baseline.commit,
        baseline.measured_at
    );
    let mut table = Table::new([
        Column::left("API"),
        Column::left("figure"),
        Column::right("baseline"),
        Column::right("now"),
        Column::right("change"),
        Column::right("may rise"),
        Column::left(""),
    ]);
    for l in lines {
        table.push_row([
            l.api.clone(),
            l.figure.clone(),
            format!("{:.0}", l.baseline),
            fixed(l.measured, 0),
            l.change()
                .map_or(NONE.to_owned(), |c| format!("{:+.2} %", c * 100.0)),
            format!("{:.0} %", l.tolerance * 100.0),
            (if l.passes() { "ok" } else { "**FAILED**" }).to_owned(),
        ]);
    }
    let _ = write!(s, "{table}");
    if lines.iter().any(|l| !l.passes()) {
        let _ = writeln!(
            s,
            "\nAn order got more expensive than the baseline allows. If that is the price of a \
             change you mean to make, update the baseline in its own commit that says why:\n\n    \
             target/release/loadtest bench --instructions --save-baseline {} --why \"<why the \
             cost rose>\"\n",
            path.display()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(k(1_234_567_890.0), "1,234,568 k");
        assert_eq!(k(999.0), "1 k");
        assert_eq!(k(-12_345_000.0), "-12,345 k");
    }
}
