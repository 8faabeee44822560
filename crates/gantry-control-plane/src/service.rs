//! The gRPC side: `AgentRunnerControlService` as runners see it, in
//! either protocol version. Every call is authenticated by its bearer
//! token; a runner's version is its pinned one, else the one its
//! registration shows (`ProtocolVersion::detect`); every message is
//! decoded in that version and validated.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::pin::Pin;

use bytes::Bytes;
use futures_util::FutureExt;
use gantry_runner_protocol::messages::{ClientMessage, Payload};
use gantry_runner_protocol::v0_2 as pb;
use gantry_runner_protocol::v0_2::agent_runner_control_service_server::AgentRunnerControlService;
use gantry_runner_protocol::{Inbound, ProtocolVersion};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, Streaming};

use crate::auth::RunnerIdentity;
use crate::github::rpcs as github;
use crate::registry::Busy;
use crate::{ControlPlane, now_ms, offers};

/// Requests queued for a runner before sending waits for it to read.
const OUTBOX_CAPACITY: usize = 64;

/// A runner's messages applied as one batch at most.
const MAX_BATCH: usize = 128;

/// What a runner's channel says to it, encoded in its version.
pub(crate) type Outgoing = Pin<Box<dyn Stream<Item = Result<Bytes, Status>> + Send>>;

/// The service runners dial; wrapped by [`crate::wire::RunnerService`].
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

/// A draining replica takes no runner: `UNAVAILABLE`, so it tries another.
fn refuse_if_draining(cp: &ControlPlane) -> Result<(), Status> {
    if cp.is_draining() {
        return Err(Status::unavailable(
            "this control plane is stopping and takes no runners; connect to another replica",
        ));
    }
    Ok(())
}

impl ControlService {
    /// `RegisterRunner`: what the runner offers, and the version it speaks.
    pub(crate) async fn register(
        &self,
        request: Request<Bytes>,
    ) -> Result<Response<Bytes>, Status> {
        let runner = self.authenticate(&request).await?;
        refuse_if_draining(&self.cp)?;
        let peer = request.remote_addr();
        let registration = ProtocolVersion::decode_registration(request.get_ref())
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        // A second runner with this token must not replace the offers of
        // the one connected.
        self.cp
            .inner
            .registry
            .vacant(&runner.id, peer)
            .await
            .map_err(|busy| duplicate(&runner, busy, peer))?;
        let version = runner
            .protocol
            .unwrap_or_else(|| ProtocolVersion::detect(&registration));
        let offers = offers::from_registration(&registration);
        let json = serde_json::to_string(&offers)
            .map_err(|e| Status::internal(format!("cannot encode the registration: {e}")))?;
        let inner = &self.cp.inner;
        inner
            .store
            .set_runner_sdks(&runner.id, &json, now_ms())
            .await
            .map_err(|e| Status::unavailable(format!("cannot record the registration: {e}")))?;
        inner.registry.set_offers(&runner.id, offers);
        inner.registry.set_version(&runner.id, version);
        let how = if runner.protocol.is_some() {
            "pinned"
        } else {
            "detected"
        };
        tracing::info!(runner = %runner.name, id = %runner.id, protocol = %version, "runner registered (protocol {how})");
        // Both versions' response is the empty message.
        Ok(Response::new(Bytes::new()))
    }

