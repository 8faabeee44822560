//! The agent's memory: items a thread stores and recalls, persisted in the
//! store and searched with its full-text ranking. A thread sees its own
//! memories and, when it runs under an agent, the memories that agent
//! shares with all its threads.
//!
//! [`Memories`] is the one place that validates, talks to the store and
//! publishes memory events; the engine API (`api.rs`) and the model's
//! `remember` / `recall` tools (`tools.rs`) both go through it.

mod api;
pub use api::Memory;
mod summarize;
mod tools;
mod validate;

use std::sync::Arc;

use gantry_store::{MemorySearch, Store};
use gantry_types::memory::{
    MemoryClear, MemoryEvent, MemoryId, MemoryItem, MemoryQuery, MemoryScope, MemorySearchResult,
    MemoryStats, NewMemory,
};
use gantry_types::{AgentId, ThreadId};

pub(crate) use tools::tools;

use crate::engine::Shared;
use crate::engine_events::{EngineEvent, EngineEventBus, EngineEventKind};
use crate::{Clock, EngineError};

/// How far back `recent_only` looks: memories stored in the last 24 hours.
pub const RECENT_WINDOW_MS: i64 = 24 * 60 * 60 * 1000;

/// Results of a search when the query names no limit.
pub const DEFAULT_SEARCH_LIMIT: u32 = 10;

/// The most results one search returns.
pub const MAX_SEARCH_LIMIT: u32 = 100;

/// One thread's view of memory.
pub(crate) struct Memories {
    store: Arc<dyn Store>,
    events: EngineEventBus,
    clock: Arc<dyn Clock>,
    thread: ThreadId,
    agent: Option<AgentId>,
}

impl Memories {
    /// The memory of `thread`, which runs under `agent` if any.
    pub(crate) fn new(shared: &Shared, thread: ThreadId, agent: Option<AgentId>) -> Self {
        Self {
            store: shared.store.clone(),
            events: shared.events.clone(),
            clock: shared.clock.clone(),
            thread,
            agent,
        }
    }

    /// Whether the thread has an agent to share memories with.
    pub(crate) fn can_share(&self) -> bool {
        self.agent.is_some()
    }

    /// Stores a memory (replacing the one with its id, if the thread sees it).
    pub(crate) async fn store(&self, new: NewMemory) -> Result<MemoryItem, EngineError> {
        let scope = if new.shared {
            let agent = self.agent.clone().ok_or_else(|| {
                EngineError::InvalidInput(format!(
                    "thread {} runs under no agent, so it has no shared memory; \
                     store the memory without `shared`",
                    self.thread
                ))
            })?;
            MemoryScope::Agent(agent)
        } else {
            MemoryScope::Thread(self.thread.clone())
        };
        let item = MemoryItem {
            id: match new.id {
                Some(id) => validate::id(id)?,
                None => MemoryId::new(),
            },
            content: validate::content(new.content)?,
            timestamp: new.timestamp.unwrap_or_else(|| self.clock.now_ms()),
            importance: validate::importance("importance", new.importance)?,
            tags: validate::tags(new.tags)?,
            memory_type: new.memory_type,
            metadata: new.metadata,
            access_count: 0,
            last_accessed: None,
            scope,
        };
        let stored = self.store.put_memory(&item).await?.ok_or_else(|| {
            EngineError::InvalidInput(format!(
                "memory id `{}` is already used outside this thread's memory; \
                 choose another id or leave it empty",
                item.id
            ))
        })?;
        self.publish(MemoryEvent::Stored {
            memory: stored.clone(),
        });
        Ok(stored)
    }

    /// The memory with `id`, its access counted.
    pub(crate) async fn retrieve(&self, id: &MemoryId) -> Result<MemoryItem, EngineError> {
        let now = self.clock.now_ms();
        let memory = self
            .store
            .touch_memory(&self.scopes(true), id, now)
            .await?
            .ok_or_else(|| EngineError::NotFound {
                what: "memory",
                name: id.to_string(),
            })?;
        self.publish(MemoryEvent::Recalled {
            memory: memory.clone(),
        });
        Ok(memory)
    }

    /// The best matches of `query`, best first, and how many matched.
    pub(crate) async fn search(
        &self,
        query: MemoryQuery,
    ) -> Result<MemorySearchResult, EngineError> {
        let query = MemoryQuery {
            query: validate::query(query.query)?,
            tags: validate::tags(query.tags)?,
            limit: match query.limit {
                0 => DEFAULT_SEARCH_LIMIT,
                n => n.min(MAX_SEARCH_LIMIT),
            },
            recent_only: query.recent_only,
            min_importance: query
                .min_importance
                .map(|m| validate::importance("min_importance", m))
                .transpose()?,
        };
        let search = MemorySearch {
            scopes: self.scopes(true),
            text: query.query.clone(),
            tags: query.tags.clone(),
            min_importance: query.min_importance,
            since: query
                .recent_only
                .then(|| self.clock.now_ms().saturating_sub(RECENT_WINDOW_MS)),
            limit: query.limit as usize,
        };
        let found = self.store.search_memories(&search).await?;
        self.publish(MemoryEvent::Searched {
            memory_ids: found.memories.iter().map(|m| m.id.clone()).collect(),
            total_count: found.total_count,
            query,
        });
        Ok(found)
    }

    /// How many memories the thread sees, by class.
    pub(crate) async fn stats(&self) -> Result<MemoryStats, EngineError> {
        Ok(self.store.memory_stats(&self.scopes(true)).await?)
    }

    /// Deletes the memory with `id` that the thread sees (its own, or its
    /// agent's shared one).
    pub(crate) async fn delete(&self, id: &MemoryId) -> Result<(), EngineError> {
        if !self.store.delete_memory(&self.scopes(true), id).await? {
            return Err(EngineError::NotFound {
                what: "memory",
                name: id.to_string(),
            });
        }
        self.publish(MemoryEvent::Deleted {
            memory_id: id.clone(),
        });
        Ok(())
    }

    /// Deletes the selected classes; returns how many memories went.
    pub(crate) async fn clear(&self, clear: MemoryClear) -> Result<u64, EngineError> {
        let cleared_count = self
            .store
            .clear_memories(&self.scopes(clear.include_shared), &clear.types())
            .await?;
        self.publish(MemoryEvent::Cleared {
            clear,
            cleared_count,
        });
        Ok(cleared_count)
    }

    /// The thread's own scope, then the agent's if `shared` and there is one.
    fn scopes(&self, shared: bool) -> Vec<MemoryScope> {
        let mut scopes = vec![MemoryScope::Thread(self.thread.clone())];
        if let Some(agent) = self.agent.as_ref().filter(|_| shared) {
            scopes.push(MemoryScope::Agent(agent.clone()));
        }
        scopes
    }

    fn publish(&self, event: MemoryEvent) {
        self.events.publish(EngineEvent {
            seq: 0,
            ts: self.clock.now_ms(),
            thread_id: Some(self.thread.clone()),
            kind: EngineEventKind::Memory(event),
        });
    }
}
