//! `--baseline FILE`: each figure of this bench against the same cell (API, mock setting) of an
//! earlier bench.json.

use std::fmt::Write as _;
use std::path::Path;

use lab_report::markdown_table::{Column, Table};
use lab_results::bench::{BenchCell, BenchResults};
use lab_results::numbers::{NONE, fixed};

/// A figure the diff compares: its name, how to read it from a cell, whether less is better.
struct Metric {
    name: &'static str,
    read: fn(&BenchCell) -> Option<f64>,
    lower_is_better: bool,
    decimals: usize,
}

const METRICS: &[Metric] = &[
    Metric {
        name: "orders/s",
        read: |c| Some(c.orders_per_s),
        lower_is_better: false,
        decimals: 0,
    },
    Metric {
        name: "API CPU µs/order",
        read: |c| c.per_order.as_ref().map(|p| p.api_cpu_us),
        lower_is_better: true,
        decimals: 0,
    },
    Metric {
        name: "API user µs/order",
        read: |c| c.per_order.as_ref().map(|p| p.api_user_us),
        lower_is_better: true,
        decimals: 0,
    },
    Metric {
        name: "API system µs/order",
        read: |c| c.per_order.as_ref().map(|p| p.api_system_us),
        lower_is_better: true,
        decimals: 0,
    },
    Metric {
        name: "context switches/order",
        read: |c| c.per_order.as_ref().map(|p| p.context_switches),
        lower_is_better: true,
        decimals: 1,
    },
    Metric {
        name: "SQL statements/order",
        read: |c| c.per_order.as_ref().and_then(|p| p.sql_statements),
        lower_is_better: true,
        decimals: 2,
    },
    Metric {
        name: "SQL statements on the order's path",
        read: |c| c.order_path_statements.map(|n| n as f64),
        lower_is_better: true,
        decimals: 0,
    },
    Metric {
        name: "HTTP calls/order",
        read: |c| c.per_order.as_ref().and_then(|p| p.http_calls),
        lower_is_better: true,
        decimals: 2,
    },
    Metric {
        name: "PostgreSQL µs/order",
        read: |c| c.per_order.as_ref().and_then(|p| p.postgres_cpu_us),
        lower_is_better: true,
        decimals: 0,
    },
    Metric {
        name: "mock-deps µs/order",
        read: |c| c.per_order.as_ref().and_then(|p| p.mock_deps_cpu_us),
        lower_is_better: true,
        decimals: 0,
    },
    Metric {
        name: "generator µs/order",
        read: |c| c.per_order.as_ref().and_then(|p| p.generator_cpu_us),
        lower_is_better: true,
        decimals: 0,
    },
    Metric {
        name: "peak RSS MiB",
        read: |c| Some(c.memory.peak_rss_bytes as f64 / (1 << 20) as f64),
        lower_is_better: true,
        decimals: 1,
    },
];

/// Changes smaller than this, in percent, are not called better or worse: two benches on the
/// same build differ by about that much on a quiet machine (more on a shared one).
pub const NOISE_PCT: f64 = 3.0;

/// One figure of one cell, before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffRow {
    pub api: String,
    pub mocks: String,
    pub metric: &'static str,
    pub before: Option<f64>,
    pub after: Option<f64>,
    pub lower_is_better: bool,
    pub decimals: usize,
}

impl DiffRow {
    /// Relative change in percent (`None` without both values or from 0).
    pub fn change_pct(&self) -> Option<f64> {
        let (b, a) = (self.before?, self.after?);
        (b != 0.0).then(|| 100.0 * (a - b) / b)
    }

    /// `Some(true)` when the change is for the better (by more than [`NOISE_PCT`]), `Some(false)`
    /// for the worse, `None` when within it or unknown.
    pub fn better(&self) -> Option<bool> {
        let c = self.change_pct()?;
        if c.abs() < NOISE_PCT {
            return None;
        }
        Some((c < 0.0) == self.lower_is_better)
    }
}

