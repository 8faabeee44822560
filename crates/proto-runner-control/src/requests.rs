//! The control plane's requests, served with the engine. Every request is
//! answered (an update, or a `RequestError` saying why not) echoing its
//! request id; a request seen before is answered again without a second
//! effect: agents by their id, threads by the request id they were created
//! under, messages by their request id as the engine's idempotency key.

use std::path::PathBuf;

use gantry_core::{AgentSpec, CreateThread, Engine, EngineError, IfBusy, valid_thread_id};
use gantry_runner_protocol::pb;
use gantry_runner_protocol::pb::client_message::Payload;
use gantry_runner_protocol::pb::server_message::Request;
use gantry_types::{AgentId, ThreadId, ThreadSettingsPatch, TurnStatus};

use super::outbox::{Closed, Outbox};
use super::reports::{Followers, turn_update};

/// Serves requests; cheap to clone.
#[derive(Clone)]
pub(crate) struct Handler {
    pub engine: Engine,
    /// Each thread works in its own directory under this one.
    pub workspaces: PathBuf,
    pub outbox: Outbox,
    pub followers: Followers,
}

/// Why a request was not carried out, as the control plane reads it.
struct Refusal(String);

impl From<EngineError> for Refusal {
    fn from(e: EngineError) -> Self {
        Refusal(e.to_string())
    }
}

type Answer = Result<Vec<Payload>, Refusal>;

impl Handler {
    /// Serves one (validated) request and queues its answer.
    pub(crate) async fn handle(
        &self,
        request_id: Option<String>,
        request: Request,
    ) -> Result<(), Closed> {
        let answer = match request {
            Request::CreateAgentRequest(r) => self.create_agent(r).await,
            Request::DeleteAgentRequest(r) => self.delete_agent(r).await,
            Request::CreateThreadRequest(r) => self.create_thread(request_id.as_deref(), r).await,
            Request::DeleteThreadRequest(r) => self.delete_thread(r).await,
            Request::CreateUserMessageRequest(r) => {
                self.user_message(request_id.as_deref(), r).await
            }
            Request::InstallSkillsMpRequest(r) => self.install_skills(r).await,
        };
        let payloads = answer.unwrap_or_else(|Refusal(error_message)| {
            vec![Payload::RequestError(pb::RequestError { error_message })]
        });
        for payload in payloads {
            let message = pb::ClientMessage {
                request_id: request_id.clone(),
                payload: Some(payload),
            };
            self.outbox.send(message).await?;
        }
        Ok(())
    }

    /// Refuses a request that broke a field constraint.
    pub(crate) async fn refuse(
        &self,
        request_id: Option<String>,
        why: String,
    ) -> Result<(), Closed> {
        let message = pb::ClientMessage {
            request_id,
            payload: Some(Payload::RequestError(pb::RequestError {
                error_message: why,
            })),
        };
        self.outbox.send(message).await
    }

    async fn create_agent(&self, r: pb::CreateAgentRequest) -> Answer {
        let spec = AgentSpec {
            id: Some(AgentId::from(r.agent_id.as_str())),
            sdk: Some(r.agent_sdk),
            ..AgentSpec::default()
        };
        // Saving an agent again replaces it with the same: idempotent.
        let agent = self.engine.agents().save(spec).await?;
        Ok(vec![agent_update(&agent.id, pb::AgentStatus::Ready)])
    }

    async fn delete_agent(&self, r: pb::DeleteAgentRequest) -> Answer {
        let id = AgentId::from(r.agent_id.as_str());
        // Deleting an agent already gone is what was asked.
        self.engine.agents().delete(&id).await?;
        Ok(vec![agent_update(&id, pb::AgentStatus::Deleted)])
    }

    async fn create_thread(&self, request_id: Option<&str>, r: pb::CreateThreadRequest) -> Answer {
        let agent = AgentId::from(r.agent_id.as_str());
        self.engine.agents().get(&agent).await?;
        self.engine
            .providers()
            .check_model(&r.model)
            .map_err(Refusal)?;
        // 0.2.0 has the runner choose the thread id; choosing the request id
        // makes a re-sent request find the thread it created.
        let id = request_id
            .filter(|id| valid_thread_id(id))
            .map_or_else(ThreadId::new, ThreadId::from);
        if let Ok(view) = self.engine.threads().read(&id).await {
            if view.thread.agent_id.as_ref() != Some(&agent) {
                return Err(Refusal(format!("thread {id} exists under another agent")));
            }
            if view.thread.archived {
                return Err(Refusal(format!("thread {id} was deleted")));
            }
            return Ok(vec![thread_update(&id, pb::ThreadStatus::Ready)]);
        }
        let cwd = workspace_of(&self.workspaces, &id).await?;
        let thread = self
            .engine
            .threads()
            .create(CreateThread {
                id: Some(id),
                cwd,
                model: Some(r.model),
                reasoning: r.reasoning_level.filter(|l| !l.trim().is_empty()),
                agent: Some(agent),
                ..CreateThread::default()
            })
            .await?;
        self.followers
            .ensure(&self.engine, &thread.id, &self.outbox)
            .await;
        Ok(vec![thread_update(&thread.id, pb::ThreadStatus::Ready)])
    }

