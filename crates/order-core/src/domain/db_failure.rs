//! How a database failure is judged — by its SQLSTATE, once, for both APIs' `db_error`.
//!
//! The judgement decides money. Recovery voids a charge only when the database *refuses this
//! order's rows for good* ([`DbFailure::Refused`]: an integrity constraint, class 23, or a data
//! error, class 22, which the same rows will meet again). Anything that may pass — a lost
//! connection (08), too many connections or a full disk (53), a shutdown, a statement timeout or a
//! cancel (57), a deadlock or a serialization failure (40), a lock timeout (55P03), an
//! idle-in-transaction timeout (25P03), a standby refusing writes (25006), an error outside
//! PostgreSQL (58) — is
//! [`DbFailure::Transient`]: the key stays `CHARGING` for the next pass and the client gets 503.
//! The judgement never reads the message text, which follows the server's `lc_messages`.
//!
//! sqlx gives every server error its SQLSTATE. diesel does not expose it: its
//! `DatabaseErrorKind` names the integrity violations, serialization failures and lost
//! connections, and reports every other server error as `Unknown`, with no diagnostic field that
//! carries the code (diesel reads `PG_DIAG_SQLSTATE` only to choose the kind). blocking-api maps
//! each named kind to its SQLSTATE and `Unknown` to none, which is [`DbFailure::Unknown`]: answered
//! 503 and never voided, like a transient failure. What that costs: under diesel a statement bug
//! (42xxx) answers 503 rather than 500, and a data error (22xxx) is retried by recovery rather than
//! voided — validation refuses the values PostgreSQL would (NUL bytes, out-of-range numbers) before
//! anything is charged, so that path is for bugs, which a person must look at anyway
//! (`recovery_deferred_keys` counts the keys waiting).
//!
//! A call the API gave up at its own deadline ([`ClientDeadline`]: no answer within
//! `DB_STATEMENT_TIMEOUT_MS` + `DB_CLIENT_MARGIN_MS`) carries no SQLSTATE and no verdict: the
//! statement may have committed, or never arrived. It is [`DbFailure::Unknown`] — 503, the key left
//! `CHARGING` for recovery, never voided; recovery re-asserts its claim, which reads the orders
//! table, before any void.

use crate::domain::error::ApiError;

/// What a failed statement means for the request and for recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbFailure {
    /// The database cannot serve us now; the same statement may succeed later.
    Transient,
    /// The database refuses these rows and will refuse them again (classes 22 and 23).
    Refused,
    /// Neither: a bug in our SQL (42), an internal error (XX), a raised exception (P0).
    Bug,
    /// The driver did not say which error it was (diesel's `Unknown`).
    Unknown,
}

/// The context attached to a [`DbFailure::Refused`] cause: recovery voids only what carries it.
#[derive(Debug, Clone, Copy)]
pub struct Refusal;

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the database refuses these rows for good")
    }
}

/// A database call given up at the client's deadline (`CommonSettings::db_client_deadline`): the
/// database did not answer, and its connection was closed.
#[derive(Debug, Clone, Copy)]
pub struct ClientDeadline;

impl std::fmt::Display for ClientDeadline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no answer from the database within the client deadline")
    }
}

impl std::error::Error for ClientDeadline {}

/// The request's error after a [`ClientDeadline`]: unknown (503, never voided).
pub fn client_deadline() -> ApiError {
    DbFailure::Unknown.into_api_error(anyhow::Error::new(ClientDeadline))
}

/// Whether the request failed because the database did not answer in time: then nothing more is
/// asked of it for this request (a release of the key would only wait as long again; its lease
/// runs out instead).
pub fn is_client_deadline(error: &ApiError) -> bool {
    matches!(error, ApiError::DatabaseUnavailable(cause) if cause.is::<ClientDeadline>())
}

/// Judges a failure from its SQLSTATE (`None`: the driver did not say).
pub fn judge(sqlstate: Option<&str>) -> DbFailure {
    let Some(code) = sqlstate else {
        return DbFailure::Unknown;
    };
    const TRANSIENT_CLASSES: [&str; 5] = ["08", "53", "57", "58", "40"];
    // Lock timeout, idle-in-transaction and transaction timeouts, and a read-only transaction
    // (the server is a standby, as after a failover until the new primary answers).
    const TRANSIENT_CODES: [&str; 4] = ["55P03", "25P03", "25P04", "25006"];
    match code {
        // 40002: a deferred constraint refused at commit — a class-23 refusal in class 40.
        "40002" => DbFailure::Refused,
        c if TRANSIENT_CLASSES.iter().any(|class| c.starts_with(class)) => DbFailure::Transient,
        c if TRANSIENT_CODES.contains(&c) => DbFailure::Transient,
        c if c.starts_with("22") || c.starts_with("23") => DbFailure::Refused,
        _ => DbFailure::Bug,
    }
}

impl DbFailure {
    /// The request's error: 503 `database_unavailable` for what may pass (and for what the driver
    /// could not name), 500 for the rest; a refusal carries [`Refusal`] for recovery.
    pub fn into_api_error(self, cause: anyhow::Error) -> ApiError {
        match self {
            DbFailure::Transient | DbFailure::Unknown => ApiError::DatabaseUnavailable(cause),
            DbFailure::Refused => ApiError::Internal(cause.context(Refusal)),
            DbFailure::Bug => ApiError::Internal(cause),
        }
    }
}

/// Whether an error is the database refusing the order's rows for good: the only database
/// failure after which recovery voids a charge.
pub fn is_refusal(error: &ApiError) -> bool {
    matches!(error, ApiError::Internal(cause) if cause.downcast_ref::<Refusal>().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_may_pass_is_transient() {
        for code in [
            "08006", "08001", "53300", "53100", "57P01", "57014", "58030", "40001", "40P01",
            "55P03", "25P03", "25006",
        ] {
            assert_eq!(judge(Some(code)), DbFailure::Transient, "{code}");
        }
    }

    #[test]
    fn only_constraint_and_data_errors_are_refusals() {
        for code in ["23505", "23514", "23503", "22001", "22021", "40002"] {
            assert_eq!(judge(Some(code)), DbFailure::Refused, "{code}");
        }
        for code in ["42601", "XX000", "P0001", "42P01"] {
            assert_eq!(judge(Some(code)), DbFailure::Bug, "{code}");
        }
        assert_eq!(judge(None), DbFailure::Unknown);
    }

    #[test]
    fn a_refusal_is_recognised_through_its_context_and_nothing_else_is() {
        let refused = DbFailure::Refused.into_api_error(anyhow::anyhow!("check violated"));
        assert!(is_refusal(&refused));
        assert_eq!(refused.code(), "internal_error");
        let bug = DbFailure::Bug.into_api_error(anyhow::anyhow!("syntax"));
        assert!(!is_refusal(&bug));
        for passing in [DbFailure::Transient, DbFailure::Unknown] {
            let e = passing.into_api_error(anyhow::anyhow!("gone"));
            assert!(matches!(e, ApiError::DatabaseUnavailable(_)));
            assert!(!is_refusal(&e));
            assert!(!is_client_deadline(&e));
        }
    }

    #[test]
    fn a_client_deadline_is_unavailable_and_never_a_refusal() {
        let e = client_deadline();
        assert!(is_client_deadline(&e));
        assert!(!is_refusal(&e));
        assert_eq!(e.code(), "database_unavailable");
    }
}
