//! GitHub App installation tokens as both sides of the protocol see them.
//! The control plane holds the app's key and mints short-lived installation
//! tokens for the runners (`gantry_control_plane::github`); a runner asks for
//! them over `ListGithubInstallationsForRunner` and
//! `GetGithubInstallationAccessTokenForRunner`.
//!
//! A token is a credential: it lives in memory only, and is never logged
//! ([`InstallationToken`]'s `Debug` hides it; no error message carries it).

use std::fmt;

/// A short-lived access token for one installation of the GitHub App.
#[derive(Clone, PartialEq, Eq)]
pub struct InstallationToken {
    /// The installation it opens.
    pub installation_id: i64,
    /// The token itself (`ghs_...`). Secret: never log or store it.
    pub token: String,
    /// When GitHub stops accepting it, Unix time in milliseconds.
    pub expires_at_ms: i64,
    /// Full names (`owner/name`) of the repositories it opens.
    pub repositories: Vec<String>,
}

impl InstallationToken {
    /// Whether it is still accepted for at least `margin_ms` after `now_ms`.
    pub fn is_fresh(&self, now_ms: i64, margin_ms: i64) -> bool {
        self.expires_at_ms.saturating_sub(margin_ms) > now_ms
    }
}

impl fmt::Debug for InstallationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InstallationToken")
            .field("installation_id", &self.installation_id)
            .field("token", &"<redacted>")
            .field("expires_at_ms", &self.expires_at_ms)
            .field("repositories", &self.repositories)
            .finish()
    }
}

/// Why a GitHub installation or token could not be had.
#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    /// No GitHub App is configured.
    #[error("no GitHub App is configured")]
    NotConfigured,
    /// The runner may not use this installation.
    #[error("runner {runner:?} may not use GitHub installation {installation_id}")]
    NotAllowed {
        /// The runner that asked.
        runner: String,
        /// The installation it asked for.
        installation_id: i64,
    },
    /// GitHub answered with an error.
    #[error("GitHub API answered {status}: {message}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// GitHub's `message` (or the start of the body).
        message: String,
    },
    /// GitHub could not be reached (connection, TLS, timeout).
    #[error("cannot reach the GitHub API at {url}: {reason}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The app's private key cannot sign.
    #[error("invalid GitHub App private key: {0}")]
    BadKey(String),
    /// Installation ids start at 1.
    #[error("invalid GitHub installation id {0}: ids start at 1")]
    InvalidInstallation(i64),
    /// Another part of the app's configuration is wrong (base URL...).
    #[error("invalid GitHub App configuration: {0}")]
    Config(String),
    /// GitHub or the control plane answered something unreadable or invalid.
    #[error("invalid answer from {0}")]
    InvalidResponse(String),
    /// The control plane refused the runner's request.
    #[error("the control plane refused the GitHub request ({code:?}): {message}")]
    ControlPlane {
        /// The gRPC status code.
        code: tonic::Code,
        /// The status message.
        message: String,
    },
}

/// The status a control plane answers a runner with.
impl From<GithubError> for tonic::Status {
    fn from(error: GithubError) -> Self {
        let message = error.to_string();
        match error {
            GithubError::NotConfigured => tonic::Status::unimplemented(message),
            GithubError::NotAllowed { .. } => tonic::Status::permission_denied(message),
            GithubError::Api { status: 404, .. } => tonic::Status::not_found(message),
            // GitHub is down or throttling: worth retrying later.
            GithubError::Api {
                status: 429 | 500..,
                ..
            }
            | GithubError::Unreachable { .. } => tonic::Status::unavailable(message),
            // The control plane's app is misconfigured (revoked key, wrong id...).
            GithubError::Api { .. } | GithubError::BadKey(_) | GithubError::Config(_) => {
                tonic::Status::failed_precondition(message)
            }
            GithubError::InvalidInstallation(_) => tonic::Status::invalid_argument(message),
            GithubError::InvalidResponse(_) => tonic::Status::internal(message),
            GithubError::ControlPlane { code, message } => tonic::Status::new(code, message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> InstallationToken {
        InstallationToken {
            installation_id: 7,
            token: "ghs_secret".into(),
            expires_at_ms: 10_000,
            repositories: vec!["acme/api".into()],
        }
    }

    #[test]
    fn debug_never_shows_the_token() {
        let shown = format!("{:?}", token());
        assert!(!shown.contains("ghs_secret"), "{shown}");
        assert!(shown.contains("acme/api") && shown.contains("<redacted>"));
    }

    #[test]
    fn a_token_is_fresh_only_until_the_margin_before_expiry() {
        let token = token();
        assert!(token.is_fresh(4_999, 5_000));
        assert!(!token.is_fresh(5_000, 5_000));
        assert!(!token.is_fresh(10_000, 0));
    }

    #[test]
    fn errors_become_statuses_a_runner_can_act_on() {
        let status = |e| tonic::Status::from(e).code();
        assert_eq!(
            status(GithubError::NotConfigured),
            tonic::Code::Unimplemented
        );
        let not_allowed = GithubError::NotAllowed {
            runner: "r".into(),
            installation_id: 7,
        };
        assert_eq!(status(not_allowed), tonic::Code::PermissionDenied);
        let api = |status| GithubError::Api {
            status,
            message: "m".into(),
        };
        assert_eq!(status(api(404)), tonic::Code::NotFound);
        assert_eq!(status(api(503)), tonic::Code::Unavailable);
        assert_eq!(status(api(401)), tonic::Code::FailedPrecondition);
    }
}
