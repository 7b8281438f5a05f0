//! The batching scenario's predicted ceiling: the most orders/s a run could reach if only its
//! round trips and WAL flushes left unbatched held it back, beside which its table shows each
//! row (`rows.rs`).
//!
//! The ceiling (Little's law, as beside the blocking plateau: connections ÷ time each order holds
//! one). An autocommit statement holds its pooled connection for one round trip, its execution in
//! PostgreSQL (pg_stat_statements' mean over the run) and one WAL flush (`pg_test_fsync`'s one 8 kB
//! write; with `commit_delay`, plus that delay): `t = RTT + exec + flush`. Neither API's pool
//! tests a connection on its way back (`order_core::plumbing::connections`). CPU and the wait for a
//! connection are left out, so this is a ceiling, not an estimate.
//! - Batch 1: three statements per order (reservation, `CHARGING`, persist):
//!   `POOL ÷ (3 t)` orders/s.
//! - Batch B > 1: two statements per order stay unbatched, on the pool less the writer's
//!   connection (it keeps it while orders keep coming), `(POOL − 1) ÷ (2 t)`; and the one writer
//!   commits at most B orders per batch statement, `B ÷ t_batch` (its own execution time; no
//!   release between batches). The ceiling is the lower of the two.
//!

pub use lab_results::batching::Ceiling;

/// What one statement holds its connection for, ms (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hold {
    pub rtt_ms: f64,
    /// One WAL flush, plus any `commit_delay`.
    pub flush_ms: f64,
    /// Mean execution of the requests' own statements (reservation, `CHARGING`, one-order persist).
    pub exec_ms: f64,
    /// Mean execution of the writer's batch statement.
    pub batch_exec_ms: f64,
}

impl Hold {
    /// A statement that executes for `exec_ms`: how long it holds its connection, ms, and that
    /// sum written out for the formula.
    fn of(&self, exec_ms: f64) -> (f64, String) {
        let text = format!(
            "({:.1} + {:.2} + {:.2}) ms",
            self.rtt_ms, exec_ms, self.flush_ms
        );
        (self.rtt_ms + exec_ms + self.flush_ms, text)
    }
}

/// See the module's doc.
pub fn ceiling(batch_max: usize, h: &Hold, pool: u32) -> Ceiling {
    let (t, t_text) = h.of(h.exec_ms);
    let pool = f64::from(pool);
    if batch_max <= 1 {
        return Ceiling {
            orders_per_s: 1000.0 * pool / (3.0 * t),
            bound: "pool",
            formula: format!("{pool} ÷ (3 × {t_text})"),
        };
    }
    let pooled = 1000.0 * (pool - 1.0) / (2.0 * t);
    let (t_batch, t_batch_text) = h.of(h.batch_exec_ms);
    let writer = 1000.0 * batch_max as f64 / t_batch;
    if writer < pooled {
        Ceiling {
            orders_per_s: writer,
            bound: "writer",
            formula: format!("{batch_max} ÷ {t_batch_text}"),
        }
    } else {
        Ceiling {
            orders_per_s: pooled,
            bound: "pool",
            formula: format!("{} ÷ (2 × {t_text})", pool - 1.0),
        }
    }
}
