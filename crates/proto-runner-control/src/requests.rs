//! The control plane's requests, served with the engine. Every request is
//! answered (an update, or a `RequestError` saying why not) echoing its
//! request id, but an interrupt, which CompanyHelm's runner answers only
//! by the end of the turn it stopped; a request seen before is answered
//! again without a second effect: agents by their id, threads by their id
//! (0.7.0's, chosen by the control plane) or by the request id they were
//! created under (0.2.0's, where the runner chooses), messages by their
//! request id as the engine's idempotency key.
//!
//! 0.7.0 has no agents: its threads live under one agent the runner keeps
//! ([`IMPLICIT_AGENT`]), made the first time a thread needs it.

use std::path::PathBuf;

use gantry_core::{AgentSpec, CreateThread, Engine, EngineError, IfBusy, valid_thread_id};
use gantry_runner_protocol::messages::{
    self, AgentStatus, Payload, Request, SkillMpStatus, ThreadStatus, TurnStatus as WireTurnStatus,
    UserMessage,
};
use gantry_types::{AgentId, GANTRY_SDK, ThreadId, ThreadSettingsPatch, TurnId, TurnStatus};

use gantry_runner_protocol::messages::ClientMessage;

use super::command_env::RunnerCommandEnv;
use super::outbox::{Closed, Outbox};
use super::reports::{Followers, turn_update};
use super::thread_secrets::CLI_SECRET_ENV;
use super::{git_skills, thread_mcp};

/// The agent 0.7.0 threads run under.
pub(crate) const IMPLICIT_AGENT: &str = "companyhelm-threads";

