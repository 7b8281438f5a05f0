//! reactive-api's database layer on sqlx: the SQL of `order_core::domain::sql`, run on pooled
//! `PgConnection`s (`connections.rs`: deadpool, because sqlx's own pool adds a round trip to
//! every checkout), each statement in autocommit (or in the request's held transaction with
//! `DB_TX_SCOPE=request`), every acquire bounded by `DB_POOL_TIMEOUT_MS` and measured (waiting,
//! wait time, timeouts), and every call bounded by the client deadline
//! (`connections::PgConn::run`).
//!
//! One file per job, each the twin of blocking-api's file of the same name:
//! - [`tx`]: the transaction scope — [`Db`] (the pool), [`Tx`], [`Held`], [`Conn`], [`Step`]:
//!   acquire, begin, hold, commit, checkpoint, release;
//! - [`queries`]: the order path's statements (reserve, find a key, mark it `CHARGING`, complete
//!   it, persist the order, read an order back);
//! - [`recovery_queries`]: the recovery loop's statements (claim, defer, reassert, release);
//! - [`retention_queries`]: the retention sweep's statement;
//! - [`error`]: how a failed call is classed (SQLSTATE, lost connections, the client deadline).
//!
//! The URL, the sockets and the pool's connections are `connections.rs`.

pub mod error;
pub mod queries;
pub mod recovery_queries;
pub mod retention_queries;
pub mod tx;

// The layer's handle and scope types, as the rest of the crate names them (`db::Db`).
pub use tx::{Conn, Db, Held, Step, Tx};
