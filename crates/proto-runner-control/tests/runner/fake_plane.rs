//! A scripted control plane for the runner's tests: a real gRPC server on
//! an ephemeral port, serving under a path prefix, that hands each opened
//! control channel to the test and records every registration.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use gantry_runner_protocol::v0_2 as pb;
use gantry_runner_protocol::v0_2::agent_runner_control_service_server::{
    AgentRunnerControlService, AgentRunnerControlServiceServer,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::body::Body;
use tonic::codegen::http;
use tonic::{Request, Response, Status, Streaming};

/// The path prefix the fake serves under.
pub(crate) const PREFIX: &str = "/cp";
/// The one token the fake accepts.
pub(crate) const TOKEN: &str = "runner-secret";
/// How long a test waits for something the runner should do.
const PATIENCE: Duration = Duration::from_secs(20);

/// What a registration carried.
#[derive(Debug, Clone)]
pub(crate) struct Registration {
    pub authorization: Option<String>,
    pub request: pb::RegisterRunnerRequest,
}

/// An open control channel, from the control plane's side.
pub(crate) struct Conn {
    to_runner: mpsc::Sender<Result<pb::ServerMessage, Status>>,
    from_runner: Streaming<pb::ClientMessage>,
}

impl Conn {
    /// Sends a request with `request_id`.
    pub(crate) async fn send(&self, request_id: &str, request: pb::server_message::Request) {
        let message = pb::ServerMessage {
            request_id: Some(request_id.to_owned()),
            request: Some(request),
        };
        self.to_runner
            .send(Ok(message))
            .await
            .expect("channel open");
    }

    /// The runner's next message.
    pub(crate) async fn next(&mut self) -> pb::ClientMessage {
        tokio::time::timeout(PATIENCE, self.from_runner.message())
            .await
            .expect("the runner said nothing")
            .expect("channel broke")
            .expect("channel closed")
    }

    /// Messages until one for which `done` holds (included).
    pub(crate) async fn until(
        &mut self,
        done: impl Fn(&pb::ClientMessage) -> bool,
    ) -> Vec<pb::ClientMessage> {
        let mut seen = Vec::new();
        loop {
            let message = self.next().await;
            let stop = done(&message);
            seen.push(message);
            if stop {
                return seen;
            }
        }
    }

    /// Breaks the channel from the control plane's side.
    pub(crate) async fn break_off(self) {
        let _ = self
            .to_runner
            .send(Err(Status::unavailable("control plane going away")))
            .await;
    }
}

/// GitHub answers the fake gives: installations and the token for each.
pub(crate) type Github = Vec<(i64, String)>;

#[derive(Clone)]
struct Service {
    registrations: Arc<Mutex<Vec<Registration>>>,
    conns: mpsc::Sender<Conn>,
    /// While false, registrations fail as a control plane that is down.
    up: Arc<Mutex<bool>>,
    github: Arc<Mutex<Github>>,
    /// Channel opens still to refuse as a control plane that has this
    /// runner connected already (`ALREADY_EXISTS`).
    refusals: Arc<Mutex<usize>>,
    /// When each channel open came.
    channel_attempts: Arc<Mutex<Vec<Instant>>>,
}

fn bearer<T>(request: &Request<T>) -> Option<String> {
    request
        .metadata()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn check(request_auth: Option<&str>) -> Result<(), Status> {
    if request_auth == Some(&format!("Bearer {TOKEN}")) {
        Ok(())
    } else {
        Err(Status::unauthenticated("unknown runner token"))
    }
}

#[tonic::async_trait]
impl AgentRunnerControlService for Service {
    async fn register_runner(
        &self,
        request: Request<pb::RegisterRunnerRequest>,
    ) -> Result<Response<pb::RegisterRunnerResponse>, Status> {
        let authorization = bearer(&request);
        if !*self.up.lock().unwrap() {
            return Err(Status::unavailable("starting up"));
        }
        self.registrations.lock().unwrap().push(Registration {
            authorization: authorization.clone(),
            request: request.into_inner(),
        });
        check(authorization.as_deref())?;
        Ok(Response::new(pb::RegisterRunnerResponse {}))
    }

    type ControlChannelStream = ReceiverStream<Result<pb::ServerMessage, Status>>;

    async fn control_channel(
        &self,
        request: Request<Streaming<pb::ClientMessage>>,
    ) -> Result<Response<Self::ControlChannelStream>, Status> {
        check(bearer(&request).as_deref())?;
        self.channel_attempts.lock().unwrap().push(Instant::now());
        {
            let mut refusals = self.refusals.lock().unwrap();
            if *refusals > 0 {
                *refusals -= 1;
                return Err(Status::already_exists(
                    "runner r1 is already connected from 10.0.0.7:41000",
                ));
            }
        }
        let (tx, rx) = mpsc::channel(64);
        let conn = Conn {
            to_runner: tx,
            from_runner: request.into_inner(),
        };
        self.conns
            .send(conn)
            .await
            .map_err(|_| Status::unavailable("test over"))?;
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn list_github_installations_for_runner(
        &self,
        request: Request<pb::ListGithubInstallationsForRunnerRequest>,
    ) -> Result<Response<pb::ListGithubInstallationsForRunnerResponse>, Status> {
        check(bearer(&request).as_deref())?;
        let installations = self
            .github
            .lock()
            .unwrap()
            .iter()
            .map(|(id, _)| pb::GithubInstallationForRunner {
                installation_id: *id,
            })
            .collect();
        Ok(Response::new(
            pb::ListGithubInstallationsForRunnerResponse { installations },
        ))
    }

    async fn get_github_installation_access_token_for_runner(
        &self,
        request: Request<pb::GetGithubInstallationAccessTokenForRunnerRequest>,
    ) -> Result<Response<pb::GetGithubInstallationAccessTokenForRunnerResponse>, Status> {
        check(bearer(&request).as_deref())?;
        let id = request.into_inner().installation_id;
        let github = self.github.lock().unwrap();
        let Some((_, token)) = github.iter().find(|(i, _)| *i == id) else {
            return Err(Status::not_found("no such installation"));
        };
        Ok(Response::new(
            pb::GetGithubInstallationAccessTokenForRunnerResponse {
                installation_id: id,
                access_token: token.clone(),
                access_token_expires_unix_time_ms: chrono_now_ms() + 3_600_000,
                repositories: vec!["acme/widgets".into()],
            },
        ))
    }
}

fn chrono_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The fake control plane, serving until dropped.
pub(crate) struct FakePlane {
    pub addr: SocketAddr,
    registrations: Arc<Mutex<Vec<Registration>>>,
    conns: mpsc::Receiver<Conn>,
    up: Arc<Mutex<bool>>,
    github: Arc<Mutex<Github>>,
    refusals: Arc<Mutex<usize>>,
    channel_attempts: Arc<Mutex<Vec<Instant>>>,
    _server: tokio::task::JoinHandle<()>,
}

impl FakePlane {
    /// Starts on an ephemeral loopback port.
    pub(crate) async fn start() -> FakePlane {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (conns_tx, conns) = mpsc::channel(8);
        let service = Service {
            registrations: Arc::default(),
            conns: conns_tx,
            up: Arc::new(Mutex::new(true)),
            github: Arc::default(),
            refusals: Arc::default(),
            channel_attempts: Arc::default(),
        };
        FakePlane {
            addr,
            registrations: service.registrations.clone(),
            conns,
            up: service.up.clone(),
            github: service.github.clone(),
            refusals: service.refusals.clone(),
            channel_attempts: service.channel_attempts.clone(),
            _server: tokio::spawn(async move {
                let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
                let _ = tonic::transport::Server::builder()
                    .layer(StripPrefixLayer)
                    .add_service(AgentRunnerControlServiceServer::new(service))
                    .serve_with_incoming(incoming)
                    .await;
            }),
        }
    }

    /// The URL a runner dials.
    pub(crate) fn url(&self) -> String {
        format!("http://{}{PREFIX}", self.addr)
    }

    /// The next control channel a runner opens.
    pub(crate) async fn accept(&mut self) -> Conn {
        tokio::time::timeout(PATIENCE, self.conns.recv())
            .await
            .expect("no runner connected")
            .expect("server gone")
    }

    /// Registrations so far.
    pub(crate) fn registrations(&self) -> Vec<Registration> {
        self.registrations.lock().unwrap().clone()
    }

    /// Down: registrations fail until [`FakePlane::set_up`].
    pub(crate) fn set_up(&self, up: bool) {
        *self.up.lock().unwrap() = up;
    }

    /// Refuses the next `n` channel opens with `ALREADY_EXISTS`.
    pub(crate) fn refuse_channels(&self, n: usize) {
        *self.refusals.lock().unwrap() = n;
    }

    /// When each channel open came, in order.
    pub(crate) fn channel_attempts(&self) -> Vec<Instant> {
        self.channel_attempts.lock().unwrap().clone()
    }

    /// The installations and tokens the GitHub rpcs answer with.
    pub(crate) fn set_github(&self, github: Github) {
        *self.github.lock().unwrap() = github;
    }
}

/// Serves the service under [`PREFIX`] only: strips it, and answers a
/// path without it as unknown.
#[derive(Clone)]
struct StripPrefixLayer;

impl<S> tower_layer::Layer<S> for StripPrefixLayer {
    type Service = StripPrefix<S>;
    fn layer(&self, inner: S) -> StripPrefix<S> {
        StripPrefix { inner }
    }
}

#[derive(Clone)]
struct StripPrefix<S> {
    inner: S,
}

impl<S> tower_service::Service<http::Request<Body>> for StripPrefix<S>
where
    S: tower_service::Service<http::Request<Body>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<Body>) -> S::Future {
        let path = request.uri().path().to_owned();
        // Without the prefix the path is mangled, so the server says unknown.
        let stripped = path
            .strip_prefix(PREFIX)
            .map_or_else(|| format!("/unprefixed{path}"), str::to_owned);
        let mut parts = request.uri().clone().into_parts();
        parts.path_and_query = stripped.parse().ok();
        if let Ok(uri) = http::Uri::from_parts(parts) {
            *request.uri_mut() = uri;
        }
        self.inner.call(request)
    }
}
