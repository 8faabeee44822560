//! The engine's public API: a cheap, cloneable handle over shared state.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use gantry_store::{Store, ThreadPage, ThreadQuery};
use gantry_tools::ToolRegistry;
use gantry_tools::lsp::LspManager;
use gantry_tools::mcp::McpManager;
use gantry_types::{
    AgentId, ApprovalDecision, Event, EventPayload, ForkOrigin, Item, ItemId, ItemKind, ItemStatus,
    LaneHandler, ModelEndpoint, RuleDecision, Thread, ThreadId, ThreadPolicy, ThreadSettings,
    ThreadStatus, ThreadView, Turn, TurnId, TurnStatus, Usage,
};
use tokio::sync::{mpsc, oneshot};

use crate::actor::{ActorHandle, Command, ExternalTaskInfo, Resolution, ThreadActor};
use crate::bus::{Bus, Notification, Subscription};
use crate::context::{ContextUsage, Counter};
use crate::engine_events::{EngineEvent, EngineEventBus, EngineEventKind, EngineEvents};
use crate::policy;
use crate::providers::Providers;
use crate::turn;
use crate::writer::Writer;
use crate::{Clock, EngineConfig, EngineError, ModelResolver, SystemClock};

/// What to do with a user message while a turn is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfBusy {
    /// Refuse with [`EngineError::Busy`].
    Reject,
    /// Inject it into the running turn.
    Steer,
    /// Run it as the next turn.
    Queue,
}

/// Where a keyed message went ([`Engine::send_message_once`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// The turn it started, steered or was queued as.
    pub turn: TurnId,
    /// Whether it steered a running turn (else it starts or is queued as `turn`).
    pub steered: bool,
    /// False when the key was seen before and nothing was done.
    pub first_time: bool,
}

/// A user message on its way into a thread.
#[derive(Debug, Clone)]
pub(crate) struct Input {
    pub text: String,
    pub key: Option<String>,
}

impl From<String> for Input {
    fn from(text: String) -> Self {
        Input { text, key: None }
    }
}

/// Parameters of a new thread.
#[derive(Debug, Clone, Default)]
pub struct CreateThread {
    /// Workspace directory; must exist.
    pub cwd: PathBuf,
    /// Model id; the engine's default when `None`.
    pub model: Option<String>,
    /// Reasoning effort; the agent's, else the engine's default when `None`.
    pub reasoning: Option<String>,
    /// Extra instructions for the model.
    pub instructions: Option<String>,
    /// Optional name.
    pub name: Option<String>,
    /// What its tool calls may do (the default allows everything, as before).
    pub policy: ThreadPolicy,
    /// The agent it runs under: its model and instructions are the
    /// defaults, its installed skills are offered.
    pub agent: Option<AgentId>,
    /// The id a client chose (letters, digits, `-`, `_`, `.`, `:`; at most
    /// 128 characters); a fresh UUIDv7 when `None`.
    pub id: Option<ThreadId>,
    /// The thread's own model server, instead of the configured providers.
    pub endpoint: Option<ModelEndpoint>,
    /// Sampling temperature (0..=2).
    pub temperature: Option<f32>,
    /// Cap on the tokens of each model answer.
    pub max_output_tokens: Option<u32>,
    /// What the client keeps with the thread.
    pub metadata: BTreeMap<String, String>,
    /// Conversation the thread starts with, recorded as one completed turn
    /// the model sees as history.
    pub context: Vec<ContextMessage>,
}

/// A message of the conversation a thread starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextMessage {
    /// Who said it.
    pub role: ContextRole,
    /// What was said.
    pub text: String,
}

/// Who said a [`ContextMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextRole {
    /// The user.
    User,
    /// The agent.
    Assistant,
}