    /// `ControlChannel`: requests out in the runner's version, its
    /// messages in.
    pub(crate) async fn channel(
        &self,
        request: Request<Streaming<Bytes>>,
    ) -> Result<Response<Outgoing>, Status> {
        let runner = self.authenticate(&request).await?;
        refuse_if_draining(&self.cp)?;
        let peer = request.remote_addr();
        let inbound = request.into_inner();
        let inner = &self.cp.inner;
        let version = inner.registry.version(&runner.id, runner.protocol);
        let (outbox, stream) = mpsc::channel(OUTBOX_CAPACITY);
        let opened = inner
            .registry
            .connect(&runner.id, outbox.clone(), peer)
            .await
            .map_err(|busy| duplicate(&runner, busy, peer))?;
        inner.tracker.runner_connected(&runner.id);
        if let Some(cluster) = &inner.cluster {
            // Other replicas route this runner's requests here from now on.
            let offers = inner.registry.offers(&runner.id);
            cluster.claim(&runner.id, version, offers).await;
        }
        tracing::info!(runner = %runner.name, id = %runner.id, peer = ?peer, protocol = %version, "runner channel open");
        tokio::spawn(read_channel(
            self.cp.clone(),
            runner.id.clone(),
            version,
            (opened.id, opened.ended.clone()),
            inbound,
        ));
        if version == ProtocolVersion::V0_7 {
            tokio::spawn(crate::liveness::heartbeats(
                self.cp.clone(),
                runner.id.clone(),
                outbox.clone(),
                opened.ended,
            ));
        }
        // Pending requests go out once the stream is being read, not before
        // the response (headers) is returned: the outbox may be full.
        let cp = self.cp.clone();
        let runner_id = runner.id.clone();
        tokio::spawn(async move {
            cp.inner.dispatcher.resend(&runner_id, &outbox).await;
        });
        let mut unsendable = HashSet::new();
        let outgoing = ReceiverStream::new(stream).filter_map(move |message| {
            match version.encode_server(&message) {
                Ok(bytes) => Some(Ok(Bytes::from(bytes))),
                Err(why) => {
                    if unsendable.insert(why.what) {
                        tracing::error!(runner = %runner.id, %why, "request not sent (logged once per kind)");
                    }
                    None
                }
            }
        });
        Ok(Response::new(Box::pin(outgoing)))
    }
}

#[tonic::async_trait]
impl AgentRunnerControlService for ControlService {
    // Served by `RunnerService` (as bytes, per version); never routed here.
    async fn register_runner(
        &self,
        _request: Request<pb::RegisterRunnerRequest>,
    ) -> Result<Response<pb::RegisterRunnerResponse>, Status> {
        Err(Status::internal(
            "RegisterRunner is served by RunnerService",
        ))
    }

    type ControlChannelStream = ReceiverStream<Result<pb::ServerMessage, Status>>;

