//! The connection to the control plane: register, open the control channel,
//! pass requests in and updates out until it breaks, then reconnect with
//! backoff. Requests are served in order by one task that outlives
//! connections; updates wait in the outbox while no channel is open.

use std::sync::Arc;
use std::time::Duration;

use gantry_runner_protocol::messages::{ClientMessage, Payload, Request};
use gantry_runner_protocol::v0_2::agent_runner_control_service_client::AgentRunnerControlServiceClient;
use gantry_runner_protocol::{Inbound, ProtocolVersion};
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_util::sync::CancellationToken;
use tonic::Code;

use super::RunnerError;
use super::backoff::Backoff;
use super::command_env::RunnerCommandEnv;
use super::endpoint::{ControlPlaneUrl, Outbound};
use super::outbox::{UNCONFIRMED, Unconfirmed};
use super::requests::Handler;
use super::wire::{self, Incoming};

/// How long the control channel may take to open (response headers).
const OPEN_TIMEOUT: Duration = Duration::from_secs(5);

/// Requests waiting for the request task, at most.
const REQUEST_QUEUE: usize = 256;

/// The least wait before trying again after the control plane refused a
/// second connection of this runner (`ALREADY_EXISTS`): another process with
/// the same token is connected, or our own dead connection is not yet seen
/// dead there; neither clears up in milliseconds.
const DUPLICATE_RETRY_MIN: Duration = Duration::from_secs(1);

/// Everything a connection attempt needs.
pub(crate) struct Session {
    /// The control plane's replicas, dialed in turn (never empty).
    pub urls: Vec<ControlPlaneUrl>,
    /// The one dialed now.
    pub current: usize,
    pub protocol: ProtocolVersion,
    pub token: String,
    pub ca_pem: Option<Vec<u8>>,
    pub backoff: Backoff,
    pub command_env: Option<Arc<RunnerCommandEnv>>,
    pub handler: Handler,
    pub outbox: mpsc::Receiver<ClientMessage>,
    pub unconfirmed: Unconfirmed,
}

/// How a connection ended.
enum Ended {
    /// The runner is stopping.
    Shutdown,
    /// The channel broke or could not be opened; try again.
    Retry(String),
    /// Refused because this runner is already connected (`ALREADY_EXISTS`);
    /// try again, not soon.
    Duplicate(String),
}

impl Session {
    /// Runs until `shutdown`; only a refused token ends it early.
    pub(crate) async fn run(mut self, shutdown: CancellationToken) -> Result<(), RunnerError> {
        let (requests_tx, requests_rx) = mpsc::channel(REQUEST_QUEUE);
        let serving = tokio::spawn(serve_requests(self.handler.clone(), requests_rx));
        let result = loop {
            let delay = match self.connect_once(&requests_tx, &shutdown).await {
                Ok(Ended::Shutdown) => break Ok(()),
                Ok(Ended::Retry(why)) => {
                    let from = self.current;
                    // Another replica may be up: the next one is tried.
                    self.current = (self.current + 1) % self.urls.len();
                    if self.current == from {
                        tracing::warn!("control plane: {why}; reconnecting");
                    } else {
                        tracing::warn!(
                            "control plane {}: {why}; moving to {}",
                            self.urls[from],
                            self.urls[self.current]
                        );
                    }
                    self.backoff.next_delay()
                }
                Ok(Ended::Duplicate(why)) => {
                    let delay = self.backoff.next_delay().max(DUPLICATE_RETRY_MIN);
                    tracing::warn!(
                        "control plane refused this runner as already connected: {why}. \
                         If another runner uses this token, give each runner its own; \
                         retrying in {delay:.1?}"
                    );
                    delay
                }
                Err(fatal) => break Err(fatal),
            };
            tokio::select! {
                () = shutdown.cancelled() => break Ok(()),
                () = tokio::time::sleep(delay) => {}
            }
        };
        drop(requests_tx);
        serving.abort();
        result
    }

