//! The GitHub rpcs: the one place the control plane calls the GitHub App
//! ([`GithubInstallations`]) for an authenticated runner. Without an app
//! configured they answer `UNIMPLEMENTED`.

use gantry_runner_protocol::v0_2 as pb;
use gantry_runner_protocol::validate::Validate;
use tonic::Status;

use crate::auth::RunnerIdentity;
use crate::github::GithubInstallations;

/// `UNIMPLEMENTED` when no app is configured.
fn configured(app: Option<&dyn GithubInstallations>) -> Result<&dyn GithubInstallations, Status> {
    app.ok_or_else(|| Status::unimplemented("no GitHub App configured"))
}

/// `ListGithubInstallationsForRunner`: the installations the runner may use
/// (the app scopes them by runner name).
pub(crate) async fn installations(
    app: Option<&dyn GithubInstallations>,
    runner: &RunnerIdentity,
) -> Result<pb::ListGithubInstallationsForRunnerResponse, Status> {
    let ids = configured(app)?.installations(&runner.name).await?;
    let response = pb::ListGithubInstallationsForRunnerResponse {
        installations: ids
            .into_iter()
            .map(|installation_id| pb::GithubInstallationForRunner { installation_id })
            .collect(),
    };
    response
        .validate()
        .map_err(|v| Status::internal(format!("GitHub App answered {v}")))?;
    Ok(response)
}

/// `GetGithubInstallationAccessTokenForRunner`: a fresh token for one of
/// the runner's installations.
pub(crate) async fn token(
    app: Option<&dyn GithubInstallations>,
    runner: &RunnerIdentity,
    request: &pb::GetGithubInstallationAccessTokenForRunnerRequest,
) -> Result<pb::GetGithubInstallationAccessTokenForRunnerResponse, Status> {
    let app = configured(app)?;
    request
        .validate()
        .map_err(|v| Status::invalid_argument(v.to_string()))?;
    let token = app.token(&runner.name, request.installation_id).await?;
    let response = pb::GetGithubInstallationAccessTokenForRunnerResponse {
        installation_id: token.installation_id,
        access_token: token.token,
        access_token_expires_unix_time_ms: token.expires_at_ms,
        repositories: token.repositories,
    };
    response
        .validate()
        .map_err(|v| Status::internal(format!("GitHub App answered {v}")))?;
    Ok(response)
}
