//! The runner's side of the GitHub rpcs: it lists the installations the
//! control plane associates with it, fetches installation tokens, keeps each
//! in memory (never on disk) until five minutes before it expires, and hands
//! one to a single command through its environment ([`git_env`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use gantry_runner_protocol::github::{GithubError, InstallationToken};
use gantry_runner_protocol::v0_2 as pb;
use gantry_runner_protocol::v0_2::agent_runner_control_service_client::AgentRunnerControlServiceClient;
use gantry_runner_protocol::validate::Validate;
use tonic::body::Body;
use tonic::client::GrpcService;
use tonic::codegen::{Bytes, StdError};

/// A cached token is fetched again once it has less than this left, so a
/// command never starts with a token about to die.
const REFRESH_MARGIN_MS: i64 = 5 * 60 * 1000;

/// One installation's cached token; its lock makes concurrent asks for the
/// same installation wait for a single fetch.
type Slot = Arc<tokio::sync::Mutex<Option<InstallationToken>>>;

/// Installation tokens from the control plane, cached in memory.
pub struct GithubTokens<T> {
    client: AgentRunnerControlServiceClient<T>,
    slots: Mutex<HashMap<i64, Slot>>,
}

impl<T> std::fmt::Debug for GithubTokens<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The cache holds tokens: show none of it.
        f.debug_struct("GithubTokens").finish_non_exhaustive()
    }
}

