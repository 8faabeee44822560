//! Why an API operation failed, in terms a caller can act on; the HTTP layer
//! maps each kind to its status code.

use crate::dispatch::DispatchError;
use crate::store::StoreError;

/// An API operation's failure.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    /// Bad input; the message names the field.
    #[error("{0}")]
    BadRequest(String),
    /// No such runner, agent or thread.
    #[error("{0}")]
    NotFound(String),
    /// Refused by the runner, or by the state of what it concerns.
    #[error("{0}")]
    Conflict(String),
    /// No runner to send it to.
    #[error("{0}")]
    Unavailable(String),
    /// The runner did not answer in time.
    #[error("{0}")]
    Timeout(String),
    /// The runner answered something that is not an answer to the request.
    #[error("{0}")]
    BadGateway(String),
    /// The control plane itself failed (its store).
    #[error("{0}")]
    Internal(String),
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        tracing::error!(error = %error, "control plane store failed");
        Self::Internal(error.to_string())
    }
}

impl From<DispatchError> for ApiError {
    fn from(error: DispatchError) -> Self {
        match error {
            DispatchError::Offline(_) => Self::Unavailable(error.to_string()),
            DispatchError::Timeout { .. } => Self::Timeout(error.to_string()),
        }
    }
}

/// `field: must not be empty` for an empty (or blank) string.
pub(crate) fn require(field: &str, value: &str) -> Result<(), ApiError> {
    if value.trim().is_empty() {
        return Err(ApiError::BadRequest(format!("{field}: must not be empty")));
    }
    Ok(())
}

/// [`require`] for an optional string that, when given, must not be empty.
pub(crate) fn require_if_given(field: &str, value: Option<&str>) -> Result<(), ApiError> {
    value.map_or(Ok(()), |v| require(field, v))
}
