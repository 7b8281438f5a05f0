//! `loadtest bench --instructions --check FILE`: this run's cost per order held against the committed
//! baseline, and the parts of an order's path a function's instructions are counted in. The
//! tolerances are the bench's own; the results crate holds the figures and the baseline they are
//! held against.

use lab_results::cost::{CostBaseline, InstructionCell};
use serde::{Deserialize, Serialize};

/// How much instructions per order may rise against the baseline before [`gate`] fails.
pub const INSTRUCTIONS_TOLERANCE: f64 = 0.05;
/// How much WAL bytes per order may rise against the baseline before [`gate`] fails.
pub const WAL_BYTES_TOLERANCE: f64 = 0.10;

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
#[path = "cost_gate_tests.rs"]
mod tests;
