//! The memory part of the storage port: the agent's memory items, with
//! full-text search ranked by the database.
//!
//! What every backend promises: the words are the same (runs of letters
//! and digits, lowercased: [`tokens`]), so a query matches the same
//! memories, and counts the same total, on all of them. The order is
//! "most relevant first", each database ranking with its own full-text
//! engine: SQLite with FTS5's `bm25()`, the in-memory store with the same
//! formula over the same tokens ([`bm25`], so these two order alike),
//! PostgreSQL with `ts_rank` over a `tsvector` of those tokens
//! ([`tsvector`]). On each, relevance grows with how often a memory names
//! the query's words, and equal ranks go by importance, then newest. BM25
//! also weighs rare words above common ones and short memories above long
//! ones; `ts_rank` does neither. So clients may rely on which memories
//! match, how many, and that rule, never on one backend's exact order.

pub(crate) mod bm25;
pub(crate) mod tokens;
pub(crate) mod tsvector;

use async_trait::async_trait;
use gantry_types::memory::{
    MemoryId, MemoryItem, MemoryScope, MemorySearchResult, MemoryStats, MemoryType,
};

use crate::StoreError;

/// A search over some scopes' memories; every filter narrows the result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemorySearch {
    /// The scopes to search (a memory in any of them can match).
    pub scopes: Vec<MemoryScope>,
    /// Free text: a memory matches if its content or tags hold any of the
    /// text's words, most relevant first (see the module's doc). Text
    /// without words is no filter.
    /// With no text, results are ordered by importance, then newest first.
    pub text: Option<String>,
    /// Only memories carrying every one of these tags (exact match; the
    /// engine lowercases tags).
    pub tags: Vec<String>,
    /// Only memories at least this important.
    pub min_importance: Option<f32>,
    /// Only memories whose timestamp is at or after this (unix ms).
    pub since: Option<i64>,
    /// At most this many results (at least one is returned if any match).
    pub limit: usize,
}

/// Memory items: stored, fetched, searched, cleared.
#[async_trait]
pub trait MemoryStorage: Send + Sync {
    /// Inserts a memory, or replaces the one with its id if that one is in
    /// the same scope (keeping its access count and last access). Returns
    /// the memory as stored; `None`, with nothing written, if the id belongs
    /// to a memory of another scope.
    async fn put_memory(&self, memory: &MemoryItem) -> Result<Option<MemoryItem>, StoreError>;

    /// The memory with `id` in one of `scopes`, with the access counted:
    /// its access count goes up by one and its last access becomes `now`.
    async fn touch_memory(
        &self,
        scopes: &[MemoryScope],
        id: &MemoryId,
        now: i64,
    ) -> Result<Option<MemoryItem>, StoreError>;

    /// The best matches of a search, best first, and how many matched.
    async fn search_memories(
        &self,
        search: &MemorySearch,
    ) -> Result<MemorySearchResult, StoreError>;

    /// How many memories `scopes` hold, by class.
    async fn memory_stats(&self, scopes: &[MemoryScope]) -> Result<MemoryStats, StoreError>;

    /// Deletes the memory with `id` if it is in one of `scopes`; returns
    /// whether there was one.
    async fn delete_memory(
        &self,
        scopes: &[MemoryScope],
        id: &MemoryId,
    ) -> Result<bool, StoreError>;

    /// Deletes the memories of `types` in `scopes`; returns how many.
    async fn clear_memories(
        &self,
        scopes: &[MemoryScope],
        types: &[MemoryType],
    ) -> Result<u64, StoreError>;
}
