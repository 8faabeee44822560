//! Threads: created on their agent's runner, read with their turns and
//! items, deleted, sent messages, interrupted. A 0.2.0 runner picks a new
//! thread's id; for a 0.7.0 one the control plane does, and gives the
//! thread its instructions, skills and a secret of its own.

use gantry_runner_protocol::ProtocolVersion;
use gantry_runner_protocol::messages::{
    CreateThread, Payload, Request, ThreadGitSkill, ThreadGitSkillPackage, ThreadStatus,
    UserMessage,
};
use serde::Serialize;
use utoipa::ToSchema;

use super::{NewMessage, NewThread, Subject, unexpected};
use crate::ControlPlane;
use crate::error::{ApiError, require, require_if_given};
use crate::offers::check_model;
use crate::requests::Params;
use crate::store::ThreadRecord;
use crate::tracking::merge::DELETED;
use crate::views::{ThreadDetail, ThreadView};

/// `202` of `POST /v1/threads/{id}/messages`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct MessageAccepted {
    /// The request that carried the message (its items echo it).
    pub request_id: String,
    /// The turn it started or steered.
    pub turn_id: String,
    /// Whether it was steered into a turn that was already running.
    pub steered: bool,
}

impl ControlPlane {
    /// Creates a thread of an agent, on the agent's runner.
    pub(crate) async fn create_thread(
        &self,
        agent_id: &str,
        new: NewThread,
    ) -> Result<ThreadView, ApiError> {
        require_if_given("model", new.model.as_deref())?;
        require_if_given("reasoning_level", new.reasoning_level.as_deref())?;
        let agent = self.live_agent(agent_id).await?;
        // Before what it offers: an offline or unhealthy runner's offers
        // are not why it takes no thread.
        self.available(&agent.runner_id)?;
        let model = new.model.or(agent.model).ok_or_else(|| {
            ApiError::BadRequest("model: required (the agent has no default model)".into())
        })?;
        self.check_offered(
            &agent.runner_id,
            &agent.sdk,
            &model,
            new.reasoning_level.as_deref(),
        )?;
        require_if_given("instructions", new.instructions.as_deref())?;
        let v0_7 = self.protocol_of(&agent.runner_id) == ProtocolVersion::V0_7;
        if !v0_7
            && (new.instructions.is_some()
                || !new.git_skill_packages.is_empty()
                || !new.mcp_servers.is_empty())
        {
            return Err(ApiError::BadRequest(format!(
                "instructions, git_skill_packages, mcp_servers: runner {} speaks protocol 0.2, whose threads take none of them",
                agent.runner_id
            )));
        }
        let (mcp_servers, mcp_views) = super::mcp::thread_servers(new.mcp_servers)?;
        let request = Request::CreateThread(CreateThread {
            agent_id: Some(agent_id.to_owned()),
            model: model.clone(),
            reasoning_level: new.reasoning_level.clone(),
            ..CreateThread::default()
        });
        let request = if v0_7 {
            v0_7_thread(
                request,
                new.instructions,
                new.git_skill_packages,
                mcp_servers,
            )?
        } else {
            request
        };
        let subject = Subject {
            agent_id: Some(agent_id),
            thread_id: None,
            params: Params {
                sdk: None,
                model: Some(model),
                reasoning_level: new.reasoning_level,
                mcp_servers: (!mcp_views.is_empty()).then_some(mcp_views),
            },
        };
        let thread_id = match self.ask(&agent.runner_id, request, subject).await? {
            (
                _,
                Payload::Thread {
                    thread_id,
                    status: ThreadStatus::Ready,
                },
            ) => thread_id,
            (_, reply) => return Err(unexpected("create_thread_request", &reply)),
        };
        let thread = self
            .inner
            .tracker
            .thread(&thread_id, &self.inner.registry)
            .await?
            .ok_or_else(|| {
                ApiError::Internal(format!(
                    "thread {thread_id} was created on the runner but could not be recorded"
                ))
            })?;
        Ok(ThreadView::from(&thread))
    }

