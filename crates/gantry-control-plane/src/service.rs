//! The gRPC side: `AgentRunnerControlService` as runners see it. Every call
//! is authenticated by its bearer token; every message is validated.

use std::net::SocketAddr;

use gantry_runner_protocol::v0_2 as pb;
use gantry_runner_protocol::v0_2::agent_runner_control_service_server::AgentRunnerControlService;
use gantry_runner_protocol::validate::Validate;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, Streaming};

use crate::auth::RunnerIdentity;
use crate::github::rpcs as github;
use crate::registry::Busy;
use crate::{ControlPlane, now_ms, offers};

/// Requests queued for a runner before sending waits for it to read.
const OUTBOX_CAPACITY: usize = 64;

/// The service runners dial; made by [`ControlPlane::grpc_service`].
#[derive(Clone)]
pub struct ControlService {
    cp: ControlPlane,
}

impl ControlService {
    pub(crate) fn new(cp: ControlPlane) -> Self {
        Self { cp }
    }

    async fn authenticate<T>(&self, request: &Request<T>) -> Result<RunnerIdentity, Status> {
        self.cp.inner.tokens.authenticate(request.metadata()).await
    }
}

/// The refusal of a second connection of a runner whose channel is live,
/// logged: two processes are most likely using one token.
fn duplicate(runner: &RunnerIdentity, busy: Busy, peer: Option<SocketAddr>) -> Status {
    let live = busy
        .peer
        .map_or_else(|| "an unknown address".to_owned(), |p| p.to_string());
    let new = peer.map_or_else(|| "an unknown address".to_owned(), |p| p.to_string());
    tracing::warn!(
        runner = %runner.name,
        id = %runner.id,
        connected_from = %live,
        refused_from = %new,
        "runner is already connected; refusing a second connection with its token (two runners sharing one token?)"
    );
    Status::already_exists(format!(
        "runner {} is already connected from {live}; this connection (from {new}) is refused. \
         Is this runner's token used by two runners? Each runner needs its own \
         (gantry control-plane add-runner NAME)",
        runner.name
    ))
}

#[tonic::async_trait]
impl AgentRunnerControlService for ControlService {
    async fn register_runner(
        &self,
        request: Request<pb::RegisterRunnerRequest>,
    ) -> Result<Response<pb::RegisterRunnerResponse>, Status> {
        let runner = self.authenticate(&request).await?;
        let peer = request.remote_addr();
        let request = request.into_inner();
        request
            .validate()
            .map_err(|v| Status::invalid_argument(v.to_string()))?;
        // A second runner with this token must not replace the offers of
        // the one connected.
        self.cp
            .inner
            .registry
            .vacant(&runner.id, peer)
            .await
            .map_err(|busy| duplicate(&runner, busy, peer))?;
        let offers = offers::from_registration(&request);
        let json = serde_json::to_string(&offers)
            .map_err(|e| Status::internal(format!("cannot encode the registration: {e}")))?;
        let inner = &self.cp.inner;
        inner
            .store
            .set_runner_sdks(&runner.id, &json, now_ms())
            .await
            .map_err(|e| Status::unavailable(format!("cannot record the registration: {e}")))?;
        inner.registry.set_offers(&runner.id, offers);
        tracing::info!(runner = %runner.name, id = %runner.id, "runner registered");
        Ok(Response::new(pb::RegisterRunnerResponse {}))
    }

    type ControlChannelStream = ReceiverStream<Result<pb::ServerMessage, Status>>;

    async fn control_channel(
        &self,
        request: Request<Streaming<pb::ClientMessage>>,
    ) -> Result<Response<Self::ControlChannelStream>, Status> {
        let runner = self.authenticate(&request).await?;
        let peer = request.remote_addr();
        let inbound = request.into_inner();
        let (outbox, stream) = mpsc::channel(OUTBOX_CAPACITY);
        let opened = self
            .cp
            .inner
            .registry
            .connect(&runner.id, outbox.clone(), peer)
            .await
            .map_err(|busy| duplicate(&runner, busy, peer))?;
        tracing::info!(runner = %runner.name, id = %runner.id, peer = ?peer, "runner channel open");
        tokio::spawn(read_channel(
            self.cp.clone(),
            runner.id.clone(),
            (opened.id, opened.ended),
            inbound,
        ));
        // Pending requests go out once the stream is being read, not before
        // the response (headers) is returned: the outbox may be full.
        let cp = self.cp.clone();
        tokio::spawn(async move {
            cp.inner.dispatcher.resend(&runner.id, &outbox).await;
        });
        Ok(Response::new(ReceiverStream::new(stream)))
    }

    async fn list_github_installations_for_runner(
        &self,
        request: Request<pb::ListGithubInstallationsForRunnerRequest>,
    ) -> Result<Response<pb::ListGithubInstallationsForRunnerResponse>, Status> {
        let runner = self.authenticate(&request).await?;
        let app = self.cp.inner.github.as_deref();
        github::installations(app, &runner).await.map(Response::new)
    }

    async fn get_github_installation_access_token_for_runner(
        &self,
        request: Request<pb::GetGithubInstallationAccessTokenForRunnerRequest>,
    ) -> Result<Response<pb::GetGithubInstallationAccessTokenForRunnerResponse>, Status> {
        let runner = self.authenticate(&request).await?;
        let app = self.cp.inner.github.as_deref();
        github::token(app, &runner, request.get_ref())
            .await
            .map(Response::new)
    }
}

/// Reads a runner's messages until its channel ends (or the control plane
/// stops): each is validated, applied, then handed to the request waiting
/// for it, so a caller that gets its answer finds it recorded.
async fn read_channel(
    cp: ControlPlane,
    runner_id: String,
    (channel, ended): (u64, CancellationToken),
    mut inbound: Streaming<pb::ClientMessage>,
) {
    let inner = &cp.inner;
    loop {
        let message = tokio::select! {
            message = inbound.message() => message,
            () = inner.stop.cancelled() => break,
        };
        let message = match message {
            Ok(Some(message)) => message,
            Ok(None) => break,
            Err(status) => {
                tracing::debug!(runner = %runner_id, %status, "runner channel failed");
                break;
            }
        };
        if let Err(violation) = message.validate() {
            tracing::warn!(runner = %runner_id, %violation, "invalid message from runner dropped");
            continue;
        }
        if let Err(e) = inner.tracker.apply(&runner_id, &message).await {
            tracing::error!(runner = %runner_id, error = %e, "cannot record a runner update");
        }
        if let (Some(request_id), Some(payload)) = (message.request_id, message.payload) {
            inner.dispatcher.complete(&runner_id, &request_id, payload);
        }
    }
    inner.registry.disconnect(&runner_id, channel);
    // Lets in a connection of this runner waiting for this one to end.
    ended.cancel();
    tracing::info!(runner = %runner_id, "runner channel closed");
}
