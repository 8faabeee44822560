//! What the API does, apart from HTTP: each operation checks its input and
//! the state, asks the runner through [`ControlPlane::ask`], and answers
//! with what the runner's reply recorded in the store.

mod agents;
mod mcp;
mod runners;
mod threads;

use serde::Deserialize;
use utoipa::ToSchema;

use crate::registry::Remote;
use crate::store::RequestRecord;

pub(crate) use mcp::McpServerView;
pub(crate) use threads::{InterruptSent, MessageAccepted};

use super::error::ApiError;
use super::requests::{self, Params};
use super::{ControlPlane, now_ms};
use gantry_runner_protocol::messages::{Payload, Request, ServerMessage};
use gantry_runner_protocol::validate::Validate;
use gantry_runner_protocol::{ProtocolVersion, map};

/// `POST /v1/agents`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewAgent {
    /// Id to give the agent (default: a new UUIDv7).
    pub agent_id: Option<String>,
    /// SDK to run it with (default `gantry`).
    pub sdk: Option<String>,
    /// Runner to put it on (default: the least loaded that offers sdk and model).
    pub runner_id: Option<String>,
    /// Default model of its threads.
    pub model: Option<String>,
}

/// `POST /v1/agents/{id}/skills`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewSkill {
    /// Package coordinate the runner installs.
    pub package_name: String,
}

/// `POST /v1/agents/{id}/threads`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewThread {
    /// Model (default: the agent's).
    pub model: Option<String>,
    /// Reasoning level.
    pub reasoning_level: Option<String>,
    /// 0.7.0 runners: instructions added to the model's for every turn.
    pub instructions: Option<String>,
    /// 0.7.0 runners: skills the thread checks out from git.
    #[serde(default)]
    pub git_skill_packages: Vec<NewGitSkills>,
    /// 0.7.0 runners: MCP servers the thread's turns get the tools of.
    #[serde(default)]
    pub mcp_servers: Vec<mcp::NewMcpServer>,
}

/// Skills from one git repository (`ThreadGitSkillPackage`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewGitSkills {
    /// The repository.
    pub repository_url: String,
    /// A commit, branch or tag.
    pub commit_reference: String,
    /// The skills' directories in it.
    #[serde(default)]
    pub skills: Vec<String>,
}

/// `POST /v1/threads/{id}/messages`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewMessage {
    /// The user's text.
    pub text: String,
    /// Steer a running turn instead of being refused.
    #[serde(default)]
    pub allow_steer: bool,
    /// Model for this message.
    pub model: Option<String>,
    /// Reasoning level for this message.
    pub reasoning_level: Option<String>,
}

/// What a request concerns, recorded with it.
#[derive(Debug, Default)]
struct Subject<'a> {
    agent_id: Option<&'a str>,
    thread_id: Option<&'a str>,
    params: Params,
}

impl ControlPlane {
    /// Sends `request` to the runner and waits for its first reply. A
    /// refusal (`RequestError`) is [`ApiError::Conflict`] with its text.
    /// Returns the request's id with the reply.
    async fn ask(
        &self,
        runner_id: &str,
        request: Request,
        subject: Subject<'_>,
    ) -> Result<(String, Payload), ApiError> {
        let (id, message) = self.prepare(runner_id, request)?;
        let record = RequestRecord {
            id: id.clone(),
            runner_id: runner_id.to_owned(),
            kind: requests::kind(&message.request).to_owned(),
            agent_id: subject.agent_id.map(str::to_owned),
            thread_id: subject.thread_id.map(str::to_owned),
            turn_id: None,
            params: serde_json::to_string(&subject.params).unwrap_or_else(|_| "{}".into()),
            created_at: now_ms(),
        };
        let reply = match self.inner.registry.holder(runner_id) {
            Some(remote) => {
                let reply = self.routed(&remote, &message, &record, true).await?;
                reply.ok_or_else(|| {
                    ApiError::BadGateway(format!("replica {} relayed no reply", remote.replica))
                })?
            }
            None => self.ask_here(runner_id, message, record).await?,
        };
        match reply {
            Payload::RequestError { error_message } => Err(ApiError::Conflict(error_message)),
            reply => Ok((id, reply)),
        }
    }

