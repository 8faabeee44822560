//! Engine-wide events: what happens outside any one thread's log (MCP server
//! startup, agents and their skill packages, memory, scheduled jobs,
//! language servers). Broadcast live to every subscriber; not persisted,
//! because each subject keeps its own durable state (the store's tables).
//! Thread events stay on the per-thread bus ([`crate::Subscription`]).

use gantry_tools::mcp::{McpStartupComplete, McpStartupUpdate};
use gantry_tools::skills::SkillPackageUpdate;
use gantry_types::{Agent, AgentId, ThreadId, cron::CronEvent, lsp::LspEvent, memory::MemoryEvent};
use serde::Serialize;
use tokio::sync::broadcast::{self, error::RecvError};

/// One engine-wide event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineEvent {
    /// When it happened (ms since the Unix epoch).
    pub ts: i64,
    /// The thread it concerns, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<ThreadId>,
    /// What happened.
    pub kind: EngineEventKind,
}

/// What an [`EngineEvent`] reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EngineEventKind {
    /// One MCP server's startup progressed (seed 002 `McpStartupUpdate`).
    McpStartupUpdate(McpStartupUpdate),
    /// Every MCP server's startup has finished (seed 002 `McpStartupComplete`).
    McpStartupComplete(McpStartupComplete),
    /// An agent was created or changed.
    AgentSaved {
        /// The agent as it now is.
        agent: Agent,
    },
    /// An agent was deleted.
    AgentDeleted {
        /// Its id.
        agent_id: AgentId,
    },
    /// A skill package was installed into, or a skill deleted from, an
    /// agent's skills dir (the runner protocol's `SkillMpUpdate`).
    SkillPackage(SkillPackageUpdate),
    /// Memory was stored, recalled, searched or cleared.
    Memory(MemoryEvent),
    /// A scheduled job changed or ran.
    Cron(CronEvent),
    /// A language server started, stopped or crashed.
    Lsp(LspEvent),
    /// The event log could not be saved (`error` says why; events are kept
    /// in memory and saving is retried), or is saved again (`error: None`).
    StoreHealth {
        /// The store's error while saving fails.
        error: Option<String>,
    },
}

/// A live subscription to [`EngineEvent`]s.
pub struct EngineEvents {
    rx: broadcast::Receiver<EngineEvent>,
}

/// What [`EngineEvents::recv`] yields.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEventNotice {
    /// The next event.
    Event(EngineEvent),
    /// The subscriber fell behind; this many events were dropped for it.
    Lagged(u64),
}

impl EngineEvents {
    /// The next event; `None` once the engine is gone.
    pub async fn recv(&mut self) -> Option<EngineEventNotice> {
        match self.rx.recv().await {
            Ok(event) => Some(EngineEventNotice::Event(event)),
            Err(RecvError::Lagged(n)) => Some(EngineEventNotice::Lagged(n)),
            Err(RecvError::Closed) => None,
        }
    }
}

/// The sending side, owned by the engine (clones publish to the same stream).
#[derive(Clone)]
pub(crate) struct EngineEventBus {
    tx: broadcast::Sender<EngineEvent>,
}

impl EngineEventBus {
    pub(crate) fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(capacity.max(1));
        Self { tx }
    }

    pub(crate) fn subscribe(&self) -> EngineEvents {
        EngineEvents {
            rx: self.tx.subscribe(),
        }
    }

    /// Publishes; nobody listening is fine.
    pub(crate) fn publish(&self, event: EngineEvent) {
        let _ = self.tx.send(event);
    }
}
