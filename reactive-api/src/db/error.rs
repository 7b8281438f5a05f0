//! How a failed database call is classed: by its SQLSTATE (`order_core::domain::db_failure`), a lost
//! connection noted for the pool (`connections.rs`), a call given up at the client deadline. The
//! twin of blocking-api's `db/error.rs`.

use order_core::domain::db_failure::{self, DbFailure};
use order_core::domain::error::ApiError;

use crate::connections;

/// A `BEGIN` that failed: no transaction was opened, and a connection that cannot even begin is
/// as good as none — 503, like a failed acquire.
pub(crate) fn begin_failed(e: sqlx::Error) -> ApiError {
    connections::note_failure(&e);
    if connections::is_deadline(&e) {
        return db_failure::client_deadline();
    }
    ApiError::DatabaseUnavailable(e.into())
}

/// Pool timeouts and lost connections are `database_unavailable`; a server error is judged by
/// its SQLSTATE (`order_core::domain::db_failure`: what may pass is 503, a refusal of the rows is marked
/// for recovery); anything else is a bug. Every failure that may have lost its connection is
/// noted for the pool (`connections.rs`). A call given up at the client deadline is
/// `db_failure::client_deadline`: unknown, never voided.
pub(crate) fn db_error(e: sqlx::Error) -> ApiError {
    connections::note_failure(&e);
    if connections::is_deadline(&e) {
        return db_failure::client_deadline();
    }
    let judged = match &e {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed
        | sqlx::Error::BeginFailed => DbFailure::Transient,
        sqlx::Error::Database(db) => db_failure::judge(db.code().as_deref()),
        _ => DbFailure::Bug,
    };
    judged.into_api_error(e.into())
}