    /// One connection, from registration until it ends.
    async fn connect_once(
        &mut self,
        requests: &mpsc::Sender<Incoming>,
        shutdown: &CancellationToken,
    ) -> Result<Ended, RunnerError> {
        let channel = tokio::select! {
            () = shutdown.cancelled() => return Ok(Ended::Shutdown),
            channel = self.urls[self.current].connect(&self.token, self.ca_pem.as_deref()) => channel,
        };
        let channel: Outbound = match channel {
            Ok(channel) => channel,
            Err(why) => return Ok(Ended::Retry(why)),
        };
        // 0.7.0 has no GitHub rpcs (see `github_env`).
        if let Some(github) = self.command_env.as_ref().and_then(|e| e.github.as_ref())
            && self.protocol == ProtocolVersion::V0_2
        {
            github.connect(AgentRunnerControlServiceClient::new(channel.clone()));
        }
        let registration = super::catalog::registration(&self.handler.engine);
        if let Err(status) = wire::register(self.protocol, channel.clone(), &registration).await {
            return match status.code() {
                Code::Unauthenticated | Code::PermissionDenied => Err(RunnerError::Refused(
                    format!("{:?}: {}", status.code(), status.message()),
                )),
                Code::AlreadyExists => Ok(Ended::Duplicate(status.message().to_owned())),
                _ => Ok(Ended::Retry(format!(
                    "RegisterRunner: {}",
                    status.message()
                ))),
            };
        }

        // What may not have arrived on the last channel goes first.
        let (tx, rx) = mpsc::channel(UNCONFIRMED + 64);
        for message in self.unconfirmed.replay() {
            let _ = tx.try_send(message.clone());
        }
        let opened = tokio::time::timeout(OPEN_TIMEOUT, wire::open(self.protocol, channel, rx));
        let mut inbound = tokio::select! {
            () = shutdown.cancelled() => return Ok(Ended::Shutdown),
            opened = opened => match opened {
                Ok(Ok(requests)) => requests,
                Ok(Err(status)) if status.code() == Code::AlreadyExists => {
                    return Ok(Ended::Duplicate(status.message().to_owned()));
                }
                Ok(Err(status)) => return Ok(Ended::Retry(format!("ControlChannel: {}", status.message()))),
                Err(_) => return Ok(Ended::Retry("ControlChannel did not open within 5 s".to_owned())),
            },
        };
        tracing::info!("control plane: connected to {}", self.urls[self.current]);
        self.backoff.reset();

        loop {
            tokio::select! {
                () = shutdown.cancelled() => return Ok(Ended::Shutdown),
                message = inbound.next() => match message {
                    // Answered at once, not behind the requests being served:
                    // the answer says this connection is alive.
                    Some(Ok(Incoming { request_id, request: Ok(Request::Heartbeat) })) => {
                        let answer = ClientMessage { request_id, payload: Payload::Heartbeat };
                        if tx.send(answer).await.is_err() {
                            return Ok(Ended::Retry("the channel stopped taking updates".to_owned()));
                        }
                    }
                    Some(Ok(incoming)) => {
                        if requests.send(incoming).await.is_err() {
                            return Ok(Ended::Shutdown);
                        }
                    }
                    None => return Ok(Ended::Retry("the control plane closed the channel".to_owned())),
                    Some(Err(status)) => return Ok(Ended::Retry(format!("channel broke: {}", status.message()))),
                },
                update = self.outbox.recv() => {
                    let Some(update) = update else {
                        return Ok(Ended::Shutdown);
                    };
                    self.unconfirmed.push(update.clone());
                    if tx.send(update).await.is_err() {
                        return Ok(Ended::Retry("the channel stopped taking updates".to_owned()));
                    }
                }
            }
        }
    }
}

/// Serves requests one at a time, in the order they came; a skill install,
/// which may download, runs beside the others. A request of a kind the
/// version does not know is ignored (as CompanyHelm's runner does), logged
/// once per kind.
async fn serve_requests(handler: Handler, mut requests: mpsc::Receiver<Incoming>) {
    let mut unknown = std::collections::HashSet::new();
    while let Some(Incoming {
        request_id,
        request,
    }) = requests.recv().await
    {
        let request = match request {
            Ok(request) => request,
            Err(Inbound::Unknown(kind)) => {
                // Each kind its own line, once: a control plane speaking
                // another version asks it again and again (heartbeats).
                if unknown.insert(kind.field) {
                    tracing::warn!(
                        kind = kind.name_or_unknown(),
                        field = kind.field,
                        "ignoring a request of a kind this protocol version does not know: {kind} (logged once per kind)"
                    );
                }
                continue;
            }
            Err(why) => {
                if handler.refuse(request_id, why.to_string()).await.is_err() {
                    return;
                }
                continue;
            }
        };
        if matches!(request, Request::InstallSkills { .. }) {
            let handler = handler.clone();
            tokio::spawn(async move {
                let _ = handler.handle(request_id, request).await;
            });
            continue;
        }
        if handler.handle(request_id, request).await.is_err() {
            return;
        }
    }
}
