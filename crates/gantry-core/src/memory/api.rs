//! The agent's memory through the engine API (seed 001 `StoreMemory`,
//! `RetrieveMemory`, `SearchMemories`, `GetMemoryStats`, `ClearMemories`).
//! Each call is scoped by a thread: its own memories plus, when it runs
//! under an agent, the agent's shared ones. Each publishes an
//! [`EngineEventKind::Memory`](crate::EngineEventKind::Memory) event, except
//! the statistics, which change nothing.

use gantry_types::ThreadId;
use gantry_types::memory::{
    MemoryClear, MemoryId, MemoryItem, MemoryQuery, MemorySearchResult, MemoryStats, MemorySummary,
    MemorySummaryRequest, NewMemory,
};

use super::{Memories, summarize};
use crate::{Engine, EngineError};

/// Memory: a thread's (or its agent's) stored memories.
/// Get one from [`Engine::memory`].
#[derive(Clone, Copy)]
pub struct Memory<'e> {
    pub(crate) engine: &'e Engine,
}

impl Memory<'_> {
    /// Stores a memory in the thread's own memory, or in its agent's shared
    /// memory when `memory.shared` (refused for a thread without an agent).
    /// An id the thread already uses replaces that memory, keeping its
    /// access count. Returns the memory as stored.
    pub async fn store(
        &self,
        thread: &ThreadId,
        memory: NewMemory,
    ) -> Result<MemoryItem, EngineError> {
        self.engine.memories(thread).await?.store(memory).await
    }

    /// The memory with `id` that the thread sees, counting the access
    /// (access count and last access). [`EngineError::NotFound`] if the
    /// thread sees no memory with that id.
    pub async fn retrieve(
        &self,
        thread: &ThreadId,
        id: &MemoryId,
    ) -> Result<MemoryItem, EngineError> {
        self.engine.memories(thread).await?.retrieve(id).await
    }

    /// Searches the memories the thread sees: query text ranked by
    /// full-text relevance (BM25), filtered by tags (all of them), minimum
    /// importance and `recent_only` (stored in the last 24 hours); at most
    /// `limit` (default 10, at most 100), with the count of all matches.
    pub async fn search(
        &self,
        thread: &ThreadId,
        query: MemoryQuery,
    ) -> Result<MemorySearchResult, EngineError> {
        self.engine.memories(thread).await?.search(query).await
    }

    /// How many memories the thread sees (its own and its agent's shared
    /// ones), by class: long-term (semantic, procedural), short-term
    /// (episodic), working.
    pub async fn stats(self, thread: &ThreadId) -> Result<MemoryStats, EngineError> {
        self.engine.memories(thread).await?.stats().await
    }

    /// Deletes the memory with `id` that the thread sees (its own, or its
    /// agent's shared one). [`EngineError::NotFound`] if it sees none.
    pub async fn delete(&self, thread: &ThreadId, id: &MemoryId) -> Result<(), EngineError> {
        self.engine.memories(thread).await?.delete(id).await
    }

    /// Asks the thread's model (its own model server or the engine's, with
    /// its sampling settings) for a summary of the memories it sees, apart
    /// from its conversation, and stores the summary as a semantic memory
    /// of the thread tagged `summary` (what A3S's `SummarizeMemories` does).
    /// With no memory to summarize nothing is asked or stored.
    /// [`EngineError::Unavailable`] when the model cannot answer.
    pub async fn summarize(
        &self,
        thread: &ThreadId,
        request: MemorySummaryRequest,
    ) -> Result<MemorySummary, EngineError> {
        let view = self.engine.threads().read(thread).await?;
        let memories = Memories::new(
            &self.engine.shared,
            thread.clone(),
            view.thread.agent_id.clone(),
        );
        summarize::summarize(&self.engine.shared, &view.thread, &memories, request).await
    }

    /// Deletes the thread's memories of the selected classes, and the
    /// agent's shared ones too when `clear.include_shared`. Returns how
    /// many were deleted.
    pub async fn clear(&self, thread: &ThreadId, clear: MemoryClear) -> Result<u64, EngineError> {
        self.engine.memories(thread).await?.clear(clear).await
    }
}

impl Engine {
    /// The thread's memory; [`EngineError::ThreadNotFound`] for an unknown thread.
    async fn memories(&self, thread: &ThreadId) -> Result<Memories, EngineError> {
        let agent = self.threads().read(thread).await?.thread.agent_id.clone();
        Ok(Memories::new(&self.shared, thread.clone(), agent))
    }
}
