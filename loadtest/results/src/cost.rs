//! Cost per order that two machines agree on (`loadtest bench --instructions`): instructions the
//! API executes per order, counted by valgrind, and what PostgreSQL writes and reads per order,
//! from its own counters. Neither depends on the machine's speed or on its other tenants, so a
//! change in them is a change in the code, and [`gate`] can hold them against a committed
//! [`CostBaseline`].
//!
//! [`PgCounters`] also go into every `loadtest bench` window ([`crate::bench::WindowCounts`]).

use serde::{Deserialize, Serialize};

/// How much instructions per order may rise against the baseline before [`gate`] fails.
pub const INSTRUCTIONS_TOLERANCE: f64 = 0.05;
/// How much WAL bytes per order may rise against the baseline before [`gate`] fails.
pub const WAL_BYTES_TOLERANCE: f64 = 0.10;

/// PostgreSQL's cumulative counters at one instant, or their change over a window: `pg_stat_wal`
/// (the whole cluster: WAL is one stream) and `pg_stat_database` of the orders' database.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PgCounters {
    /// WAL records written.
    pub wal_records: u64,
    /// Full-page images among them (a page's first change after a checkpoint).
    pub wal_fpi: u64,
    /// WAL bytes written.
    pub wal_bytes: u64,
    /// WAL flushes to disk (`pg_stat_wal.wal_sync`): commits that waited for their WAL, or the
    /// WAL writer's. Counted where `fsync` is on; 0 without it.
    #[serde(default)]
    pub wal_syncs: u64,
    /// Transactions committed (`xact_commit`; the lab's own statements count a handful).
    pub commits: u64,
    /// Transactions rolled back (`xact_rollback`).
    pub rollbacks: u64,
    /// Pages found in shared buffers (`blks_hit`) and read from the OS (`blks_read`).
    pub blocks_hit: u64,
    pub blocks_read: u64,
}

impl PgCounters {
    /// The change from `self` to `end` (a counter reset in between reads as 0, not negative).
    pub fn delta(&self, end: &PgCounters) -> PgCounters {
        PgCounters {
            wal_records: end.wal_records.saturating_sub(self.wal_records),
            wal_fpi: end.wal_fpi.saturating_sub(self.wal_fpi),
            wal_bytes: end.wal_bytes.saturating_sub(self.wal_bytes),
            wal_syncs: end.wal_syncs.saturating_sub(self.wal_syncs),
            commits: end.commits.saturating_sub(self.commits),
            rollbacks: end.rollbacks.saturating_sub(self.rollbacks),
            blocks_hit: end.blocks_hit.saturating_sub(self.blocks_hit),
            blocks_read: end.blocks_read.saturating_sub(self.blocks_read),
        }
    }

    /// Each counter ÷ `orders`; `None` for no order.
    pub fn per_order(&self, orders: u64) -> Option<PgPerOrder> {
        if orders == 0 {
            return None;
        }
        let each = |c: u64| c as f64 / orders as f64;
        Some(PgPerOrder {
            wal_records: each(self.wal_records),
            wal_fpi: each(self.wal_fpi),
            wal_bytes: each(self.wal_bytes),
            wal_syncs: each(self.wal_syncs),
            commits: each(self.commits),
            rollbacks: each(self.rollbacks),
            blocks_hit: each(self.blocks_hit),
            blocks_read: each(self.blocks_read),
        })
    }
}

/// [`PgCounters`] of a window ÷ its orders.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PgPerOrder {
    pub wal_records: f64,
    pub wal_fpi: f64,
    pub wal_bytes: f64,
    #[serde(default)]
    pub wal_syncs: f64,
    pub commits: f64,
    pub rollbacks: f64,
    pub blocks_hit: f64,
    pub blocks_read: f64,
}

/// How `loadtest bench --instructions` ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstructionSettings {
    /// Orders before the window (not counted): the pools' connections, caches, first pages.
    pub warmup_orders: u64,
    /// Orders in the window.
    pub orders: u64,
    /// Closed-loop clients.
    pub clients: u64,
    /// `valgrind --version`, and the tool (`callgrind`).
    pub valgrind: String,
    /// Whether this machine has hardware instruction counters (`perf stat -e instructions`), and
    /// what perf said when it has not.
    #[serde(default)]
    pub hardware_counters: String,
}

/// One API's instructions and PostgreSQL's counters over a window of a fixed number of orders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstructionCell {
    pub api: String,
    /// Orders persisted in the window (`count(*) FROM orders` at both ends).
    pub orders: u64,
    /// Wall-clock length of the window under valgrind, seconds (not a cost: valgrind is slow).
    pub window_s: f64,
    /// User-space instructions of the whole API process in the window (callgrind's total).
    pub instructions: u64,
    pub instructions_per_order: f64,
    /// The same instructions by where they were executed (each function's own instructions,
    /// grouped by crate or library; the groups add up to the total), largest first.
    pub groups: Vec<CostShare>,
    /// The functions with the most inclusive instructions (their own and their callees'; a
    /// caller and its callee both appear, so these overlap), largest first.
    pub frames: Vec<FrameCost>,
    /// PostgreSQL over the same window; `None` when it could not be read.
    pub postgres: Option<PgCounters>,
    pub postgres_per_order: Option<PgPerOrder>,
}

/// Instructions of one group per order, and its share of the total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostShare {
    pub name: String,
    pub per_order: f64,
    pub share: f64,
}

/// One function's instructions per order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameCost {
    pub name: String,
    /// Its [`group_of`].
    pub group: String,
    pub inclusive_per_order: f64,
    pub self_per_order: f64,
}

