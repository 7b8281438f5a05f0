//! blocking-api's database layer on diesel + r2d2: the SQL of `order_core::domain::sql`, run with
//! `sql_query`, each statement in autocommit (or in the request's held transaction with
//! `DB_TX_SCOPE=request`), every acquire bounded by `DB_POOL_TIMEOUT_MS` and measured (waiting,
//! wait time, timeouts). These functions block their thread; they only ever run on the blocking
//! pool. Every call is bounded by the client deadline (`connections::PgConn::run`,
//! `watchdog.rs`).
//!
//! One file per job, each the twin of reactive-api's file of the same name:
//! - [`tx`]: the transaction scope — [`Db`] (the pool), [`Tx`], [`Held`], [`Conn`], [`Step`]:
//!   acquire, begin, hold, commit, checkpoint, release;
//! - [`queries`]: the order path's statements (reserve, find a key, mark it `CHARGING`, complete
//!   it, persist the order, read an order back);
//! - [`recovery_queries`]: the recovery loop's statements (claim, defer, reassert, release);
//! - [`retention_queries`]: the retention sweep's statement;
//! - [`error`]: how a failed call is classed (SQLSTATE, lost connections, the client deadline);
//! - [`prepared`] (blocking-api only): diesel's statement cache opened to the fixed raw SQL.
//!
//! The URL, the sockets and the pool's connections are `connections.rs`.

pub mod error;
pub(crate) mod prepared;
pub mod queries;
pub mod recovery_queries;
pub mod retention_queries;
pub mod tx;

// The layer's handle and scope types, as the rest of the crate names them (`db::Db`).
pub use tx::{Conn, Db, Held, Step, Tx};
