//! The engine's public API: a cheap, cloneable handle over shared state.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use gantry_store::{Store, ThreadPage, ThreadQuery};
use gantry_tools::ToolRegistry;
use gantry_tools::mcp::McpManager;
use gantry_types::{
    ApprovalDecision, Event, EventPayload, ForkOrigin, ItemId, LaneHandler, RuleDecision, Thread,
    ThreadId, ThreadPolicy, ThreadStatus, ThreadView, TurnId, TurnStatus, Usage,
};
use tokio::sync::{Mutex, oneshot};

use crate::actor::{ActorHandle, Command, ExternalTaskInfo, Resolution, ThreadActor};
use crate::bus::{Bus, ResumeFrom, Subscription};
use crate::context::{ContextUsage, Counter};
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

/// Parameters of a new thread.
#[derive(Debug, Clone, Default)]
pub struct CreateThread {
    /// Workspace directory; must exist.
    pub cwd: PathBuf,
    /// Model id; the engine's default when `None`.
    pub model: Option<String>,
    /// Extra instructions for the model.
    pub instructions: Option<String>,
    /// Optional name.
    pub name: Option<String>,
    /// What its tool calls may do (the default allows everything, as before).
    pub policy: ThreadPolicy,
}

/// State shared by the engine handle, the actors and the turn tasks.
pub(crate) struct Shared {
    pub store: Arc<dyn Store>,
    pub bus: Arc<Bus>,
    pub writer: Writer,
    pub tools: ToolRegistry,
    pub mcp: McpManager,
    pub models: Arc<dyn ModelResolver>,
    pub clock: Arc<dyn Clock>,
    pub config: EngineConfig,
    /// The provider registry, when the engine manages providers.
    pub providers: Option<Arc<Providers>>,
    /// Live thread actors. A tokio mutex, held while a thread loads, so one
    /// thread never gets two actors.
    actors: Mutex<HashMap<ThreadId, ActorHandle>>,
}

/// Builds an [`Engine`].
pub struct EngineBuilder {
    store: Arc<dyn Store>,
    models: Arc<dyn ModelResolver>,
    tools: ToolRegistry,
    mcp: McpManager,
    clock: Arc<dyn Clock>,
    config: EngineConfig,
    providers: Option<Arc<Providers>>,
}

impl EngineBuilder {
    /// An engine over `store`, resolving models with `models`, with the built-in tools.
    pub fn new(store: Arc<dyn Store>, models: Arc<dyn ModelResolver>) -> Self {
        Self {
            store,
            models,
            tools: ToolRegistry::builtin(),
            mcp: McpManager::new(),
            clock: Arc::new(SystemClock),
            config: EngineConfig::default(),
            providers: None,
        }
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
        let bus = Arc::new(Bus::new(self.store.clone(), self.config.subscriber_buffer));
        let writer = Writer::spawn(self.store.clone(), bus.clone());
        let engine = Engine {
            shared: Arc::new(Shared {
                store: self.store,
                bus,
                writer,
                tools: self.tools,
                mcp: self.mcp,
                models: self.models,
                clock: self.clock,
                config: self.config,
                providers: self.providers,
                actors: Mutex::new(HashMap::new()),
            }),
        };
        engine.load_mcp_servers().await?;
        for id in engine.shared.store.running_threads().await? {
            engine.actor(&id).await?;
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
        let model = params
            .model
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| self.default_model());
        let now = self.shared.clock.now_ms();
        let thread = Thread {
            id: ThreadId::new(),
            name: params.name,
            cwd: cwd.to_string_lossy().into_owned(),
            model,
            instructions: params.instructions,
            status: ThreadStatus::Idle,
            archived: false,
            preview: String::new(),
            created_at: now,
            updated_at: now,
            forked_from: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            paused: false,
            policy: params.policy,
            lane_handlers: Vec::new(),
            todos: Vec::new(),
            goal: None,
            last_seq: 0,
        };
        self.spawn_new(vec![EventPayload::ThreadCreated {
            thread: thread.clone(),
        }])
        .await?;
        self.read(&thread.id).await.map(|v| v.thread)
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
        self.ask(thread, |reply| Command::Send {
            text,
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
        self.ask(thread, |reply| Command::Steer { text, reply })
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
        let model = &view.thread.model;
        let counter = Counter::for_model(model);
        let used = counter.request(
            view.thread.instructions.as_deref(),
            &turn::history(&view),
            &self.shared.tools.specs(),
            true,
        );
        let limit = self
            .shared
            .models
            .model_info(model)
            .map_or(0, |i| i.limit.context);
        Ok(ContextUsage::new(used, limit))
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
            by: "client",
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
    pub async fn read(&self, thread: &ThreadId) -> Result<ThreadView, EngineError> {
        self.ask(thread, |reply| Command::Read { reply }).await
    }

    /// Lists threads, newest first.
    pub async fn list(&self, query: &ThreadQuery) -> Result<ThreadPage, EngineError> {
        // The listing comes from the store: let it catch up first, so a
        // caller sees its own changes.
        self.flush().await;
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
            });
        }
        self.spawn_new(payloads).await?;
        self.read(&id).await.map(|v| v.thread)
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

    /// Subscribes to every thread's notifications from the given positions.
    pub async fn subscribe_all(&self, from: ResumeFrom) -> Result<Subscription, EngineError> {
        self.shared.bus.subscribe_all(from).await
    }

    /// Waits until every event so far is durably stored.
    pub async fn flush(&self) {
        self.shared.writer.flush().await;
    }

    /// Interrupts every running turn, waits for them to end, and flushes.
    pub async fn shutdown(&self) {
        let ids: Vec<ThreadId> = self.shared.actors.lock().await.keys().cloned().collect();
        for id in ids {
            let _ = self.interrupt(&id).await;
        }
        self.flush().await;
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
                }
            })
            .collect();
        let view = ThreadView::from_events(&events).ok_or_else(|| {
            EngineError::InvalidInput("a thread log starts with thread_created".into())
        })?;
        let handle = ThreadActor::spawn(self.shared.clone(), view, events).await;
        self.shared.actors.lock().await.insert(id, handle);
        Ok(())
    }

    /// The live actor of a thread, loading it from the store if needed.
    async fn actor(&self, id: &ThreadId) -> Result<ActorHandle, EngineError> {
        let mut actors = self.shared.actors.lock().await;
        if let Some(handle) = actors.get(id).filter(|h| !h.is_closed()) {
            return Ok(handle.clone());
        }
        let events = self.shared.store.events(id, 1).await?;
        let view = ThreadView::from_events(&events)
            .ok_or_else(|| EngineError::ThreadNotFound(id.clone()))?;
        let handle = ThreadActor::spawn(self.shared.clone(), view, Vec::new()).await;
        actors.insert(id.clone(), handle.clone());
        Ok(handle)
    }

    /// Sends a command to a thread's actor and waits for the reply.
    pub(crate) async fn ask<T>(
        &self,
        thread: &ThreadId,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, EngineError> {
        let handle = self.actor(thread).await?;
        let (tx, rx) = oneshot::channel();
        handle
            .send(make(tx))
            .await
            .map_err(|_| EngineError::ShuttingDown)?;
        rx.await.map_err(|_| EngineError::ShuttingDown)
    }
}

fn non_empty(text: String) -> Result<String, EngineError> {
    if text.trim().is_empty() {
        return Err(EngineError::InvalidInput("the message is empty".to_owned()));
    }
    Ok(text)
}
