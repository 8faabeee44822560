//! The engine's public API: a cheap, cloneable handle over shared state,
//! split into sub-handles by subject, each in its own module: `threads.rs`
//! ([`Threads`]: create, configure, read, list, fork, archive, pause),
//! `turns.rs` ([`Turns`]: messages, steering, interrupts, context),
//! `safety.rs` ([`Safety`]: policies, approvals, external tasks),
//! `feeds.rs` ([`Feeds`]: subscriptions and engine-wide events),
//! `storage.rs` ([`Storage`]: compacting the store); jobs, LSP,
//! MCP, skills, agents, memory, providers and structured output have theirs
//! next to their subject. `builder.rs` starts it.

mod builder;
mod checkpoints;
mod feeds;
mod fork;
mod inputs;
mod safety;
mod settings;
mod storage;
mod threads;
mod turns;

pub use builder::EngineBuilder;
pub use checkpoints::{CheckpointEntry, Rewound};
pub use feeds::Feeds;
pub(crate) use inputs::Input;
pub use inputs::{ContextMessage, ContextRole, CreateThread, Delivered, IfBusy, UserInput};
pub use safety::Safety;
pub use settings::Settings;
pub use storage::Storage;
pub use threads::Threads;
pub use threads::valid_thread_id;
pub use turns::Turns;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use gantry_store::{Store, ThreadPage, ThreadQuery};
use gantry_tools::ToolRegistry;
use gantry_tools::lsp::LspManager;
use gantry_tools::mcp::McpManager;
use gantry_types::{
    AgentId, ApprovalDecision, Event, EventPayload, ForkOrigin, Item, ItemId, ItemKind, ItemStatus,
    LaneHandler, ModelEndpoint, RuleDecision, Thread, ThreadId, ThreadPolicy, ThreadSettingsPatch,
    ThreadStatus, ThreadView, Turn, TurnId, TurnStatus, Usage,
};
use tokio::sync::{mpsc, oneshot};

use crate::actor::{ActorHandle, Command, ExternalTaskInfo, Resolution, ThreadActor};
use crate::bus::{Bus, Notification, Subscription};
use crate::context::{ContextUsage, Counter};
use crate::engine_events::{EngineEvent, EngineEventBus, EngineEventKind, EngineEvents};
use crate::providers::Providers;
use crate::turn;
use crate::writer::Writer;
use crate::{Clock, EngineConfig, EngineError, ModelResolver, SystemClock};

/// State shared by the engine handle, the actors and the turn tasks.
pub(crate) struct Shared {
    pub store: Arc<dyn Store>,
    pub bus: Arc<Bus>,
    /// Engine-wide events (not tied to one thread's log).
    pub events: EngineEventBus,
    pub writer: Writer,
    pub tools: ToolRegistry,
    pub mcp: McpManager,
    /// Threads' own MCP servers.
    pub thread_mcp: crate::thread_mcp::ThreadMcp,
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
    /// The login profile's snapshots for commands; `None` when turned off.
    pub shell_snapshots: Option<Arc<gantry_tools::ShellSnapshots>>,
    /// Threads' private temp dirs; `None` when they could not be made
    /// (sandboxed commands then share the temp dir).
    pub private_temps: Option<gantry_tools::sandbox::PrivateTemps>,
    /// Variables minted for one command as it starts.
    pub command_env_source: Option<Arc<dyn crate::CommandEnvSource>>,
    /// Who serves tool calls' file and command I/O, if not the tools.
    pub tool_host_source: Option<Arc<dyn crate::ToolHostSource>>,
    /// Each thread's cell: its actor, while live. A thread loads under its
    /// own cell's lock, so it never gets two actors and others never wait.
    pub cells: crate::cells::Cells,
}

impl Shared {
    /// The OS sandbox of thread `thread`'s commands under `mode`.
    pub(crate) fn sandbox_policy(
        &self,
        mode: gantry_types::SandboxMode,
        workspace: &std::path::Path,
        thread: &str,
    ) -> gantry_tools::SandboxPolicy {
        // A thread stored before the ceiling was lowered gets no more than it.
        let mode = mode.min(self.config.max_sandbox);
        let mut policy = self.config.sandbox_policy(mode, workspace);
        policy.private_tmp = self.private_temps.as_ref().map(|t| t.for_thread(thread));
        policy
    }

    /// The extra environment of commands (a cheap `Arc` clone).
    pub(crate) fn command_env(&self) -> Arc<BTreeMap<String, String>> {
        // A panicking writer cannot leave the map half-replaced.
        self.command_env
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
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
    pub(crate) fn provider_registry(&self) -> Option<&Arc<Providers>> {
        self.shared.providers.as_ref()
    }

    /// Threads: create, configure, read, list, fork, archive, pause.
    pub fn threads(&self) -> Threads<'_> {
        Threads { engine: self }
    }

