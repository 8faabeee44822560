//! The error taxonomy shared by every model client.

use std::time::Duration;

/// Why a model request failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// 401/403: bad or missing credentials. Never retried.
    #[error("authentication failed (HTTP {status}): {body}")]
    Auth {
        /// HTTP status.
        status: u16,
        /// Provider's error body.
        body: String,
    },
    /// 429: slow down. Retried, honouring `retry_after`.
    #[error("rate limited (HTTP 429): {body}")]
    RateLimited {
        /// The server's Retry-After, if it sent one.
        retry_after: Option<Duration>,
        /// Provider's error body.
        body: String,
    },
    /// 5xx: the provider failed. Retried.
    #[error("model server error (HTTP {status}): {body}")]
    Server {
        /// HTTP status.
        status: u16,
        /// Provider's error body.
        body: String,
    },
    /// Any other 4xx: the request itself is wrong. Never retried.
    #[error("request rejected (HTTP {status}): {body}")]
    BadRequest {
        /// HTTP status.
        status: u16,
        /// Provider's error body.
        body: String,
    },
    /// The server could not be reached. Retried.
    #[error("cannot reach model server at {url}: {reason}")]
    Connect {
        /// The URL that was tried.
        url: String,
        /// What the network stack said.
        reason: String,
    },
    /// The stream carried something that is not the provider's format.
    #[error("malformed model stream: {0}")]
    MalformedStream(String),
    /// The connection dropped before the answer was complete.
    #[error("model stream ended early: {0}")]
    StreamCut(String),
    /// The client was configured wrongly (bad URL, missing key, ...).
    #[error("model client misconfigured: {0}")]
    Config(String),
}

impl ModelError {
    /// True if trying the same request again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ModelError::RateLimited { .. } | ModelError::Server { .. } | ModelError::Connect { .. }
        )
    }
}
