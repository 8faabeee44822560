//! The GitHub App. The control plane holds the app's key ([`GithubApp`])
//! and mints short-lived installation tokens for the runners through
//! [`GithubInstallations`]; `rpcs` answers a runner's
//! `ListGithubInstallationsForRunner` and
//! `GetGithubInstallationAccessTokenForRunner` with them.
//!
//! A token is a credential: it lives in memory only, and is never logged
//! ([`InstallationToken`]'s `Debug` hides it; no error message carries it).

mod api;
mod app;
mod jwt;
pub(crate) mod rpcs;

use async_trait::async_trait;

pub use app::{GithubApp, GithubAppBuilder};
pub use gantry_runner_protocol::github::{GithubError, InstallationToken};

/// Installations and tokens of a GitHub App, scoped per runner.
///
/// `runner` is the runner as the control plane knows it (its name or id);
/// it scopes which installations are "associated with it".
#[async_trait]
pub trait GithubInstallations: Send + Sync {
    /// Ids of the installations the runner may use.
    async fn installations(&self, runner: &str) -> Result<Vec<i64>, GithubError>;

    /// A fresh token for one of them; [`GithubError::NotAllowed`] for any other.
    async fn token(
        &self,
        runner: &str,
        installation_id: i64,
    ) -> Result<InstallationToken, GithubError>;
}