/// State shared by the engine handle, the actors and the turn tasks.
pub(crate) struct Shared {
    pub store: Arc<dyn Store>,
    pub bus: Arc<Bus>,
    /// Engine-wide events (not tied to one thread's log).
    pub events: EngineEventBus,
    pub writer: Writer,
    pub tools: ToolRegistry,
    pub mcp: McpManager,
    /// Language servers, one per (workspace root, language).
    pub lsp: LspManager,
    pub models: Arc<dyn ModelResolver>,
    pub clock: Arc<dyn Clock>,
    pub config: EngineConfig,
    /// The provider registry, when the engine manages providers.
    pub providers: Option<Arc<Providers>>,
    /// Scheduled jobs: which are running, the row lock, the scheduler's wake-up.
    pub cron: crate::cron::CronState,
    /// Clients of threads' own model servers.
    pub endpoints: crate::endpoints::Endpoints,
    /// Variables added to the environment of every command tools and jobs
    /// start (`set_command_env`).
    pub command_env: std::sync::RwLock<Arc<BTreeMap<String, String>>>,
    /// Variables minted for one command as it starts.
    pub command_env_source: Option<Arc<dyn crate::CommandEnvSource>>,
    /// Each thread's cell: its actor, while live. A thread loads under its
    /// own cell's lock, so it never gets two actors and others never wait.
    pub cells: crate::cells::Cells,
}

impl Shared {
    /// The extra environment of commands (a cheap `Arc` clone).
    pub(crate) fn command_env(&self) -> Arc<BTreeMap<String, String>> {
        // A panicking writer cannot leave the map half-replaced.
        self.command_env
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Builds an [`Engine`].
pub struct EngineBuilder {
    store: Arc<dyn Store>,
    models: Arc<dyn ModelResolver>,
    tools: ToolRegistry,
    mcp: McpManager,
    lsp: LspManager,
    clock: Arc<dyn Clock>,
    config: EngineConfig,
    providers: Option<Arc<Providers>>,
    command_env_source: Option<Arc<dyn crate::CommandEnvSource>>,
}

impl EngineBuilder {
    /// An engine over `store`, resolving models with `models`, with the built-in tools.
    pub fn new(store: Arc<dyn Store>, models: Arc<dyn ModelResolver>) -> Self {
        Self {
            store,
            models,
            tools: ToolRegistry::builtin(),
            mcp: McpManager::new(),
            lsp: LspManager::new(),
            clock: Arc::new(SystemClock),
            config: EngineConfig::default(),
            providers: None,
            command_env_source: None,
        }
    }

    /// Asks `source` for variables for each command as it starts (see
    /// [`crate::CommandEnvSource`]).
    pub fn command_env_source(mut self, source: Arc<dyn crate::CommandEnvSource>) -> Self {
        self.command_env_source = Some(source);
        self
    }

    /// Replaces the tool registry.
    pub fn tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = tools;
        self
    }

    /// Uses `mcp` for MCP servers (its configured servers are kept; the ones
    /// stored by earlier `add_mcp_server` calls are added at start).
    pub fn mcp(mut self, mcp: McpManager) -> Self {
        self.mcp = mcp;
        self
    }

    /// Uses `lsp` for language servers (its languages and commands; the
    /// default knows rust-analyzer, pylsp, typescript-language-server,
    /// clangd and gopls).
    pub fn lsp(mut self, lsp: LspManager) -> Self {
        self.lsp = lsp;
        self
    }

    /// Replaces the clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Manages providers with `providers`, which also becomes the model resolver.
    pub fn providers(mut self, providers: Arc<Providers>) -> Self {
        self.models = providers.clone();
        self.providers = Some(providers);
        self
    }

    /// Replaces the configuration.
    pub fn config(mut self, config: EngineConfig) -> Self {
        self.config = config;
        self
    }

    /// Starts the engine: its store writer, then crash recovery (turns left
    /// running by a dead process are closed as interrupted).
    pub async fn start(self) -> Result<Engine, EngineError> {
        let cursor = self.store.last_cursor().await?;
        let bus = Arc::new(Bus::new(
            self.store.clone(),
            self.config.subscriber_buffer,
            cursor,
        ));
        let events = EngineEventBus::new(self.config.subscriber_buffer);
        let writer = Writer::spawn(self.store.clone(), bus.clone(), {
            let (events, clock) = (events.clone(), self.clock.clone());
            move |error: Option<&str>| {
                events.publish(EngineEvent {
                    seq: 0,
                    ts: clock.now_ms(),
                    thread_id: None,
                    kind: EngineEventKind::StoreHealth {
                        error: error.map(str::to_owned),
                    },
                })
            }
        });
        let engine = Engine {
            shared: Arc::new(Shared {
                store: self.store,
                bus,
                events,
                writer,
                tools: self.tools,
                mcp: self.mcp,
                lsp: self.lsp,
                models: self.models,
                clock: self.clock,
                config: self.config,
                providers: self.providers,
                cron: Default::default(),
                endpoints: Default::default(),
                command_env: Default::default(),
                command_env_source: self.command_env_source,
                cells: Default::default(),
            }),
        };
        engine.load_mcp_servers().await?;
        engine.forward_lsp_events();
        for id in engine.shared.store.running_threads().await? {
            // One thread that cannot be loaded (a corrupt row) stays
            // unloaded and is reported; every other thread still starts.
            if let Err(e) = engine.actor(&id).await {
                tracing::error!(thread = %id, error = %e, "cannot recover thread; it stays as stored");
            }
        }
        Ok(engine)
    }
}

/// The engine. Clone it freely: clones share one runtime.
#[derive(Clone)]
pub struct Engine {
    pub(crate) shared: Arc<Shared>,
}

impl Engine {
    /// The engine's configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.shared.config
    }