/// Serves requests; cheap to clone.
#[derive(Clone)]
pub(crate) struct Handler {
    pub engine: Engine,
    /// Each thread works in its own directory under this one.
    pub workspaces: PathBuf,
    pub outbox: Outbox,
    pub followers: Followers,
    /// Where a thread's CLI secret goes; none without a command env.
    pub command_env: Option<std::sync::Arc<RunnerCommandEnv>>,
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
        let id = request_id.as_deref();
        let answer = match request {
            Request::CreateAgent {
                agent_id,
                agent_sdk,
            } => self.create_agent(agent_id, agent_sdk).await,
            Request::DeleteAgent { agent_id } => self.delete_agent(agent_id).await,
            Request::CreateThread(r) => self.create_thread(id, r).await,
            Request::DeleteThread {
                agent_id,
                thread_id,
            } => self.delete_thread(agent_id.as_deref(), thread_id).await,
            Request::CreateUserMessage(r) => self.user_message(id, r).await,
            Request::InstallSkills {
                agent_id,
                package_name,
            } => self.install_skills(agent_id, package_name).await,
            Request::InterruptTurn { thread_id } => return self.interrupt(thread_id).await,
            Request::Heartbeat => Ok(vec![Payload::Heartbeat]),
            Request::CodexConfiguration { .. } => Err(Refusal(format!(
                "this runner runs the {GANTRY_SDK} sdk; it has no Codex to configure"
            ))),
        };
        let payloads = answer
            .unwrap_or_else(|Refusal(error_message)| vec![Payload::RequestError { error_message }]);
        for payload in payloads {
            let message = ClientMessage {
                request_id: request_id.clone(),
                payload,
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
        let message = ClientMessage {
            request_id,
            payload: Payload::RequestError { error_message: why },
        };
        self.outbox.send(message).await
    }

    async fn create_agent(&self, agent_id: String, sdk: String) -> Answer {
        let spec = AgentSpec {
            id: Some(AgentId::from(agent_id.as_str())),
            sdk: Some(sdk),
            ..AgentSpec::default()
        };
        // Saving an agent again replaces it with the same: idempotent.
        let agent = self.engine.agents().save(spec).await?;
        Ok(vec![agent_update(&agent.id, AgentStatus::Ready)])
    }

    async fn delete_agent(&self, agent_id: String) -> Answer {
        let id = AgentId::from(agent_id.as_str());
        // Deleting an agent already gone is what was asked.
        self.engine.agents().delete(&id).await?;
        Ok(vec![agent_update(&id, AgentStatus::Deleted)])
    }

    async fn create_thread(&self, request_id: Option<&str>, r: messages::CreateThread) -> Answer {
        self.engine
            .providers()
            .check_model(&r.model)
            .map_err(Refusal)?;
        let (agent, id) = match (r.thread_id.as_deref(), r.agent_id.as_deref()) {
            // 0.7.0: the control plane chose the id.
            (Some(thread), _) => {
                if !valid_thread_id(thread) {
                    return Err(Refusal(format!(
                        "thread id {thread:?} is invalid: use 1 to 128 letters, digits, `-`, `_`, `.` or `:`"
                    )));
                }
                (self.implicit_agent().await?, ThreadId::from(thread))
            }
            // 0.2.0 has the runner choose the thread id; choosing the
            // request id makes a re-sent request find the thread it created.
            (None, Some(agent)) => {
                let agent = AgentId::from(agent);
                self.engine.agents().get(&agent).await?;
                let id = request_id
                    .filter(|id| valid_thread_id(id))
                    .map_or_else(ThreadId::new, ThreadId::from);
                (agent, id)
            }
            (None, None) => return Err(Refusal("a thread needs an agent or an id".to_owned())),
        };
        if let Ok(view) = self.engine.threads().read(&id).await {
            if view.thread.agent_id.as_ref() != Some(&agent) {
                return Err(Refusal(format!("thread {id} exists under another agent")));
            }
            if view.thread.archived {
                return Err(Refusal(format!("thread {id} was deleted")));
            }
            return Ok(vec![thread_update(&id, ThreadStatus::Ready)]);
        }
        let cwd = workspace_of(&self.workspaces, &id).await?;
        let instructions = self.instructions(&id, &r)?;
        let mcp_servers = thread_mcp::configs(&r.mcp_servers, &cwd).map_err(Refusal)?;
        if !r.git_skill_packages.is_empty() {
            // Before the thread starts: it discovers its skills as it does.
            let skills_dir = git_skills::skills_dir(&cwd);
            let names = git_skills::install(&self.engine, &r.git_skill_packages, &skills_dir)
                .await
                .map_err(Refusal)?;
            tracing::info!(thread = %id, skills = ?names, "installed the thread's git skill packages");
        }
        let thread = self
            .engine
            .threads()
            .create(CreateThread {
                id: Some(id),
                cwd,
                model: Some(r.model),
                reasoning: r.reasoning_level.filter(|l| !l.trim().is_empty()),
                instructions,
                agent: Some(agent),
                ..CreateThread::default()
            })
            .await?;
        if !mcp_servers.is_empty() {
            self.start_mcp_servers(&thread.id, mcp_servers).await?;
        }
        self.followers
            .ensure(&self.engine, &thread.id, &self.outbox)
            .await;
        Ok(vec![thread_update(&thread.id, ThreadStatus::Ready)])
    }

    /// The thread's instructions: the control plane's, and where its
    /// commands find its CLI secret, which is kept for them (the secret
    /// itself never enters the instructions: they are in the event log).
    fn instructions(
        &self,
        id: &ThreadId,
        r: &messages::CreateThread,
    ) -> Result<Option<String>, Refusal> {
        let given = r
            .additional_model_instructions
            .as_deref()
            .map(str::trim)
            .filter(|i| !i.is_empty());
        let Some(secret) = r.cli_secret.as_deref().filter(|s| !s.is_empty()) else {
            return Ok(given.map(str::to_owned));
        };
        let Some(env) = &self.command_env else {
            tracing::warn!(thread = %id, "this runner has no command environment: the thread's CLI secret does not reach its commands");
            return Ok(given.map(str::to_owned));
        };
        env.secrets
            .set(id, secret)
            .map_err(|e| Refusal(format!("cannot keep the thread's secret: {e}")))?;
        let note = format!(
            "Commands you run find this thread's secret for the CompanyHelm agent API in \
             ${CLI_SECRET_ENV} (send it as `Authorization: Bearer ${CLI_SECRET_ENV}`); never print it."
        );
        Ok(Some(match given {
            Some(given) => format!("{given}\n\n{note}"),
            None => note,
        }))
    }

    /// Gives the thread its MCP servers and connects them before it is
    /// said ready, so its first turn has their tools. A server that cannot
    /// start is logged by name (its config may hold secrets) and left out;
    /// the thread works without it.
    async fn start_mcp_servers(
        &self,
        thread: &ThreadId,
        servers: Vec<gantry_types::mcp::McpServerConfig>,
    ) -> Result<(), Refusal> {
        let mcp = self.engine.mcp();
        mcp.set_thread_servers(thread, servers).await?;
        let summary = mcp.start_thread_servers(thread).await;
        for failed in &summary.failed {
            tracing::warn!(
                thread = %thread,
                server = %failed.server_name,
                error = %failed.error,
                "a thread's MCP server did not start; the thread goes on without its tools"
            );
        }
        Ok(())
    }

    /// The agent of 0.7.0's threads, made when first needed.
    async fn implicit_agent(&self) -> Result<AgentId, Refusal> {
        let id = AgentId::from(IMPLICIT_AGENT);
        if self.engine.agents().get(&id).await.is_err() {
            let spec = AgentSpec {
                id: Some(id.clone()),
                sdk: Some(GANTRY_SDK.to_owned()),
                ..AgentSpec::default()
            };
            self.engine.agents().save(spec).await?;
        }
        Ok(id)
    }

    async fn delete_thread(&self, agent: Option<&str>, thread: String) -> Answer {
        let id = ThreadId::from(thread.as_str());
        let view = match self.thread_of(agent, &id).await {
            Ok(view) => view,
            // 0.7.0: deleting a thread this runner does not have is what was
            // asked (CompanyHelm's runner answers the same).
            Err(_) if agent.is_none() && self.engine.threads().read(&id).await.is_err() => {
                return Ok(vec![thread_update(&id, ThreadStatus::Deleted)]);
            }
            Err(refusal) => return Err(refusal),
        };
        if !view.thread.archived {
            self.engine.turns().interrupt(&id).await?;
            self.engine.threads().archive(&id).await?;
        }
        // Its servers' processes end with it (deleting again finds none).
        self.engine.mcp().remove_thread_servers(&id).await?;
        if let Some(env) = &self.command_env {
            env.secrets.remove(&id);
        }
        Ok(vec![thread_update(&id, ThreadStatus::Deleted)])
    }

    /// Interrupts the thread's running turn, answering as CompanyHelm's
    /// runner does, never under the interrupt's request id: a turn that was
    /// running ends with its own updates (its message's request id); with
    /// none running, the last turn's end and the thread ready are said
    /// again; a refusal is a `RequestError` echoing no request.
    async fn interrupt(&self, thread: String) -> Result<(), Closed> {
        let id = ThreadId::from(thread.as_str());
        let said = match self.interrupt_running(&id).await {
            // Its follower reports the turn's end.
            Ok(Some(_)) => Vec::new(),
            Ok(None) => {
                let mut said = Vec::new();
                if let Ok(view) = self.engine.threads().read(&id).await
                    && let Some(last) = view.turns.last()
                {
                    said.push(turn_update(
                        None,
                        &id,
                        &last.turn.id,
                        WireTurnStatus::Completed,
                    ));
                }
                said.push(ClientMessage {
                    request_id: None,
                    payload: thread_update(&id, ThreadStatus::Ready),
                });
                said
            }
            Err(Refusal(error_message)) => vec![ClientMessage {
                request_id: None,
                payload: Payload::RequestError { error_message },
            }],
        };
        for message in said {
            self.outbox.send(message).await?;
        }
        Ok(())
    }

    /// The turn interrupted, once it ended; `None` when none was running.
    async fn interrupt_running(&self, id: &ThreadId) -> Result<Option<TurnId>, Refusal> {
        self.thread_of(None, id).await?;
        Ok(self.engine.turns().interrupt(id).await?)
    }

    async fn user_message(&self, request_id: Option<&str>, r: UserMessage) -> Answer {
        let thread = ThreadId::from(r.thread_id.as_str());
        let view = self.thread_of(r.agent_id.as_deref(), &thread).await?;
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
            Some(t) if t.turn.status != TurnStatus::Running => WireTurnStatus::Completed,
            _ => WireTurnStatus::Running,
        };
        let update = turn_update(None, &thread, &delivered.turn, status);
        Ok(vec![update.payload])
    }

    async fn install_skills(&self, agent_id: String, package_name: String) -> Answer {
        let agent = AgentId::from(agent_id.as_str());
        self.engine
            .agents()
            .install_skill_package(&agent, &package_name)
            .await?;
        Ok(vec![Payload::SkillPackage {
            agent_id,
            package_name,
            status: SkillMpStatus::Installed,
        }])
    }

    /// The thread, if it belongs to the agent (0.2.0 names it; 0.7.0's
    /// threads are all under the implicit agent).
    async fn thread_of(
        &self,
        agent: Option<&str>,
        thread: &ThreadId,
    ) -> Result<std::sync::Arc<gantry_types::ThreadView>, Refusal> {
        let view = self.engine.threads().read(thread).await?;
        let agent = agent.unwrap_or(IMPLICIT_AGENT);
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

fn agent_update(id: &AgentId, status: AgentStatus) -> Payload {
    Payload::Agent {
        agent_id: id.to_string(),
        status,
    }
}

fn thread_update(id: &ThreadId, status: ThreadStatus) -> Payload {
    Payload::Thread {
        thread_id: id.to_string(),
        status,
    }
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
