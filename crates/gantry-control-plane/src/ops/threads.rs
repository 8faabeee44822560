//! Threads: created on their agent's runner, read with their turns and
//! items, deleted, and sent messages.

use gantry_runner_protocol::v0_2 as pb;
use gantry_runner_protocol::v0_2::client_message::Payload;
use gantry_runner_protocol::v0_2::server_message::Request;
use serde::Serialize;

use super::{NewMessage, NewThread, Subject, unexpected};
use crate::ControlPlane;
use crate::error::{ApiError, require, require_if_given};
use crate::offers::check_model;
use crate::requests::Params;
use crate::store::ThreadRecord;
use crate::tracking::merge::DELETED;
use crate::views::{ThreadDetail, ThreadView};

/// `202` of `POST /v1/threads/{id}/messages`.
#[derive(Debug, Serialize)]
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
        let model = new.model.or(agent.model).ok_or_else(|| {
            ApiError::BadRequest("model: required (the agent has no default model)".into())
        })?;
        self.check_offered(
            &agent.runner_id,
            &agent.sdk,
            &model,
            new.reasoning_level.as_deref(),
        )?;
        let request = Request::CreateThreadRequest(pb::CreateThreadRequest {
            agent_id: agent_id.to_owned(),
            model: model.clone(),
            reasoning_level: new.reasoning_level.clone(),
        });
        let subject = Subject {
            agent_id: Some(agent_id),
            thread_id: None,
            params: Params {
                sdk: None,
                model: Some(model),
                reasoning_level: new.reasoning_level,
            },
        };
        let thread_id = match self.ask(&agent.runner_id, request, subject).await? {
            (_, Payload::ThreadUpdate(u)) if u.status() == pb::ThreadStatus::Ready => u.thread_id,
            (_, reply) => return Err(unexpected("create_thread_request", &reply)),
        };
        let thread = self.inner.store.thread(&thread_id).await?.ok_or_else(|| {
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
            .store
            .thread(id)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("thread {id} not found")))
    }

    /// Deletes a thread on its runner; deleting it again changes nothing.
    pub(crate) async fn delete_thread(&self, id: &str) -> Result<ThreadView, ApiError> {
        let thread = self.thread_record(id).await?;
        if thread.status != DELETED {
            let request = Request::DeleteThreadRequest(pb::DeleteThreadRequest {
                agent_id: thread.agent_id.clone(),
                thread_id: id.to_owned(),
            });
            let subject = Subject {
                agent_id: Some(&thread.agent_id),
                thread_id: Some(id),
                params: Params::default(),
            };
            match self.ask(&thread.runner_id, request, subject).await? {
                (_, Payload::ThreadUpdate(u))
                    if u.thread_id == id && u.status() == pb::ThreadStatus::Deleted => {}
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
        let request = Request::CreateUserMessageRequest(pb::CreateUserMessageRequest {
            agent_id: thread.agent_id.clone(),
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
            (id, Payload::TurnUpdate(u)) => (id, u.sdk_turn_id),
            (_, reply) => return Err(unexpected("create_user_message_request", &reply)),
        };
        // Steered when the turn was started by another request.
        let steered = self
            .inner
            .store
            .turn(thread_id, &turn_id)
            .await?
            .is_some_and(|t| t.request_id != request_id);
        Ok(MessageAccepted {
            request_id,
            turn_id,
            steered,
        })
    }
}