    /// Turns: send messages, steer, queue, interrupt, wait, compact.
    pub fn turns(&self) -> Turns<'_> {
        Turns { engine: self }
    }

    /// Permission policies, approvals and external tasks.
    pub fn safety(&self) -> Safety<'_> {
        Safety { engine: self }
    }

    /// Subscriptions: a thread's or every thread's events, engine-wide events.
    pub fn feeds(&self) -> Feeds<'_> {
        Feeds { engine: self }
    }

    /// Settings adapters keep in the store, each in its own namespace.
    pub fn settings(&self) -> Settings<'_> {
        Settings { engine: self }
    }

    /// The store's upkeep (compacting it).
    pub fn storage(&self) -> Storage<'_> {
        Storage { engine: self }
    }

    /// Scheduled jobs.
    pub fn jobs(&self) -> crate::cron::Jobs<'_> {
        crate::cron::Jobs { engine: self }
    }

    /// Language servers.
    pub fn lsp(&self) -> crate::lsp_api::Lsp<'_> {
        crate::lsp_api::Lsp { engine: self }
    }

    /// MCP servers.
    pub fn mcp(&self) -> crate::mcp_api::Mcp<'_> {
        crate::mcp_api::Mcp { engine: self }
    }

    /// Skills.
    pub fn skills(&self) -> crate::skills_api::Skills<'_> {
        crate::skills_api::Skills { engine: self }
    }

    /// Agents and their skill packages.
    pub fn agents(&self) -> crate::agents_api::Agents<'_> {
        crate::agents_api::Agents { engine: self }
    }

    /// Threads' and agents' memories.
    pub fn memory(&self) -> crate::memory::Memory<'_> {
        crate::memory::Memory { engine: self }
    }

    /// Model providers, the default model and the catalog.
    pub fn providers(&self) -> crate::providers::ModelProviders<'_> {
        crate::providers::ModelProviders { engine: self }
    }

    /// Structured output.
    pub fn structured(&self) -> crate::structured_api::Structured<'_> {
        crate::structured_api::Structured { engine: self }
    }

    /// Execution plans.
    pub fn plans(&self) -> crate::structured_api::Plans<'_> {
        crate::structured_api::Plans { engine: self }
    }

    /// Goals.
    pub fn goals(&self) -> crate::structured_api::Goals<'_> {
        crate::structured_api::Goals { engine: self }
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

    /// The specs of the built-in tools threads offer their model.
    pub fn tool_specs(&self) -> Vec<gantry_types::ToolSpec> {
        self.shared.tools.specs()
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
            let _ = self.turns().interrupt(&id).await;
        }
        self.flush().await
    }

    /// Ids of the threads that have a live actor (or are being loaded).
    pub(crate) async fn live_threads(&self) -> Vec<ThreadId> {
        self.shared.cells.ids()
    }

    /// Keeps `thread`'s API key beside it, if it has one: its events never
    /// hold it.
    pub(crate) async fn keep_thread_key(&self, thread: &Thread) -> Result<(), EngineError> {
        let key = thread.endpoint.as_ref().and_then(|e| e.api_key.as_deref());
        if key.is_some() {
            self.shared.store.put_thread_key(&thread.id, key).await?;
        }
        Ok(())
    }

    /// `view` with its thread's API key put back from beside the thread
    /// (its events never hold it), unless the log still did.
    async fn with_thread_key(&self, mut view: ThreadView) -> Result<ThreadView, EngineError> {
        let thread = &mut view.thread;
        if let Some(endpoint) = thread.endpoint.as_mut().filter(|e| e.api_key.is_none()) {
            endpoint.api_key = self.shared.store.thread_key(&thread.id).await?;
        }
        Ok(view)
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
            let loaded = match loaded {
                Ok(view) => self.with_thread_key(view).await,
                Err(e) => Err(e),
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
                Ok(()) => {
                    return match rx.await {
                        Ok(answer) => Ok(answer),
                        Err(_) => Err(self.unanswered(thread).await),
                    };
                }
                Err(mpsc::error::SendError(returned)) => command = returned,
            }
        }
        Err(EngineError::ShuttingDown)
    }

    /// Why a thread's actor dropped a command unanswered: it ended with the
    /// thread (deleted while the command waited in its queue), or with the
    /// engine.
    async fn unanswered(&self, thread: &ThreadId) -> EngineError {
        match self.shared.store.thread(thread).await {
            Ok(None) => EngineError::ThreadNotFound(thread.clone()),
            _ => EngineError::ShuttingDown,
        }
    }
}