/// Every figure of every cell of `current` against `baseline`'s same cell; a cell only one side
/// has gets rows with the other side empty.
pub fn diff(baseline: &BenchResults, current: &BenchResults) -> Vec<DiffRow> {
    let mut keys: Vec<(&str, &str)> = current
        .cells
        .iter()
        .map(|c| (c.api.as_str(), c.mocks.as_str()))
        .collect();
    for c in &baseline.cells {
        if !keys.contains(&(c.api.as_str(), c.mocks.as_str())) {
            keys.push((c.api.as_str(), c.mocks.as_str()));
        }
    }
    let mut rows = Vec::new();
    for (api, mocks) in keys {
        let (b, a) = (baseline.cell(api, mocks), current.cell(api, mocks));
        for m in METRICS {
            rows.push(DiffRow {
                api: api.to_owned(),
                mocks: mocks.to_owned(),
                metric: m.name,
                before: b.and_then(m.read),
                after: a.and_then(m.read),
                lower_is_better: m.lower_is_better,
                decimals: m.decimals,
            });
        }
    }
    rows
}

/// The diff as a markdown section.
pub fn render(rows: &[DiffRow], baseline: Option<&Path>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## Change against the baseline{}\n",
        baseline.map_or(String::new(), |p| format!(" ({})", p.display()))
    );
    let mut table = Table::new([
        Column::left("API"),
        Column::left("mocks"),
        Column::left("figure"),
        Column::right("baseline"),
        Column::right("now"),
        Column::right("change"),
    ]);
    for r in rows {
        let change = match (r.change_pct(), r.better()) {
            (Some(c), Some(true)) => format!("{c:+.1} % (better)"),
            (Some(c), Some(false)) => format!("{c:+.1} % (**worse**)"),
            (Some(c), None) => format!("{c:+.1} %"),
            (None, _) if r.before.is_none() && r.after.is_some() => "new".to_owned(),
            (None, _) if r.after.is_none() && r.before.is_some() => "not measured now".to_owned(),
            (None, _) => NONE.to_owned(),
        };
        table.push_row([
            r.api.clone(),
            r.mocks.clone(),
            r.metric.to_owned(),
            fixed(r.before, r.decimals),
            fixed(r.after, r.decimals),
            change,
        ]);
    }
    let _ = writeln!(s, "{table}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab_results::bench::{MemoryFigures, WindowCounts};
    use lab_results::{Environment, Limits, MockLatencies};
    use std::collections::BTreeMap;

    fn cell(api: &str, mocks: &str, orders: u64, api_cpu_s: f64) -> BenchCell {
        let w = WindowCounts {
            seconds: 20.0,
            orders,
            api_user_s: api_cpu_s / 2.0,
            api_system_s: api_cpu_s / 2.0,
            sql_statements: Some(orders * 3),
            http_calls: Some(orders * 3),
            postgres_cpu_s: Some(1.0),
            ..Default::default()
        };
        BenchCell {
            api: api.to_owned(),
            mocks: mocks.to_owned(),
            mock_latency_ms: MockLatencies {
                seller: 0,
                risk: 0,
                payment: 0,
            },
            clients: 32,
            limits: Limits {
                limits_enforced: false,
                cpu_cores: None,
                cpu_period_us: None,
                cpu_burst_us: None,
                memory_bytes: None,
                mechanism: "none".to_owned(),
                note: String::new(),
                pinning: None,
            },
            per_order: crate::bench::analysis::per_order(&w),
            orders_per_s: w.orders_per_s(),
            api_cpu_share: w.api_cpu_share(),
            window: w,
            memory: MemoryFigures {
                peak_rss_bytes: 30 << 20,
                ..Default::default()
            },
            statements: Vec::new(),
            order_path_statements: Some(3),
            outcomes: BTreeMap::new(),
            bound: None,
            cpu_by_role: None,
        }
    }

    fn bench(cells: Vec<BenchCell>) -> BenchResults {
        BenchResults {
            schema_version: 1,
            started_at: String::new(),
            command: String::new(),
            environment: Environment::default(),
            settings: lab_results::bench::BenchSettings {
                warmup_s: 5.0,
                seconds: 20.0,
                db_durability: "on".to_owned(),
                db_rtt_ms: 0.0,
                api_settings: BTreeMap::new(),
                pinning: None,
            },
            cells,
            memory_slopes: Vec::new(),
            targets: Vec::new(),
            notes: Vec::new(),
            instruction_settings: None,
            instructions: Vec::new(),
        }
    }

    #[test]
    fn the_same_cell_is_compared_and_the_direction_is_judged() {
        let before = bench(vec![
            cell("reactive-api", "0ms", 8000, 8.0),
            cell("blocking-api", "seed", 1800, 1.0),
        ]);
        let after = bench(vec![cell("reactive-api", "0ms", 10_000, 5.0)]);
        let rows = diff(&before, &after);
        let find = |api: &str, metric: &str| {
            rows.iter()
                .find(|r| r.api == api && r.metric == metric)
                .unwrap()
        };
        let rate = find("reactive-api", "orders/s");
        assert_eq!((rate.before, rate.after), (Some(400.0), Some(500.0)));
        assert_eq!(rate.change_pct(), Some(25.0));
        assert_eq!(rate.better(), Some(true), "more orders/s is better");
        let cpu = find("reactive-api", "API CPU µs/order");
        assert_eq!((cpu.before, cpu.after), (Some(1000.0), Some(500.0)));
        assert_eq!(cpu.better(), Some(true), "less CPU per order is better");
        let sql = find("reactive-api", "SQL statements/order");
        assert_eq!(sql.better(), None, "3 → 3: unchanged");
        let pg = find("reactive-api", "PostgreSQL µs/order");
        assert_eq!(
            pg.better(),
            Some(true),
            "1 s over more orders: 125 → 100 µs"
        );
        let gone = find("blocking-api", "orders/s");
        assert_eq!((gone.before, gone.after), (Some(90.0), None));
        assert_eq!(rows.len(), 2 * METRICS.len());
        let md = render(&rows, Some(Path::new("old/bench.json")));
        assert!(md.contains("(old/bench.json)"), "{md}");
        assert!(
            md.contains("| reactive-api | 0ms | orders/s | 400 | 500 | +25.0 % (better) |"),
            "{md}"
        );
        assert!(
            md.contains("| blocking-api | seed | orders/s | 90 | — | not measured now |"),
            "{md}"
        );
    }

    #[test]
    fn the_full_table_renders_every_section() {
        let mut r = bench(vec![cell("reactive-api", "0ms", 8000, 8.0)]);
        r.targets = crate::bench::analysis::targets(&r.cells, &[]);
        let md = super::super::render::markdown(&r);
        for section in [
            "## Per order",
            "## Conditions",
            "## Memory",
            "## The bench's targets",
        ] {
            assert!(md.contains(section), "{section} missing:\n{md}");
        }
        assert!(
            md.contains("| reactive-api | 0ms | 32 | 400 | 1000 (500 + 500) |"),
            "{md}"
        );
        assert!(
            md.contains("| reactive-api CPU per order (mocks 0 ms) | 1000 µs | 250 µs | **no** |"),
            "{md}"
        );
        assert!(
            md.contains("| reactive-api SQL statements per order (mocks 0ms) | 3 | 3 | yes |"),
            "{md}"
        );
    }

    #[test]
    fn each_cell_with_a_split_prints_its_roles_per_order() {
        let mut with = cell("reactive-api", "0ms", 8000, 8.0);
        with.cpu_by_role = Some(lab_results::CpuByRole {
            from_s: 0.0,
            to_s: 20.0,
            snapshots: 21,
            roles: vec![lab_results::RoleCpu {
                role: lab_results::ThreadRole::EventLoop,
                threads: 1,
                exited: 0,
                user_s: 6.0,
                system_s: 2.0,
                run_s: Some(8.0),
                voluntary: 16_000,
                involuntary: 800,
            }],
        });
        let md = super::super::render::markdown(&bench(vec![with]));
        assert!(md.contains("## API CPU per order by thread role"), "{md}");
        // 8 CPU-s over 8,000 orders: 1 ms each, 2 voluntary and 0.1 involuntary switches.
        assert!(
            md.contains("| event loop | 1 | 1.000 | 0.750 | 0.250 | 100.0 % | 2.00 | 0.10 |"),
            "{md}"
        );
        let without =
            super::super::render::markdown(&bench(vec![cell("reactive-api", "0ms", 8000, 8.0)]));
        assert!(!without.contains("by thread role"));
    }
}
