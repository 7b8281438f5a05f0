//! The body of `/health` and `/ready`, in its own module: `http` answers with it and `openapi`
//! documents it, and the route to the document is one of `http`'s.

use serde::Serialize;
use utoipa::ToSchema;

use crate::domain::error::ErrorCode;

/// The body of `/health` and `/ready`: the state, and for a 503 the reason's code and text.
#[derive(Serialize, ToSchema)]
pub struct Probe {
    pub status: ProbeStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorCode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProbeStatus {
    /// `/health`: the process is up.
    Ok,
    /// `/ready`: this process can serve (the database's state is in `/metrics`, not here).
    Ready,
    /// `/ready` from SIGTERM on (`error` is `shutting_down`).
    Draining,
}

impl Probe {
    pub(crate) fn of(status: ProbeStatus) -> Self {
        Probe {
            status,
            error: None,
            detail: None,
        }
    }
}