    /// `model` (and `reasoning`) must be among what the runner registered
    /// under `sdk`, else 400 naming the field.
    fn check_offered(
        &self,
        runner_id: &str,
        sdk: &str,
        model: &str,
        reasoning: Option<&str>,
    ) -> Result<(), ApiError> {
        let offers = self.inner.registry.offers(runner_id);
        check_model(&offers, sdk, model, reasoning).map_err(|(field, why)| {
            ApiError::BadRequest(format!("{field}: {why} (runner {runner_id})"))
        })
    }

    /// An agent's threads.
    pub(crate) async fn agent_threads(&self, agent_id: &str) -> Result<Vec<ThreadView>, ApiError> {
        self.agent_record(agent_id).await?;
        let threads = self.inner.store.threads_of_agent(agent_id).await?;
        Ok(threads.iter().map(ThreadView::from).collect())
    }

    /// A thread with its turns and their items.
    pub(crate) async fn thread(&self, id: &str) -> Result<ThreadDetail, ApiError> {
        let thread = self.thread_record(id).await?;
        let store = &self.inner.store;
        let turns = store.turns(id).await?;
        let items = store.items(id).await?;
        Ok(ThreadDetail::new(&thread, &turns, &items))
    }

    /// The stored thread, else [`ApiError::NotFound`].
    pub(crate) async fn thread_record(&self, id: &str) -> Result<ThreadRecord, ApiError> {
        self.inner
            .tracker
            .thread(id, &self.inner.registry)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("thread {id} not found")))
    }

    /// Deletes a thread on its runner; deleting it again changes nothing.
    pub(crate) async fn delete_thread(&self, id: &str) -> Result<ThreadView, ApiError> {
        let thread = self.thread_record(id).await?;
        if thread.status != DELETED {
            let request = Request::DeleteThread {
                agent_id: Some(thread.agent_id.clone()),
                thread_id: id.to_owned(),
            };
            let subject = Subject {
                agent_id: Some(&thread.agent_id),
                thread_id: Some(id),
                params: Params::default(),
            };
            match self.ask(&thread.runner_id, request, subject).await? {
                (_, Payload::Thread { thread_id, status })
                    if thread_id == id && status == ThreadStatus::Deleted => {}
                (_, reply) => return Err(unexpected("delete_thread_request", &reply)),
            }
        }
        Ok(ThreadView::from(&self.thread_record(id).await?))
    }

    /// Sends a user message: the runner starts a turn, or steers the running
    /// one when `allow_steer` (else refuses, as a conflict).
    pub(crate) async fn send_message(
        &self,
        thread_id: &str,
        new: NewMessage,
    ) -> Result<MessageAccepted, ApiError> {
        require("text", &new.text)?;
        require_if_given("model", new.model.as_deref())?;
        require_if_given("reasoning_level", new.reasoning_level.as_deref())?;
        let thread = self.thread_record(thread_id).await?;
        if thread.status == DELETED {
            return Err(ApiError::Conflict(format!("thread {thread_id} is deleted")));
        }
        self.available(&thread.runner_id)?;
        if new.model.is_some() || new.reasoning_level.is_some() {
            let agent = self.agent_record(&thread.agent_id).await?;
            let model = new.model.as_deref().unwrap_or(&thread.model);
            self.check_offered(
                &thread.runner_id,
                &agent.sdk,
                model,
                new.reasoning_level.as_deref(),
            )?;
        }
        let request = Request::CreateUserMessage(UserMessage {
            agent_id: Some(thread.agent_id.clone()),
            thread_id: thread_id.to_owned(),
            text: new.text,
            allow_steer: new.allow_steer,
            model: new.model,
            model_reasoning_level: new.reasoning_level,
        });
        let subject = Subject {
            agent_id: Some(&thread.agent_id),
            thread_id: Some(thread_id),
            params: Params::default(),
        };
        let (request_id, turn_id) = match self.ask(&thread.runner_id, request, subject).await? {
            (id, Payload::Turn(u)) => (id, u.sdk_turn_id),
            (_, reply) => return Err(unexpected("create_user_message_request", &reply)),
        };
        // Steered when the turn was started by another request.
        let steered = self
            .inner
            .tracker
            .turn(thread_id, &turn_id, &self.inner.registry)
            .await?
            .is_some_and(|t| t.request_id != request_id);
        Ok(MessageAccepted {
            request_id,
            turn_id,
            steered,
        })
    }
}