/// The group a function's instructions belong to: its crate (the first path segment of its
/// demangled name, so `<hyper::Conn as tokio::io::AsyncRead>::poll_read` is hyper's), gathered
/// into the parts of an order's path; shared C libraries by their object file.
pub fn group_of(name: &str, object: &str) -> String {
    let file = object.rsplit('/').next().unwrap_or(object);
    if file.starts_with("libpq") {
        return "libpq (diesel's driver)".to_owned();
    }
    if file.starts_with("libc.") || file.starts_with("ld-linux") || file.starts_with("libm.") {
        return "libc (malloc/free, memcpy, system-call stubs)".to_owned();
    }
    if file.starts_with("libssl") || file.starts_with("libcrypto") {
        return "OpenSSL".to_owned();
    }
    let krate = first_crate(name);
    let group = match krate {
        "reactive_api" | "blocking_api" | "order_core" | "event_broker" => {
            "the order's own code (API, order-core)"
        }
        k if k.starts_with("actix") => "actix-web (server)",
        "hyper" | "hyper_util" | "h2" | "http" | "httparse" | "http_body" | "http_body_util" => {
            "hyper, http (HTTP/1.1 client and types)"
        }
        "reqwest" => "reqwest",
        k if k.starts_with("sqlx") => "sqlx",
        k if k.starts_with("diesel") => "diesel",
        k if k.starts_with("deadpool") => "deadpool (pool)",
        "r2d2" => "r2d2 (pool)",
        "serde_json" | "serde" | "serde_core" => "serde, serde_json",
        "tokio" | "mio" | "tokio_util" => "tokio (scheduler, I/O driver, timers)",
        k if k.starts_with("tracing") => "tracing",
        "core" | "alloc" | "std" | "hashbrown" => "Rust core/alloc/std",
        "" => "unnamed",
        other => other,
    };
    group.to_owned()
}

/// The first path segment of a demangled Rust name (`""` for a name without one, e.g. `memcpy`).
fn first_crate(name: &str) -> &str {
    let mut s = name.trim_start_matches(['<', '&', '(', '*']);
    for prefix in ["dyn ", "mut ", "const ", "impl "] {
        s = s.strip_prefix(prefix).unwrap_or(s);
    }
    let s = s.trim_start_matches(['<', '&', '*']);
    match s.find("::") {
        Some(i) if s[..i].chars().all(|c| c.is_alphanumeric() || c == '_') => &s[..i],
        _ => "",
    }
}

/// The committed reference (`docs/bench/baseline.json`) [`gate`] holds a run against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostBaseline {
    /// Why these are the figures (a new baseline is a deliberate commit that says why).
    pub why: String,
    /// The command that measured them, the commit and the date.
    pub command: String,
    pub commit: String,
    pub measured_at: String,
    pub apis: Vec<BaselineApi>,
}

/// One API's reference figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineApi {
    pub api: String,
    pub instructions_per_order: f64,
    pub wal_bytes_per_order: f64,
}

impl CostBaseline {
    /// The baseline a run's cells make.
    pub fn of(cells: &[InstructionCell], why: &str, command: &str, commit: &str, at: &str) -> Self {
        CostBaseline {
            why: why.to_owned(),
            command: command.to_owned(),
            commit: commit.to_owned(),
            measured_at: at.to_owned(),
            apis: cells
                .iter()
                .map(|c| BaselineApi {
                    api: c.api.clone(),
                    instructions_per_order: c.instructions_per_order,
                    wal_bytes_per_order: c.postgres_per_order.map_or(0.0, |p| p.wal_bytes),
                })
                .collect(),
        }
    }
}

/// One figure held against its baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateLine {
    pub api: String,
    /// `instructions per order` or `WAL bytes per order`.
    pub figure: String,
    pub baseline: f64,
    /// `None` when this run did not measure it (which fails the gate).
    pub measured: Option<f64>,
    /// The most it may rise, as a fraction of the baseline.
    pub tolerance: f64,
}

impl GateLine {
    /// measured ÷ baseline − 1.
    pub fn change(&self) -> Option<f64> {
        let m = self.measured?;
        (self.baseline > 0.0).then(|| m / self.baseline - 1.0)
    }

    /// Within its tolerance (a fall is always within it).
    pub fn passes(&self) -> bool {
        match (self.measured, self.change()) {
            (Some(_), Some(c)) => c <= self.tolerance,
            // A zero baseline: any measured figure passes only if it is zero too.
            (Some(m), None) => m <= 0.0,
            (None, _) => false,
        }
    }
}

/// Every baseline figure against this run's cells: instructions per order may rise by
/// [`INSTRUCTIONS_TOLERANCE`], WAL bytes per order by [`WAL_BYTES_TOLERANCE`].
pub fn gate(baseline: &CostBaseline, cells: &[InstructionCell]) -> Vec<GateLine> {
    let mut out = Vec::new();
    for b in &baseline.apis {
        let cell = cells.iter().find(|c| c.api == b.api);
        out.push(GateLine {
            api: b.api.clone(),
            figure: "instructions per order".to_owned(),
            baseline: b.instructions_per_order,
            measured: cell.map(|c| c.instructions_per_order),
            tolerance: INSTRUCTIONS_TOLERANCE,
        });
        out.push(GateLine {
            api: b.api.clone(),
            figure: "WAL bytes per order".to_owned(),
            baseline: b.wal_bytes_per_order,
            measured: cell.and_then(|c| c.postgres_per_order.map(|p| p.wal_bytes)),
            tolerance: WAL_BYTES_TOLERANCE,
        });
    }
    out
}

#[cfg(test)]
#[path = "cost_tests.rs"]
mod tests;