    // Served by `RunnerService` (as bytes, per version); never routed here.
    async fn control_channel(
        &self,
        _request: Request<Streaming<pb::ClientMessage>>,
    ) -> Result<Response<Self::ControlChannelStream>, Status> {
        Err(Status::internal(
            "ControlChannel is served by RunnerService",
        ))
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
/// stops): each is decoded in the runner's version and validated; those
/// that have arrived together are applied as one batch. Messages of a kind the version does not know
/// are dropped, logged once per kind.
async fn read_channel(
    cp: ControlPlane,
    runner_id: String,
    version: ProtocolVersion,
    (channel, ended): (u64, CancellationToken),
    mut inbound: Streaming<Bytes>,
) {
    let inner = &cp.inner;
    let mut unknown = HashSet::new();
    let mut messages = Vec::new();
    'channel: loop {
        let bytes = tokio::select! {
            message = inbound.message() => message,
            () = inner.stop.cancelled() => break,
        };
        // Whatever else has arrived is applied with it, as one batch.
        let mut next = Some(bytes);
        let mut open = true;
        while let Some(bytes) = next.take() {
            let bytes = match bytes {
                Ok(Some(bytes)) => bytes,
                Ok(None) => {
                    open = false;
                    break;
                }
                Err(status) => {
                    tracing::debug!(runner = %runner_id, %status, "runner channel failed");
                    open = false;
                    break;
                }
            };
            if let Some(message) = decode(&runner_id, version, &bytes, &mut unknown) {
                messages.push(message);
            }
            if messages.len() < MAX_BATCH {
                // `Streaming::message` keeps its state in the stream: a poll
                // that finds nothing yet loses nothing.
                next = inbound.message().now_or_never();
            }
        }
        apply(&cp, &runner_id, &mut messages).await;
        if !open {
            break 'channel;
        }
    }
    if inner.registry.disconnect(&runner_id, channel)
        && let Some(cluster) = &inner.cluster
    {
        cluster.release(&runner_id).await;
    }
    // Lets in a connection of this runner waiting for this one to end.
    ended.cancel();
    tracing::info!(runner = %runner_id, "runner channel closed");
}

/// A runner's message in its version, validated; `None` (logged) for one
/// of a kind the version does not know (once per kind) or an invalid one.
fn decode(
    runner_id: &str,
    version: ProtocolVersion,
    bytes: &[u8],
    unknown: &mut HashSet<Option<u32>>,
) -> Option<ClientMessage> {
    match version.decode_client(bytes) {
        Ok(message) => Some(message),
        Err(Inbound::Unknown(kind)) => {
            // Once per kind: a chatty runner must not flood the log.
            if unknown.insert(kind.field) {
                tracing::warn!(
                    runner = %runner_id,
                    protocol = %version,
                    kind = kind.name_or_unknown(),
                    field = kind.field,
                    "runner message of a kind this protocol version does not know ({kind}); ignored (logged once per kind)"
                );
            }
            None
        }
        Err(why) => {
            tracing::warn!(runner = %runner_id, %why, "invalid message from runner dropped");
            None
        }
    }
}

/// Applies a batch of a runner's messages, then hands each reply to the
/// request waiting for it, so a caller that gets its answer finds it
/// recorded.
async fn apply(cp: &ControlPlane, runner_id: &str, messages: &mut Vec<ClientMessage>) {
    let inner = &cp.inner;
    for message in messages.iter() {
        match &message.payload {
            Payload::Heartbeat => inner.registry.heard(runner_id),
            Payload::Sdk(sdk) => sdk_update(cp, runner_id, sdk).await,
            Payload::CodexDeviceCode { .. } => {
                // The code signs a Codex in: not for the log.
                tracing::info!(runner = %runner_id, "runner sent a Codex device code; this control plane configures no Codex");
            }
            _ => {}
        }
    }
    match inner.tracker.apply(runner_id, messages).await {
        Ok(applied) => inner.metrics.applied(applied),
        Err(e) => {
            tracing::error!(runner = %runner_id, error = %e, updates = messages.len(), "cannot record a runner's updates");
        }
    }
    for message in messages.drain(..) {
        if let Some(request_id) = message.request_id {
            inner
                .dispatcher
                .complete(runner_id, &request_id, message.payload);
        }
    }
}

/// A 0.7.0 runner's SDK changed (status, models, error): its offer is
/// replaced, so work goes only to a ready SDK.
async fn sdk_update(
    cp: &ControlPlane,
    runner_id: &str,
    sdk: &gantry_runner_protocol::messages::AgentSdk,
) {
    let inner = &cp.inner;
    let mut offers = inner.registry.offers(runner_id);
    let offer = offers::from_sdk(sdk);
    match offers.iter_mut().find(|o| o.name == offer.name) {
        Some(known) => *known = offer,
        None => offers.push(offer),
    }
    match serde_json::to_string(&offers) {
        Ok(json) => {
            if let Err(e) = inner
                .store
                .set_runner_sdks(runner_id, &json, now_ms())
                .await
            {
                tracing::error!(runner = runner_id, error = %e, "cannot record an SDK update");
            }
        }
        Err(e) => tracing::error!(runner = runner_id, error = %e, "cannot encode an SDK update"),
    }
    tracing::info!(runner = runner_id, sdk = %sdk.name, status = ?sdk.status(), "runner SDK updated");
    inner.registry.set_offers(runner_id, offers.clone());
    if let Some(cluster) = &inner.cluster
        && inner.registry.is_here(runner_id)
    {
        // The other replicas see what it offers now.
        let version = inner.registry.version(runner_id, None);
        cluster.claim(runner_id, version, offers).await;
    }
}