    async fn delete_thread(&self, r: pb::DeleteThreadRequest) -> Answer {
        let id = ThreadId::from(r.thread_id.as_str());
        let view = self.thread_of(&r.agent_id, &id).await?;
        if !view.thread.archived {
            self.engine.turns().interrupt(&id).await?;
            self.engine.threads().archive(&id).await?;
        }
        Ok(vec![thread_update(&id, pb::ThreadStatus::Deleted)])
    }

    async fn user_message(
        &self,
        request_id: Option<&str>,
        r: pb::CreateUserMessageRequest,
    ) -> Answer {
        let thread = ThreadId::from(r.thread_id.as_str());
        let view = self.thread_of(&r.agent_id, &thread).await?;
        if let Some(running) = view.running_turn()
            && !r.allow_steer
            && running.turn.key.as_deref() != request_id
        {
            // Refused before any override changes the thread.
            return Err(busy(&running.turn.id, &thread));
        }
        self.followers
            .ensure(&self.engine, &thread, &self.outbox)
            .await;
        let model = r.model.filter(|m| !m.trim().is_empty());
        let reasoning = r.model_reasoning_level.filter(|l| !l.trim().is_empty());
        if model.is_some() || reasoning.is_some() {
            if let Some(model) = &model {
                self.engine
                    .providers()
                    .check_model(model)
                    .map_err(Refusal)?;
            }
            // The override stays for the thread's next messages, as a
            // model picked in a chat does.
            self.engine
                .threads()
                .configure(
                    &thread,
                    ThreadSettingsPatch {
                        model,
                        reasoning: reasoning.map(Some),
                        ..ThreadSettingsPatch::default()
                    },
                )
                .await?;
        }
        let if_busy = if r.allow_steer {
            IfBusy::Steer
        } else {
            IfBusy::Reject
        };
        let key = request_id.map_or_else(uuid_key, str::to_owned);
        let delivered = match self
            .engine
            .turns()
            .send_once(&thread, key, r.text, if_busy)
            .await
        {
            Ok(delivered) => delivered,
            Err(EngineError::Busy { turn, .. }) => return Err(busy(&turn, &thread)),
            Err(e) => return Err(e.into()),
        };
        if delivered.first_time && !delivered.steered {
            // The thread's follower reports the new turn from its events.
            return Ok(Vec::new());
        }
        // A steer, or a request seen before: say where the turn stands.
        let view = self.engine.threads().read(&thread).await?;
        let status = match view.turns.iter().find(|t| t.turn.id == delivered.turn) {
            Some(t) if t.turn.status != TurnStatus::Running => pb::TurnStatus::Completed,
            _ => pb::TurnStatus::Running,
        };
        let update = turn_update(None, &delivered.turn, status);
        Ok(update.payload.into_iter().collect())
    }

    async fn install_skills(&self, r: pb::InstallSkillsMpRequest) -> Answer {
        let agent = AgentId::from(r.agent_id.as_str());
        self.engine
            .agents()
            .install_skill_package(&agent, &r.package_name)
            .await?;
        Ok(vec![Payload::SkillMpUpdate(pb::SkillMpUpdate {
            agent_id: r.agent_id,
            status: pb::SkillMpStatus::Installed as i32,
            package_name: r.package_name,
        })])
    }

    /// The thread, if it belongs to the agent.
    async fn thread_of(
        &self,
        agent: &str,
        thread: &ThreadId,
    ) -> Result<std::sync::Arc<gantry_types::ThreadView>, Refusal> {
        let view = self.engine.threads().read(thread).await?;
        if view.thread.agent_id.as_ref().map(AgentId::as_str) != Some(agent) {
            return Err(Refusal(format!(
                "thread {thread} does not belong to agent {agent}"
            )));
        }
        Ok(view)
    }
}

/// A fresh key for a message sent without a request id, so it runs.
fn uuid_key() -> String {
    gantry_types::TurnId::new().to_string()
}

fn busy(turn: &gantry_types::TurnId, thread: &ThreadId) -> Refusal {
    Refusal(format!(
        "turn {turn} is running on thread {thread}; send with allow_steer to steer it"
    ))
}

fn agent_update(id: &AgentId, status: pb::AgentStatus) -> Payload {
    Payload::AgentUpdate(pb::AgentUpdate {
        agent_id: id.to_string(),
        status: status as i32,
    })
}

fn thread_update(id: &ThreadId, status: pb::ThreadStatus) -> Payload {
    Payload::ThreadUpdate(pb::ThreadUpdate {
        thread_id: id.to_string(),
        status: status as i32,
    })
}

/// Creates the workspace of thread `id` and checks that, resolved, it is a
/// directory strictly inside `root`: a control plane's id can never make a
/// thread work in the runner's data dir or the workspaces root itself.
async fn workspace_of(root: &std::path::Path, id: &ThreadId) -> Result<PathBuf, Refusal> {
    let cwd = root.join(id.as_str());
    tokio::fs::create_dir_all(&cwd).await.map_err(|e| {
        Refusal(format!(
            "cannot create the workspace {}: {e}",
            cwd.display()
        ))
    })?;
    let resolve = |p: &std::path::Path| {
        std::fs::canonicalize(p)
            .map_err(|e| Refusal(format!("cannot resolve {}: {e}", p.display())))
    };
    let (real_root, real) = (resolve(root)?, resolve(&cwd)?);
    if real.parent() != Some(real_root.as_path()) {
        return Err(Refusal(format!(
            "thread {id}: its workspace {} is not a directory of its own inside {}",
            real.display(),
            real_root.display()
        )));
    }
    Ok(cwd)
}