    /// Sends a request to a runner whose channel is here and waits for its
    /// first reply. The request is recorded before it is sent (in memory,
    /// and queued for the store ahead of any reply): the replies are
    /// attributed through it. The answer waits for its commit too.
    pub(crate) async fn ask_here(
        &self,
        runner_id: &str,
        message: ServerMessage,
        record: RequestRecord,
    ) -> Result<Payload, ApiError> {
        let inner = &self.inner;
        let recorded = inner.tracker.record_request(record);
        let sent = std::time::Instant::now();
        let replied = inner
            .dispatcher
            .request(&inner.registry, runner_id, message);
        let (recorded, reply) = tokio::join!(recorded, replied);
        recorded?;
        let reply = reply?;
        inner.metrics.dispatched(sent.elapsed());
        Ok(reply)
    }

    /// Sends a request to a runner whose channel is here, recorded first,
    /// without waiting for a reply. An interrupt marks the turn it stops
    /// as it is recorded (see [`crate::tracking::Tracker::record_interrupt`]).
    pub(crate) async fn send_here(
        &self,
        runner_id: &str,
        message: ServerMessage,
        record: RequestRecord,
    ) -> Result<(), ApiError> {
        let inner = &self.inner;
        if record.kind == requests::INTERRUPT_TURN {
            inner.tracker.record_interrupt(record).await?;
        } else {
            inner.tracker.record_request(record).await?;
        }
        inner
            .dispatcher
            .send(&inner.registry, runner_id, message)
            .await?;
        Ok(())
    }

    /// Sends a request to the replica holding its runner's channel; the
    /// runner's reply when `wait`. What is kept here of the thread it
    /// concerns is dropped: the other replica writes it.
    async fn routed(
        &self,
        remote: &Remote,
        message: &ServerMessage,
        record: &RequestRecord,
        wait: bool,
    ) -> Result<Option<Payload>, ApiError> {
        let inner = &self.inner;
        let cluster = inner.cluster.as_ref().ok_or_else(|| {
            ApiError::Unavailable(format!("runner {} is on another replica", record.runner_id))
        })?;
        let call = crate::nats::Call::new(remote.version, message, record, wait)?;
        let answered = cluster
            .call(&remote.replica, &call, inner.dispatcher.timeout())
            .await;
        if let Some(thread_id) = &record.thread_id {
            inner.tracker.forget_thread(thread_id);
        }
        answered
    }

    /// The protocol version a runner speaks.
    pub(crate) fn protocol_of(&self, runner_id: &str) -> ProtocolVersion {
        self.inner.registry.version(runner_id, None)
    }

    /// Whether runner `runner_id` takes new work now; else 503 saying why
    /// (offline, or missing its heartbeats), the same on every route.
    pub(crate) fn available(&self, runner_id: &str) -> Result<(), ApiError> {
        let registry = &self.inner.registry;
        if !registry.is_connected(runner_id) {
            return Err(ApiError::Unavailable(format!(
                "runner {runner_id} is offline"
            )));
        }
        if !registry.is_healthy(runner_id) {
            return Err(ApiError::Unavailable(unhealthy(runner_id)));
        }
        Ok(())
    }

    /// A request to a connected, healthy runner, with a new id, checked
    /// against the runner's version (one it cannot carry is refused).
    fn prepare(
        &self,
        runner_id: &str,
        request: Request,
    ) -> Result<(String, ServerMessage), ApiError> {
        self.available(runner_id)?;
        let id = uuid::Uuid::now_v7().to_string();
        let message = ServerMessage {
            request_id: Some(id.clone()),
            request,
        };
        let version = self.protocol_of(runner_id);
        let checked = match version {
            ProtocolVersion::V0_2 => map::v0_2::server_to_wire(&message).map(|m| m.validate()),
            ProtocolVersion::V0_7 => map::v0_7::server_to_wire(&message).map(|m| m.validate()),
        };
        match checked {
            Ok(Ok(())) => Ok((id, message)),
            Ok(Err(v)) => Err(ApiError::BadRequest(v.to_string())),
            Err(why) => Err(ApiError::Conflict(format!("runner {runner_id}: {why}"))),
        }
    }
}

/// Why an unhealthy runner gets no work.
pub(crate) fn unhealthy(runner_id: &str) -> String {
    format!("runner {runner_id} is unhealthy: it missed its heartbeats")
}

/// A reply that does not answer the request.
fn unexpected(request: &str, reply: &Payload) -> ApiError {
    let name = reply.name();
    ApiError::BadGateway(format!("the runner answered {request} with {name}"))
}
