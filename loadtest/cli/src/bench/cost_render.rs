//! The cost tables: instructions per order and where they go, PostgreSQL's share per order, and
//! the gate against the committed baseline.

use std::fmt::Write as _;
use std::path::Path;

use lab_results::bench::BenchResults;
use lab_results::cost::{CostBaseline, GateLine, PgPerOrder};

use super::figures::num;

/// Instructions as thousands with no decimals: `1,234 k`.
fn k(x: f64) -> String {
    let v = (x / 1000.0).round() as i64;
    let digits = v.abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    format!("{}{out} k", if v < 0 { "-" } else { "" })
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
    let _ = writeln!(
        s,
        "| API | orders | instructions/order | window under valgrind |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|");
    for c in &r.instructions {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.1} s |",
            c.api,
            c.orders,
            k(c.instructions_per_order),
            c.window_s
        );
    }
    s.push('\n');
    for c in &r.instructions {
        let _ = writeln!(
            s,
            "### {}: where the instructions go\n\nBy group (each function's own instructions; \
             the groups add up to the total):\n",
            c.api
        );
        let _ = writeln!(s, "| group | instructions/order | share |");
        let _ = writeln!(s, "|---|---:|---:|");
        for g in &c.groups {
            let _ = writeln!(
                s,
                "| {} | {} | {:.1} % |",
                g.name,
                k(g.per_order),
                g.share * 100.0
            );
        }
        let _ = writeln!(
            s,
            "\nEach group's top frames by inclusive instructions (own + callees'; nested frames \
             overlap, so these do not add up):\n"
        );
        let _ = writeln!(s, "| frame | group | inclusive/order | self/order |");
        let _ = writeln!(s, "|---|---|---:|---:|");
        for f in &c.frames {
            let _ = writeln!(
                s,
                "| `{}` | {} | {} | {} |",
                f.name.replace('|', "\\|"),
                f.group,
                k(f.inclusive_per_order),
                k(f.self_per_order)
            );
        }
        s.push('\n');
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
    let _ = writeln!(
        s,
        "| window | WAL records | WAL bytes | full-page images | WAL flushes | commits | rollbacks \
         | buffer hits | buffer reads |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (label, p) in rows {
        let p = p.as_ref();
        let _ = writeln!(
            s,
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} |",
            num(p.map(|p| p.wal_records), 2),
            num(p.map(|p| p.wal_bytes), 0),
            num(p.map(|p| p.wal_fpi), 3),
            num(p.map(|p| p.wal_syncs), 2),
            num(p.map(|p| p.commits), 2),
            num(p.map(|p| p.rollbacks), 3),
            num(p.map(|p| p.blocks_hit), 1),
            num(p.map(|p| p.blocks_read), 2),
        );
    }
    s.push('\n');
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
    let _ = writeln!(s, "| API | figure | baseline | now | change | may rise | |");
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---|");
    for l in lines {
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} | {} | {} | {:.0} % | {} |",
            l.api,
            l.figure,
            l.baseline,
            num(l.measured, 0),
            l.change()
                .map_or("—".to_owned(), |c| format!("{:+.2} %", c * 100.0)),
            l.tolerance * 100.0,
            if l.passes() { "ok" } else { "**FAILED**" }
        );
    }
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