    /// The provider registry, if the engine has one.
    pub fn providers(&self) -> Option<&Arc<Providers>> {
        self.shared.providers.as_ref()
    }

    /// Sets the variables added to the environment of every command the
    /// tools and scheduled jobs start from now on (over the server's own
    /// environment). Names must be non-empty, without `=` or NUL.
    pub fn set_command_env(&self, env: BTreeMap<String, String>) -> Result<(), EngineError> {
        for (name, value) in &env {
            if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
                return Err(EngineError::InvalidInput(format!(
                    "environment variable `{name}`: names must be non-empty, without `=` or NUL; values without NUL"
                )));
            }
        }
        *self
            .shared
            .command_env
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Arc::new(env);
        Ok(())
    }

    /// The variables [`Engine::set_command_env`] set.
    pub fn command_env(&self) -> Arc<BTreeMap<String, String>> {
        self.shared.command_env()
    }

    /// The tools threads offer their model.
    pub fn tools(&self) -> &ToolRegistry {
        &self.shared.tools
    }

    /// Creates a thread.
    pub async fn create_thread(&self, params: CreateThread) -> Result<Thread, EngineError> {
        let cwd = std::fs::canonicalize(&params.cwd)
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| {
                EngineError::InvalidInput(format!(
                    "workspace {} is not an existing directory",
                    params.cwd.display()
                ))
            })?;
        let agent = match &params.agent {
            Some(id) => Some(self.agent(id).await?),
            None => None,
        };
        let model = params
            .model
            .filter(|m| !m.trim().is_empty())
            .or_else(|| agent.as_ref().and_then(|a| a.model.clone()))
            .unwrap_or_else(|| self.default_model());
        let reasoning = params
            .reasoning
            .filter(|r| !r.trim().is_empty())
            .or_else(|| agent.as_ref().and_then(|a| a.reasoning.clone()));
        let instructions = params
            .instructions
            .or_else(|| agent.as_ref().and_then(|a| a.instructions.clone()));
        let id = match params.id {
            Some(id) => check_thread_id(id)?,
            None => ThreadId::new(),
        };
        let now = self.shared.clock.now_ms();
        let thread = Thread {
            id,
            name: params.name,
            cwd: cwd.to_string_lossy().into_owned(),
            model,
            reasoning,
            instructions,
            endpoint: params.endpoint,
            temperature: params.temperature,
            max_output_tokens: params.max_output_tokens,
            metadata: params.metadata,
            status: ThreadStatus::Idle,
            archived: false,
            preview: String::new(),
            created_at: now,
            updated_at: now,
            forked_from: None,
            agent_id: params.agent,
            usage: Usage::default(),
            cost_usd: 0.0,
            paused: false,
            policy: params.policy,
            lane_handlers: Vec::new(),
            todos: Vec::new(),
            goal: None,
            last_seq: 0,
        };
        thread
            .settings()
            .validate()
            .map_err(EngineError::InvalidInput)?;
        let mut payloads = vec![EventPayload::ThreadCreated {
            thread: thread.clone(),
        }];
        payloads.extend(context_turn(&thread, &params.context, now));
        self.spawn_new(payloads).await?;
        self.read(&thread.id).await.map(|v| v.thread.clone())
    }

    /// Changes a thread's settings (name, model, instructions, model server,
    /// sampling): `change` edits a copy of the current ones, which are
    /// validated, recorded, and used from the next model request. Returns
    /// the thread as it is now. Refused for an archived thread.
    pub async fn configure_thread(
        &self,
        thread: &ThreadId,
        change: impl FnOnce(&mut ThreadSettings) + Send + 'static,
    ) -> Result<Thread, EngineError> {
        self.ask(thread, |reply| Command::Configure {
            change: Box::new(change),
            reply,
        })
        .await?
    }

    /// Sends a user message: starts a turn if the thread is idle, else does
    /// what `if_busy` says. Returns the turn the message went to.
    pub async fn send_message(
        &self,
        thread: &ThreadId,
        text: impl Into<String>,
        if_busy: IfBusy,
    ) -> Result<TurnId, EngineError> {
        let text = non_empty(text.into())?;
        let delivered = self
            .ask(thread, |reply| Command::Send {
                input: Input { text, key: None },
                if_busy,
                reply,
            })
            .await??;
        Ok(delivered.turn)
    }

    /// Sends a user message at most once per `key` (a client's request id):
    /// the first time like [`Engine::send_message`]; again with a key the
    /// thread has seen, nothing happens and the turn the first one went to
    /// is returned with `first_time: false`. Keys live in the thread's log,
    /// so this holds across restarts.
    pub async fn send_message_once(
        &self,
        thread: &ThreadId,
        key: impl Into<String>,
        text: impl Into<String>,
        if_busy: IfBusy,
    ) -> Result<Delivered, EngineError> {
        let text = non_empty(text.into())?;
        let key = non_empty(key.into())?;
        self.ask(thread, |reply| Command::Send {
            input: Input {
                text,
                key: Some(key),
            },
            if_busy,
            reply,
        })
        .await?
    }

    /// Injects a message into the running turn; the model sees it before its
    /// next request. Refused when no turn runs or the turn is finishing.
    pub async fn steer(
        &self,
        thread: &ThreadId,
        text: impl Into<String>,
    ) -> Result<TurnId, EngineError> {
        let text = non_empty(text.into())?;
        self.ask(thread, |reply| Command::Steer {
            input: Input { text, key: None },
            reply,
        })
        .await?
    }

    /// Runs the message after the current turn (at once if idle).
    pub async fn queue(
        &self,
        thread: &ThreadId,
        text: impl Into<String>,
    ) -> Result<TurnId, EngineError> {
        self.send_message(thread, text, IfBusy::Queue).await
    }

    /// Interrupts the running turn: cancels the model stream, kills the running
    /// tools' process groups, and returns once the turn has ended as
    /// interrupted. `None` if no turn was running.
    pub async fn interrupt(&self, thread: &ThreadId) -> Result<Option<TurnId>, EngineError> {
        self.ask(thread, |reply| Command::Interrupt { reply }).await
    }

    /// Waits until `turn` (running, queued or ended) has ended; the turn as
    /// it ended. It follows the thread across lags.
    pub async fn wait_turn(&self, thread: &ThreadId, turn: &TurnId) -> Result<Turn, EngineError> {
        let view = self.read(thread).await?;
        let known = view.queued.iter().any(|q| &q.turn_id == turn);
        match ended_turn(&view, turn) {
            Some(Ok(ended)) => return Ok(ended),
            None if !known => {
                return Err(EngineError::TurnNotFound {
                    thread: thread.clone(),
                    turn: turn.clone(),
                });
            }
            _ => {}
        }
        // From the seq after the view just read: nothing in between is missed.
        let mut feed = self.follow(thread, view.thread.last_seq + 1).await?;
        loop {
            match feed.next().await? {
                Some(Notification::Event(event)) => {
                    if matches!(&event.payload,
                        EventPayload::TurnCompleted { turn_id, .. } if turn_id == turn)
                    {
                        let view = self.read(thread).await?;
                        if let Some(Ok(ended)) = ended_turn(&view, turn) {
                            return Ok(ended);
                        }
                    }
                }
                Some(_) => {}
                None => return Err(EngineError::ShuttingDown),
            }
        }
    }

    /// Archives a thread (it stays readable, accepts no input, leaves default listings).
    pub async fn archive(&self, thread: &ThreadId) -> Result<(), EngineError> {
        self.ask(thread, |reply| Command::SetArchived {
            archived: true,
            reply,
        })
        .await?
    }

    /// Unarchives a thread.
    pub async fn unarchive(&self, thread: &ThreadId) -> Result<(), EngineError> {
        self.ask(thread, |reply| Command::SetArchived {
            archived: false,
            reply,
        })
        .await?
    }

    /// Compacts the thread's context now: the model summarises the
    /// conversation, as a turn of its own (`/compact`). Refused while a turn runs.
    pub async fn compact(&self, thread: &ThreadId) -> Result<TurnId, EngineError> {
        self.ask(thread, |reply| Command::Compact {
            clear: false,
            reply,
        })
        .await?
    }

    /// Clears the thread's context: the model sees nothing before this point
    /// (the log keeps everything). A turn of its own (`/clear`).
    pub async fn clear_context(&self, thread: &ThreadId) -> Result<TurnId, EngineError> {
        self.ask(thread, |reply| Command::Compact { clear: true, reply })
            .await?
    }

    /// How full the thread's context would be on its next request.
    pub async fn context_usage(&self, thread: &ThreadId) -> Result<ContextUsage, EngineError> {
        let view = self.read(thread).await?;
        Ok(self.context_usage_of(&view))
    }

    /// How full the context of the thread `view` shows would be on its next
    /// request (for a caller that has read the thread already).
    pub fn context_usage_of(&self, view: &ThreadView) -> ContextUsage {
        let model = &view.thread.model;
        let counter = Counter::for_model(model);
        let used = counter.request(
            view.thread.instructions.as_deref(),
            &turn::history(view),
            &self.shared.tools.specs(),
            true,
        );
        let limit = self
            .shared
            .models
            .model_info(model)
            .map_or(0, |i| i.limit.context);
        ContextUsage::new(used, limit)
    }

    /// Answers a pending approval. The first answer wins; a later one (or
    /// one after a timeout resolved it) gets an "already resolved" error.
    pub async fn resolve_approval(
        &self,
        thread: &ThreadId,
        approval_id: &str,
        decision: ApprovalDecision,
    ) -> Result<(), EngineError> {
        let resolution = Resolution::Approval {
            decision,
            by: gantry_types::ResolvedBy::Client,
        };
        self.ask(thread, |reply| Command::Answer {
            id: approval_id.to_owned(),
            resolution,
            reply,
        })
        .await?
    }

    /// Completes an external task with the tool's result (`Ok`) or an error
    /// (`Err`); the model gets it as the call's result.
    pub async fn complete_external_task(
        &self,
        thread: &ThreadId,
        task_id: &str,
        result: Result<String, String>,
    ) -> Result<(), EngineError> {
        self.ask(thread, |reply| Command::Answer {
            id: task_id.to_owned(),
            resolution: Resolution::Task(result),
            reply,
        })
        .await?
    }

    /// External tasks waiting for a client, with their time left.
    pub async fn pending_external_tasks(
        &self,
        thread: &ThreadId,
    ) -> Result<Vec<ExternalTaskInfo>, EngineError> {
        self.ask(thread, |reply| Command::ListTasks { reply }).await
    }

    /// Replaces the thread's policy (persisted; applies from the next tool call,
    /// also inside a running turn).
    pub async fn set_policy(
        &self,
        thread: &ThreadId,
        policy: ThreadPolicy,
    ) -> Result<(), EngineError> {
        self.ask(thread, |reply| Command::SetPolicy { policy, reply })
            .await?
    }

    /// Sets how a lane's tool calls are handled (persisted).
    pub async fn set_lane_handler(
        &self,
        thread: &ThreadId,
        handler: LaneHandler,
    ) -> Result<(), EngineError> {
        self.ask(thread, |reply| Command::SetLaneHandler { handler, reply })
            .await?
    }

    /// Pauses the thread: no new model call or tool call starts until resumed.
    pub async fn pause(&self, thread: &ThreadId) -> Result<(), EngineError> {
        self.ask(thread, |reply| Command::SetPaused {
            paused: true,
            reply,
        })
        .await?
    }

    /// Resumes a paused thread.
    pub async fn resume(&self, thread: &ThreadId) -> Result<(), EngineError> {
        self.ask(thread, |reply| Command::SetPaused {
            paused: false,
            reply,
        })
        .await?
    }

    /// What the thread's permission rules say about a tool call, and the
    /// rules that matched (the `CheckPermission` rpc).
    pub async fn check_permission(
        &self,
        thread: &ThreadId,
        tool: &str,
        args: &serde_json::Value,
    ) -> Result<(RuleDecision, Vec<String>), EngineError> {
        let view = self.read(thread).await?;
        let request = policy::ToolRequest {
            tool,
            args,
            workspace: std::path::Path::new(&view.thread.cwd),
        };
        Ok(policy::check_permission(
            &view.thread.policy.permissions,
            &request,
        ))
    }

    /// The thread with its turns and items.
    pub async fn read(&self, thread: &ThreadId) -> Result<Arc<ThreadView>, EngineError> {
        self.ask(thread, |reply| Command::Read { reply }).await
    }

    /// Lists threads, newest first.
    pub async fn list(&self, query: &ThreadQuery) -> Result<ThreadPage, EngineError> {
        // The listing comes from the store: let it catch up first, so a
        // caller sees its own changes.
        self.flush().await?;
        Ok(self.shared.store.list_threads(query).await?)
    }

    /// A new thread with the history of `thread` up to and including
    /// `up_to` (every ended turn when `None`).
    pub async fn fork(
        &self,
        thread: &ThreadId,
        up_to: Option<&TurnId>,
    ) -> Result<Thread, EngineError> {
        let source = self.read(thread).await?;
        let end = match up_to {
            Some(turn) => source
                .turns
                .iter()
                .position(|t| &t.turn.id == turn)
                .ok_or_else(|| EngineError::TurnNotFound {
                    thread: thread.clone(),
                    turn: turn.clone(),
                })?,
            None => match source.turns.iter().rposition(|t| t.turn.status.is_final()) {
                Some(i) => i,
                None => usize::MAX,
            },
        };
        let turns = if end == usize::MAX {
            &[][..]
        } else {
            &source.turns[..=end]
        };
        if turns.iter().any(|t| t.turn.status == TurnStatus::Running) {
            return Err(EngineError::InvalidInput(
                "cannot fork inside a running turn; fork up to an ended turn".to_owned(),
            ));
        }
        let now = self.shared.clock.now_ms();
        let id = ThreadId::new();
        let mut thread_meta = source.thread.clone();
        thread_meta.id = id.clone();
        thread_meta.status = ThreadStatus::Idle;
        thread_meta.archived = false;
        thread_meta.preview = String::new();
        thread_meta.created_at = now;
        thread_meta.updated_at = now;
        thread_meta.usage = Usage::default();
        thread_meta.cost_usd = 0.0;
        thread_meta.last_seq = 0;
        thread_meta.forked_from = turns.last().map(|t| ForkOrigin {
            thread_id: thread.clone(),
            turn_id: t.turn.id.clone(),
        });
        let mut payloads = vec![EventPayload::ThreadCreated {
            thread: thread_meta,
        }];
        // Copies get fresh ids: turn and item ids are globally unique.
        for tv in turns {
            let mut turn = tv.turn.clone();
            turn.id = TurnId::new();
            turn.thread_id = id.clone();
            turn.status = TurnStatus::Running;
            let turn_id = turn.id.clone();
            payloads.push(EventPayload::TurnStarted { turn });
            for item in &tv.items {
                let mut item = item.clone();
                item.id = ItemId::new();
                item.turn_id = turn_id.clone();
                payloads.push(EventPayload::ItemCompleted { item });
            }
            payloads.push(EventPayload::TurnCompleted {
                turn_id,
                status: tv.turn.status,
                rounds: tv.turn.rounds,
                usage: tv.turn.usage,
                cost_usd: tv.turn.cost_usd,
                error: tv.turn.error.clone(),
                failure: tv.turn.failure,
            });
        }
        self.spawn_new(payloads).await?;
        self.read(&id).await.map(|v| v.thread.clone())
    }

    /// Subscribes to one thread's notifications from `from_seq` (1 = the
    /// whole log; `last_seq + 1` = only what happens next).
    pub async fn subscribe(
        &self,
        thread: &ThreadId,
        from_seq: u64,
    ) -> Result<Subscription, EngineError> {
        // Loading the actor proves the thread exists and flushes nothing.
        self.actor(thread).await?;
        self.shared.bus.subscribe(thread, from_seq).await
    }

    /// Subscribes to every thread's notifications from commit cursor
    /// `from` (1 = everything stored; see [`gantry_types::Event::cursor`]).
    /// Stored events are read page by page, so a subscriber however far
    /// behind costs bounded memory.
    pub async fn subscribe_all(&self, from: u64) -> Result<Subscription, EngineError> {
        self.shared.bus.subscribe_all(from).await
    }

    /// Subscribes to every thread's notifications from now on (cheap: no
    /// replay, nothing read from the store).
    pub fn subscribe_all_now(&self) -> Subscription {
        self.shared.bus.subscribe_all_now()
    }

    /// Subscribes to engine-wide events (MCP startup, agents, skill
    /// packages, memory, scheduled jobs, language servers) from now on.
    pub fn engine_events(&self) -> EngineEvents {
        self.shared.events.subscribe()
    }

    /// Engine-wide events from `seq` on: the last ones the engine keeps
    /// (about a thousand), then live.
    pub fn engine_events_from(&self, seq: u64) -> EngineEvents {
        self.shared.events.subscribe_from(seq)
    }

    /// Publishes an engine-wide event stamped now.
    pub(crate) fn publish(&self, thread_id: Option<ThreadId>, kind: EngineEventKind) {
        self.shared.events.publish(EngineEvent {
            seq: 0,
            ts: self.shared.clock.now_ms(),
            thread_id,
            kind,
        });
    }

    /// Waits until every event so far is durably stored; an error while
    /// the store cannot take them (they stay queued and saving is retried).
    pub async fn flush(&self) -> Result<(), EngineError> {
        Ok(self.shared.writer.flush().await?)
    }

    /// Interrupts every running turn, waits for them to end, and flushes;
    /// an error if the last events could not be stored.
    pub async fn shutdown(&self) -> Result<(), EngineError> {
        for id in self.live_threads().await {
            let _ = self.interrupt(&id).await;
        }
        self.flush().await
    }

    /// Ids of the threads that have a live actor (or are being loaded).
    pub(crate) async fn live_threads(&self) -> Vec<ThreadId> {
        self.shared.cells.ids()
    }

    /// How many threads are loaded in memory now (idle ones are evicted
    /// after [`EngineConfig::evict_idle_after`]).
    pub fn loaded_threads(&self) -> usize {
        self.shared.cells.len()
    }

    /// Creates the actor of a new thread whose log is `payloads`.
    async fn spawn_new(&self, payloads: Vec<EventPayload>) -> Result<(), EngineError> {
        let Some(EventPayload::ThreadCreated { thread }) = payloads.first() else {
            return Err(EngineError::InvalidInput(
                "a thread log starts with thread_created".into(),
            ));
        };
        let id = thread.id.clone();
        let now = self.shared.clock.now_ms();
        let events: Vec<Event> = payloads
            .into_iter()
            .zip(1..)
            .map(|(payload, seq)| {
                let (turn_id, item_id) = payload.subject();
                Event {
                    thread_id: id.clone(),
                    seq,
                    ts: now,
                    turn_id: turn_id.cloned(),
                    item_id: item_id.cloned(),
                    payload,
                    cursor: 0,
                }
            })
            .collect();
        let view = ThreadView::from_events(&events).ok_or_else(|| {
            EngineError::InvalidInput("a thread log starts with thread_created".into())
        })?;
        // The cell's slot is held from the check to the insert: two
        // creations of one id cannot both pass; other threads never wait.
        let cell = self.shared.cells.cell(&id);
        let mut slot = cell.slot.lock().await;
        let taken = slot.as_ref().is_some_and(|h| !h.is_closed())
            || !self.shared.cells.is_current(&id, &cell)
            || self.stored(&id).await?;
        if taken {
            return Err(EngineError::AlreadyExists {
                what: "thread",
                name: id.0,
            });
        }
        let handle = ThreadActor::spawn(self.shared.clone(), view, events, cell.clone()).await;
        *slot = Some(handle);
        Ok(())
    }

    /// Whether the store holds a thread (after the writer caught up).
    async fn stored(&self, id: &ThreadId) -> Result<bool, EngineError> {
        self.flush().await?;
        Ok(self.shared.store.thread(id).await?.is_some())
    }

    /// The live actor of a thread, loading it from the store if needed.
    /// Only this thread's cell is locked meanwhile.
    pub(crate) async fn actor(&self, id: &ThreadId) -> Result<ActorHandle, EngineError> {
        loop {
            let cell = self.shared.cells.cell(id);
            let mut slot = cell.slot.lock().await;
            if !self.shared.cells.is_current(id, &cell) {
                // Evicted while we waited for the slot: look again.
                continue;
            }
            if let Some(handle) = slot.as_ref().filter(|h| !h.is_closed()) {
                return Ok(handle.clone());
            }
            let loaded = match self.shared.store.events(id, 1).await {
                Ok(events) => {
                    ThreadView::from_events(&events).ok_or(EngineError::ThreadNotFound(id.clone()))
                }
                Err(e) => Err(e.into()),
            };
            return match loaded {
                Ok(view) => {
                    let handle =
                        ThreadActor::spawn(self.shared.clone(), view, Vec::new(), cell.clone())
                            .await;
                    *slot = Some(handle.clone());
                    Ok(handle)
                }
                Err(e) => {
                    // No cell stays behind for a thread that is not there.
                    *slot = None;
                    self.shared.cells.forget(id, &cell);
                    Err(e)
                }
            };
        }
    }

    /// Sends a command to a thread's actor and waits for the reply. An
    /// actor that was evicted as the command went out hands it back; it
    /// goes to the thread's next actor.
    pub(crate) async fn ask<T>(
        &self,
        thread: &ThreadId,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, EngineError> {
        let (tx, rx) = oneshot::channel();
        let mut command = make(tx);
        // An eviction needs the actor idle for its whole idle time, so a
        // second miss in a row means the engine is going away.
        for _ in 0..3 {
            let handle = self.actor(thread).await?;
            match handle.send(command).await {
                Ok(()) => return rx.await.map_err(|_| EngineError::ShuttingDown),
                Err(mpsc::error::SendError(returned)) => command = returned,
            }
        }
        Err(EngineError::ShuttingDown)
    }
}