impl<T> GithubTokens<T>
where
    T: GrpcService<Body> + Clone + Send + Sync + 'static,
    T::Future: Send,
    T::Error: Into<StdError>,
    T::ResponseBody: tonic::codegen::Body<Data = Bytes> + Send + 'static,
    <T::ResponseBody as tonic::codegen::Body>::Error: Into<StdError> + Send,
{
    /// Asks the control plane `client` is connected to (with whatever
    /// authentication its service adds).
    pub fn new(client: AgentRunnerControlServiceClient<T>) -> Self {
        GithubTokens {
            client,
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// Ids of the installations the control plane associates with this runner.
    pub async fn installations(&self) -> Result<Vec<i64>, GithubError> {
        let response = self
            .client
            .clone()
            .list_github_installations_for_runner(pb::ListGithubInstallationsForRunnerRequest {})
            .await
            .map_err(refused)?
            .into_inner();
        response.validate().map_err(invalid)?;
        Ok(response
            .installations
            .into_iter()
            .map(|i| i.installation_id)
            .collect())
    }

    /// A token for `installation_id`: the cached one while it has more than
    /// five minutes left, else a new one from the control plane.
    pub async fn token(&self, installation_id: i64) -> Result<InstallationToken, GithubError> {
        let request = pb::GetGithubInstallationAccessTokenForRunnerRequest { installation_id };
        if request.validate().is_err() {
            return Err(GithubError::InvalidInstallation(installation_id));
        }
        let slot = self.slot(installation_id);
        let mut cached = slot.lock().await;
        if let Some(token) = cached.as_ref()
            && token.is_fresh(now_ms(), REFRESH_MARGIN_MS)
        {
            return Ok(token.clone());
        }
        // An expired token is no use to anyone: forget it even if the fetch fails.
        *cached = None;
        let token = self.fetch(request).await?;
        if token.is_fresh(now_ms(), REFRESH_MARGIN_MS) {
            *cached = Some(token.clone());
        }
        Ok(token)
    }

    fn slot(&self, installation_id: i64) -> Slot {
        // The map only ever gains empty slots: one a panic interrupted is fine.
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.entry(installation_id).or_default().clone()
    }

    async fn fetch(
        &self,
        request: pb::GetGithubInstallationAccessTokenForRunnerRequest,
    ) -> Result<InstallationToken, GithubError> {
        let installation_id = request.installation_id;
        let response = self
            .client
            .clone()
            .get_github_installation_access_token_for_runner(request)
            .await
            .map_err(refused)?
            .into_inner();
        response.validate().map_err(invalid)?;
        // 0 is proto3's "not set"; any other id must be the one asked for.
        if response.installation_id != 0 && response.installation_id != installation_id {
            return Err(GithubError::InvalidResponse(format!(
                "the control plane: asked for installation {installation_id}, got a token for {}",
                response.installation_id
            )));
        }
        Ok(InstallationToken {
            installation_id,
            token: response.access_token,
            expires_at_ms: response.access_token_expires_unix_time_ms,
            repositories: response.repositories,
        })
    }
}

/// The environment of ONE command that lets `gh` and `git` over HTTPS act
/// with `token` on github.com: `GH_TOKEN` and `GITHUB_TOKEN` for `gh` (and
/// tools that read them), and an `http.https://github.com/.extraheader`
/// carrying the token as basic auth for `git`, set through git's
/// configuration-by-environment (`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>`,
/// `GIT_CONFIG_VALUE_<n>`), so nothing is written to any config file.
///
/// `GIT_CONFIG_COUNT=1` replaces config pairs the command would inherit
/// through the environment (git reads exactly COUNT pairs); `git -c` still
/// wins over it.
pub fn git_env(token: &InstallationToken) -> Vec<(String, String)> {
    git_env_of(&token.token)
}

/// [`git_env`] of a bare token.
pub(crate) fn git_env_of(token: &str) -> Vec<(String, String)> {
    // What GitHub's own actions/checkout sets: user `x-access-token`.
    let basic = STANDARD.encode(format!("x-access-token:{token}"));
    [
        ("GH_TOKEN", token.to_owned()),
        ("GITHUB_TOKEN", token.to_owned()),
        ("GIT_CONFIG_COUNT", "1".to_owned()),
        (
            "GIT_CONFIG_KEY_0",
            "http.https://github.com/.extraheader".to_owned(),
        ),
        (
            "GIT_CONFIG_VALUE_0",
            format!("AUTHORIZATION: basic {basic}"),
        ),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect()
}

/// The control plane's refusal, with its code.
fn refused(status: tonic::Status) -> GithubError {
    GithubError::ControlPlane {
        code: status.code(),
        message: status.message().to_owned(),
    }
}

fn invalid(violation: gantry_runner_protocol::validate::Violation) -> GithubError {
    GithubError::InvalidResponse(format!("the control plane: {violation}"))
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use async_trait::async_trait;
    use gantry_testkit::github::{APP_PRIVATE_KEY_PEM, APP_PUBLIC_KEY_PEM, FakeGithub};
    use tokio::net::TcpListener;
    use tokio::sync::oneshot;
    use tokio_stream::wrappers::TcpListenerStream;
    use tonic::transport::{Channel, Server};
    use tonic::{Request, Response, Status};

    use super::*;
    use gantry_control_plane::github::{GithubApp, GithubInstallations};
    use gantry_runner_protocol::v0_2::agent_runner_control_service_server::{
        AgentRunnerControlService, AgentRunnerControlServiceServer,
    };

    const APP_ID: i64 = 42;
    /// The runner the test control plane thinks it is talking to.
    const RUNNER: &str = "runner-1";

    /// The GitHub rpcs of a control plane, answered by `github` for [`RUNNER`].
    struct ControlPlane {
        github: Arc<dyn GithubInstallations>,
    }

    #[async_trait]
    impl AgentRunnerControlService for ControlPlane {
        async fn register_runner(
            &self,
            _: Request<pb::RegisterRunnerRequest>,
        ) -> Result<Response<pb::RegisterRunnerResponse>, Status> {
            Err(Status::unimplemented("not in this test"))
        }

        type ControlChannelStream = tokio_stream::Empty<Result<pb::ServerMessage, Status>>;

        async fn control_channel(
            &self,
            _: Request<tonic::Streaming<pb::ClientMessage>>,
        ) -> Result<Response<Self::ControlChannelStream>, Status> {
            Err(Status::unimplemented("not in this test"))
        }

        async fn list_github_installations_for_runner(
            &self,
            _: Request<pb::ListGithubInstallationsForRunnerRequest>,
        ) -> Result<Response<pb::ListGithubInstallationsForRunnerResponse>, Status> {
            let ids = self.github.installations(RUNNER).await?;
            let installations = ids
                .into_iter()
                .map(|installation_id| pb::GithubInstallationForRunner { installation_id })
                .collect();
            Ok(Response::new(
                pb::ListGithubInstallationsForRunnerResponse { installations },
            ))
        }

        async fn get_github_installation_access_token_for_runner(
            &self,
            request: Request<pb::GetGithubInstallationAccessTokenForRunnerRequest>,
        ) -> Result<Response<pb::GetGithubInstallationAccessTokenForRunnerResponse>, Status>
        {
            let id = request.into_inner().installation_id;
            let token = self.github.token(RUNNER, id).await?;
            Ok(Response::new(
                pb::GetGithubInstallationAccessTokenForRunnerResponse {
                    installation_id: token.installation_id,
                    access_token: token.token,
                    access_token_expires_unix_time_ms: token.expires_at_ms,
                    repositories: token.repositories,
                },
            ))
        }
    }

    /// A control plane that breaks the proto's rules.
    struct Broken;

    #[async_trait]
    impl GithubInstallations for Broken {
        async fn installations(&self, _: &str) -> Result<Vec<i64>, GithubError> {
            Ok(vec![7, 0])
        }
        async fn token(&self, _: &str, id: i64) -> Result<InstallationToken, GithubError> {
            Ok(InstallationToken {
                installation_id: id + 1,
                token: "ghs_x".into(),
                expires_at_ms: i64::MAX,
                repositories: Vec::new(),
            })
        }
    }

    /// A runner's [`GithubTokens`] connected to a real control plane on an
    /// ephemeral port whose GitHub rpcs `github` answers.
    struct Setup {
        tokens: GithubTokens<Channel>,
        _stop: oneshot::Sender<()>,
    }

    async fn connect(github: Arc<dyn GithubInstallations>) -> Setup {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let service = AgentRunnerControlServiceServer::new(ControlPlane { github });
        tokio::spawn(
            Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(TcpListenerStream::new(listener), async {
                    let _ = stopped.await;
                }),
        );
        let channel = Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        Setup {
            tokens: GithubTokens::new(AgentRunnerControlServiceClient::new(channel)),
            _stop: stop,
        }
    }

    /// A fake GitHub with installations 7 and 8, and the app it knows.
    fn github() -> FakeGithub {
        let github = FakeGithub::start(APP_ID, APP_PUBLIC_KEY_PEM).unwrap();
        github.add_installation(7, &["acme/api", "acme/web"]);
        github.add_installation(8, &["umbrella/site"]);
        github
    }

    fn app(github: &FakeGithub) -> GithubApp {
        GithubApp::builder(APP_ID.to_string(), APP_PRIVATE_KEY_PEM)
            .api_base_url(github.base_url())
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn a_token_is_fetched_once_and_reused_while_fresh() {
        let github = github();
        let setup = connect(Arc::new(app(&github))).await;

        let first = setup.tokens.token(7).await.unwrap();
        let second = setup.tokens.token(7).await.unwrap();
        assert_eq!(first, second);
        assert_eq!(first.repositories, ["acme/api", "acme/web"]);
        assert_eq!(github.token_installation(&first.token), Some(7));

        // Concurrent asks for another installation share one fetch.
        let (a, b) = tokio::join!(setup.tokens.token(8), setup.tokens.token(8));
        assert_eq!(a.unwrap(), b.unwrap());
        assert_eq!(github.minted(), [7, 8]);
    }

    #[tokio::test]
    async fn a_token_with_less_than_five_minutes_left_is_fetched_again() {
        let github = github();
        let setup = connect(Arc::new(app(&github))).await;

        github.set_token_lifetime(Duration::from_secs(4 * 60));
        let first = setup.tokens.token(7).await.unwrap();
        let second = setup.tokens.token(7).await.unwrap();
        assert_ne!(first.token, second.token);
        assert_eq!(github.minted(), [7, 7]);

        github.set_token_lifetime(Duration::from_secs(6 * 60));
        let third = setup.tokens.token(7).await.unwrap();
        assert_eq!(setup.tokens.token(7).await.unwrap(), third);
        assert_eq!(github.minted(), [7, 7, 7]);
    }

    #[tokio::test]
    async fn installations_and_refusals_come_from_the_control_plane() {
        let github = github();
        let app = GithubApp::builder(APP_ID.to_string(), APP_PRIVATE_KEY_PEM)
            .api_base_url(github.base_url())
            .runner_installations([(RUNNER, vec![7])])
            .build()
            .unwrap();
        let setup = connect(Arc::new(app)).await;

        assert_eq!(setup.tokens.installations().await.unwrap(), [7]);
        let err = setup.tokens.token(8).await.unwrap_err();
        let GithubError::ControlPlane { code, message } = &err else {
            panic!("expected a refusal, got {err}");
        };
        assert_eq!(*code, tonic::Code::PermissionDenied);
        assert!(
            message.contains("may not use GitHub installation 8"),
            "{message}"
        );
        assert!(github.minted().is_empty());
    }

    #[tokio::test]
    async fn answers_breaking_the_proto_rules_are_refused() {
        let setup = connect(Arc::new(Broken)).await;
        let err = setup.tokens.installations().await.unwrap_err();
        assert!(
            err.to_string()
                .contains("installations[1].installation_id: must be at least 1"),
            "{err}"
        );
        let err = setup.tokens.token(7).await.unwrap_err();
        assert!(err.to_string().contains("got a token for 8"), "{err}");
        let err = setup.tokens.token(0).await.unwrap_err();
        assert!(matches!(err, GithubError::InvalidInstallation(0)), "{err}");
    }

    fn token() -> InstallationToken {
        InstallationToken {
            installation_id: 7,
            token: "ghs_abc123".into(),
            expires_at_ms: i64::MAX,
            repositories: vec!["acme/api".into()],
        }
    }

    #[test]
    fn the_environment_gives_gh_the_token_and_git_basic_auth() {
        let env: HashMap<String, String> = git_env(&token()).into_iter().collect();
        assert_eq!(env["GH_TOKEN"], "ghs_abc123");
        assert_eq!(env["GITHUB_TOKEN"], "ghs_abc123");
        assert_eq!(env["GIT_CONFIG_COUNT"], "1");
        assert_eq!(
            env["GIT_CONFIG_KEY_0"],
            "http.https://github.com/.extraheader"
        );
        let basic = env["GIT_CONFIG_VALUE_0"]
            .strip_prefix("AUTHORIZATION: basic ")
            .unwrap();
        assert_eq!(
            STANDARD.decode(basic).unwrap(),
            b"x-access-token:ghs_abc123"
        );
    }

    #[test]
    fn git_sees_the_header_through_the_environment_only() {
        let home = tempfile::tempdir().unwrap();
        let git = |env: Vec<(String, String)>| {
            std::process::Command::new("git")
                .args(["config", "--get", "http.https://github.com/.extraheader"])
                .current_dir(home.path())
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("HOME", home.path())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .envs(env)
                .output()
                .unwrap()
        };
        let with = git(git_env(&token()));
        assert!(with.status.success(), "{with:?}");
        let expected = format!(
            "AUTHORIZATION: basic {}\n",
            STANDARD.encode("x-access-token:ghs_abc123")
        );
        assert_eq!(String::from_utf8_lossy(&with.stdout), expected);

        // Nothing was written anywhere: without the environment, no header.
        let without = git(Vec::new());
        assert!(without.stdout.is_empty(), "{without:?}");
        assert!(std::fs::read_dir(home.path()).unwrap().next().is_none());
    }
}