/// `202` of `POST /v1/threads/{id}/interrupt`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct InterruptSent {
    /// The request that carried the interrupt.
    pub request_id: String,
    /// The thread.
    pub thread_id: String,
}

impl ControlPlane {
    /// Asks the thread's runner to interrupt its running turn. The turn's
    /// end comes as its update (on the thread's events): CompanyHelm's
    /// runner answers an interrupt no other way. 0.2.0 has no interrupt.
    pub(crate) async fn interrupt(&self, thread_id: &str) -> Result<InterruptSent, ApiError> {
        let thread = self.thread_record(thread_id).await?;
        if thread.status == DELETED {
            return Err(ApiError::Conflict(format!("thread {thread_id} is deleted")));
        }
        if self.protocol_of(&thread.runner_id) == ProtocolVersion::V0_2 {
            return Err(ApiError::Conflict(format!(
                "runner {} speaks protocol 0.2, which has no interrupt",
                thread.runner_id
            )));
        }
        let request = Request::InterruptTurn {
            thread_id: thread_id.to_owned(),
        };
        let (request_id, message) = self.prepare(&thread.runner_id, request)?;
        let record = crate::store::RequestRecord {
            id: request_id.clone(),
            runner_id: thread.runner_id.clone(),
            kind: crate::requests::INTERRUPT_TURN.to_owned(),
            agent_id: Some(thread.agent_id.clone()),
            thread_id: Some(thread_id.to_owned()),
            turn_id: None,
            params: "{}".to_owned(),
            created_at: crate::now_ms(),
        };
        match self.inner.registry.holder(&thread.runner_id) {
            Some(remote) => {
                self.routed(&remote, &message, &record, false).await?;
            }
            None => self.send_here(&thread.runner_id, message, record).await?,
        }
        Ok(InterruptSent {
            request_id,
            thread_id: thread_id.to_owned(),
        })
    }
}

/// A 0.2.0 `CreateThread` made 0.7.0's: an id chosen here, the thread's
/// instructions, skills and MCP servers, and a secret of its own (random; the thread
/// would present it on calls back, which this control plane does not
/// serve, so it is not kept).
fn v0_7_thread(
    request: Request,
    instructions: Option<String>,
    skills: Vec<super::NewGitSkills>,
    mcp_servers: Vec<gantry_runner_protocol::messages::ThreadMcpServer>,
) -> Result<Request, ApiError> {
    let Request::CreateThread(mut thread) = request else {
        return Ok(request);
    };
    let secret = crate::auth::new_token()
        .map_err(|e| ApiError::Internal(format!("cannot make the thread's secret: {e}")))?;
    thread.thread_id = Some(uuid::Uuid::now_v7().to_string());
    thread.additional_model_instructions = instructions;
    thread.cli_secret = Some(secret);
    thread.mcp_servers = mcp_servers;
    thread.git_skill_packages = skills
        .into_iter()
        .map(|p| ThreadGitSkillPackage {
            repository_url: p.repository_url,
            commit_reference: p.commit_reference,
            skills: p
                .skills
                .into_iter()
                .map(|directory_path| ThreadGitSkill { directory_path })
                .collect(),
        })
        .collect();
    Ok(Request::CreateThread(thread))
}