/// `turn` in `view`: `Ok` once it ended, `Err` while it runs.
fn ended_turn(view: &ThreadView, turn: &TurnId) -> Option<Result<Turn, ()>> {
    let tv = view.turns.iter().rev().find(|t| &t.turn.id == turn)?;
    Some(if tv.turn.status.is_final() {
        Ok(tv.turn.clone())
    } else {
        Err(())
    })
}

/// The log of a turn holding the conversation a thread starts with: each
/// agent message its own round, so none merge.
fn context_turn(thread: &Thread, context: &[ContextMessage], now: i64) -> Vec<EventPayload> {
    if context.is_empty() {
        return Vec::new();
    }
    let turn_id = TurnId::new();
    let mut payloads = vec![EventPayload::TurnStarted {
        turn: Turn::started(turn_id.clone(), thread.id.clone(), String::new(), None, now),
    }];
    for (message, round) in context.iter().zip(1..) {
        let (kind, round) = match message.role {
            ContextRole::User => (
                ItemKind::UserMessage {
                    text: message.text.clone(),
                    key: None,
                },
                0,
            ),
            ContextRole::Assistant => (
                ItemKind::AgentMessage {
                    text: message.text.clone(),
                },
                round,
            ),
        };
        payloads.push(EventPayload::ItemCompleted {
            item: Item {
                id: ItemId::new(),
                turn_id: turn_id.clone(),
                round,
                status: ItemStatus::Completed,
                started_at: now,
                completed_at: Some(now),
                kind,
                tool_call: None,
            },
        });
    }
    payloads.push(EventPayload::TurnCompleted {
        turn_id,
        status: TurnStatus::Completed,
        rounds: 0,
        usage: Usage::default(),
        cost_usd: 0.0,
        error: None,
        failure: None,
    });
    payloads
}

/// Longest thread id a client may choose.
const MAX_THREAD_ID_LEN: usize = 128;

/// A client-chosen thread id, if it is one the store and every protocol
/// can carry.
/// Whether a client may choose `id` as a thread's id: 1 to 128 letters,
/// digits, `-`, `_`, `.` or `:`, and not `.` or `..`. Hosts name directories
/// after thread ids, so an id is always one plain path component.
pub fn valid_thread_id(id: &str) -> bool {
    !id.is_empty()
        && id != "."
        && id != ".."
        && id.len() <= MAX_THREAD_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

fn check_thread_id(id: ThreadId) -> Result<ThreadId, EngineError> {
    if valid_thread_id(&id.0) {
        Ok(id)
    } else {
        Err(EngineError::InvalidInput(format!(
            "thread id `{id}`: use 1 to {MAX_THREAD_ID_LEN} letters, digits, `-`, `_`, `.` or `:` (not `.` or `..`)"
        )))
    }
}

fn non_empty(text: String) -> Result<String, EngineError> {
    if text.trim().is_empty() {
        return Err(EngineError::InvalidInput("the message is empty".to_owned()));
    }
    Ok(text)
}
