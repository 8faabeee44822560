//! Engine-wide events: what happens outside any one thread's log (MCP server
//! startup, agents and their skill packages, memory, scheduled jobs,
//! language servers, the store's health). Each has a seq of its own; the
//! last ones are kept in memory, so a subscriber can resume from a seq.
//! Not persisted, because each subject keeps its own durable state (the
//! store's tables). Thread events stay on the bus ([`crate::Subscription`]).

use gantry_tools::mcp::{McpStartupComplete, McpStartupUpdate};
use gantry_tools::skills::SkillPackageUpdate;
use gantry_types::{Agent, AgentId, ThreadId, cron::CronEvent, lsp::LspEvent, memory::MemoryEvent};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use tokio::sync::broadcast::{self, error::RecvError};

/// Engine-wide events kept for subscribers that resume from a seq.
const KEEP: usize = 1024;

/// One engine-wide event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineEvent {
    /// Position among engine-wide events since the engine started, from 1
    /// (given when published).
    pub seq: u64,
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
    /// A thread was deleted, with its events and memories
    /// ([`crate::Threads::delete`]); feeds and lists drop it.
    ThreadDeleted {
        /// Its id.
        thread_id: ThreadId,
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

/// A subscription to [`EngineEvent`]s.
pub struct EngineEvents {
    backlog: VecDeque<EngineEvent>,
    rx: broadcast::Receiver<EngineEvent>,
    /// The next seq owed.
    next: u64,
    /// Events before the kept ones were asked for: said first.
    gap: Option<u64>,
}

/// What [`EngineEvents::recv`] yields.
// Notices are moved out at once, never stored in bulk: boxing the event
// would cost an allocation per notice for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEventNotice {
    /// The next event.
    Event(EngineEvent),
    /// The subscriber fell behind and missed events; the subscription goes
    /// on with newer ones. Subscribing again from `resume_from` replays
    /// what the engine still keeps.
    Lagged {
        /// The first seq not delivered.
        resume_from: u64,
    },
}

impl EngineEvents {
    /// The next event; `None` once the engine is gone.
    pub async fn recv(&mut self) -> Option<EngineEventNotice> {
        if let Some(resume_from) = self.gap.take() {
            return Some(EngineEventNotice::Lagged { resume_from });
        }
        loop {
            let event = match self.backlog.pop_front() {
                Some(event) => event,
                None => match self.rx.recv().await {
                    Ok(event) => event,
                    Err(RecvError::Lagged(_)) => {
                        return Some(EngineEventNotice::Lagged {
                            resume_from: self.next,
                        });
                    }
                    Err(RecvError::Closed) => return None,
                },
            };
            if event.seq < self.next {
                continue;
            }
            self.next = event.seq + 1;
            return Some(EngineEventNotice::Event(event));
        }
    }

    /// The seq of the next event this subscription would deliver.
    pub fn resume_from(&self) -> u64 {
        self.next
    }
}

struct Ring {
    tx: broadcast::Sender<EngineEvent>,
    kept: VecDeque<EngineEvent>,
    next_seq: u64,
}

/// The sending side, owned by the engine (clones publish to the same stream).
#[derive(Clone)]
pub(crate) struct EngineEventBus {
    ring: Arc<Mutex<Ring>>,
}

impl EngineEventBus {
    pub(crate) fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(capacity.max(1));
        Self {
            ring: Arc::new(Mutex::new(Ring {
                tx,
                kept: VecDeque::new(),
                next_seq: 1,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Ring> {
        // Every mutation is a push, a pop or a counter: poisoning leaves
        // consistent data.
        self.ring.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Events from now on.
    pub(crate) fn subscribe(&self) -> EngineEvents {
        let ring = self.lock();
        EngineEvents {
            backlog: VecDeque::new(),
            rx: ring.tx.subscribe(),
            next: ring.next_seq,
            gap: None,
        }
    }

    /// Events from `seq` on: the kept ones, then live. When `seq` is older
    /// than anything kept, the first notice says so (`Lagged`).
    pub(crate) fn subscribe_from(&self, seq: u64) -> EngineEvents {
        let ring = self.lock();
        let oldest = ring.kept.front().map_or(ring.next_seq, |e| e.seq);
        EngineEvents {
            backlog: ring.kept.iter().filter(|e| e.seq >= seq).cloned().collect(),
            rx: ring.tx.subscribe(),
            next: seq.max(oldest),
            // Older events are gone: said in the shape of any other lag.
            gap: (seq < oldest).then_some(oldest),
        }
    }

    /// Publishes, giving the event the next seq; nobody listening is fine.
    pub(crate) fn publish(&self, mut event: EngineEvent) {
        let mut ring = self.lock();
        event.seq = ring.next_seq;
        ring.next_seq += 1;
        ring.kept.push_back(event.clone());
        if ring.kept.len() > KEEP {
            ring.kept.pop_front();
        }
        let _ = ring.tx.send(event);
    }
}
