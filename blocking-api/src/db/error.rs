//! How a failed database call is classed: by its SQLSTATE (`order_core::domain::db_failure`), a lost
//! connection noted for the pool (`connections.rs`), a call given up at the client deadline. The
//! twin of reactive-api's `db/error.rs`.

use order_core::domain::error::ApiError;

use crate::connections;

/// A `BEGIN` that failed: no transaction was opened, and a connection that cannot even begin is
/// as good as none — 503, like a failed checkout. A failure that may have lost the connection is
/// noted for the pool by `db_error`, as reactive-api's `begin_failed` does.
pub(crate) fn begin_failed(e: diesel::result::Error) -> ApiError {
    if connections::is_deadline(&e) {
        return db_error(e);
    }
    match db_error(e) {
        ApiError::Internal(cause) => ApiError::DatabaseUnavailable(cause),
        unavailable => unavailable,
    }
}

pub(crate) fn not_found_is_none<T>(e: diesel::result::Error) -> Result<Option<T>, ApiError> {
    match e {
        diesel::result::Error::NotFound => Ok(None),
        other => Err(db_error(other)),
    }
}

/// A server error is judged by its SQLSTATE (`order_core::domain::db_failure`), never by its message
/// text. diesel hides the SQLSTATE behind its error kinds, so [`sqlstate`] gives back the code of
/// each kind it names; the others (`Unknown`: timeouts, shutdowns, deadlocks, bugs alike) are
/// judged unknown — 503, never voided — and may have lost their connection, which is noted for
/// the pool (`connections.rs`): each pooled connection then pays one ping. A call given up at
/// the client deadline is `db_failure::client_deadline`: unknown, never voided.
pub(crate) fn db_error(e: diesel::result::Error) -> ApiError {
    use diesel::result::Error;
    use order_core::domain::db_failure::{self, DbFailure};
    if connections::is_deadline(&e) {
        // The other pooled connections may share the frozen path: each tests itself once.
        order_core::plumbing::connections::note_possible_loss();
        return db_failure::client_deadline();
    }
    let judged = match &e {
        Error::DatabaseError(kind, _) => {
            let code = sqlstate(kind);
            if code.is_none_or(order_core::plumbing::connections::sqlstate_may_lose) {
                order_core::plumbing::connections::note_possible_loss();
            }
            db_failure::judge(code)
        }
        Error::BrokenTransactionManager => {
            order_core::plumbing::connections::note_possible_loss();
            DbFailure::Transient
        }
        _ => DbFailure::Bug,
    };
    judged.into_api_error(e.into())
}

/// The SQLSTATE behind each of diesel's error kinds, as diesel chose the kind from it
/// (`diesel::pg::connection::result`); `None` for the kinds that do not name one.
fn sqlstate(kind: &diesel::result::DatabaseErrorKind) -> Option<&'static str> {
    use diesel::result::DatabaseErrorKind as Kind;
    Some(match kind {
        Kind::UniqueViolation => "23505",
        Kind::ForeignKeyViolation => "23503",
        Kind::NotNullViolation => "23502",
        Kind::CheckViolation => "23514",
        Kind::RestrictViolation => "23001",
        Kind::ExclusionViolation => "23P01",
        Kind::SerializationFailure => "40001",
        Kind::ReadOnlyTransaction => "25006",
        // diesel also reports a connection libpq found broken this way, whatever the code.
        Kind::ClosedConnection | Kind::UnableToSendCommand => "08006",
        _ => return None,
    })
}
