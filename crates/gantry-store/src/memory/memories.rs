//! [`MemoryStorage`] in memory. There is no full-text index: a search
//! tokenizes every stored memory and ranks with the same BM25 formula
//! SQLite's FTS5 uses ([`crate::memories::bm25`]), so both stores return
//! the same memories in the same order. Linear in the number of memories,
//! which is what an in-memory store is for (tests, short-lived runs).

use std::cmp::Ordering;
use std::sync::MutexGuard;

use async_trait::async_trait;
use gantry_types::memory::{
    MemoryId, MemoryItem, MemoryScope, MemorySearchResult, MemoryStats, MemoryType,
};

use super::MemoryStore;
use crate::memories::{bm25, tokens};
use crate::{MemorySearch, MemoryStorage, StoreError};

/// The in-memory store's memory items.
#[derive(Debug, Default)]
pub(super) struct MemoryTable {
    /// Every memory, in insertion order (a replaced one keeps its place).
    items: Vec<MemoryItem>,
}

impl MemoryStore {
    fn memories(&self) -> MutexGuard<'_, MemoryTable> {
        // Every change is a single push, assignment or retain: a panicking
        // holder cannot leave a half-written memory behind.
        self.memories
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl MemoryStorage for MemoryStore {
    async fn put_memory(&self, memory: &MemoryItem) -> Result<Option<MemoryItem>, StoreError> {
        let mut table = self.memories();
        match table.items.iter_mut().find(|m| m.id == memory.id) {
            Some(old) if old.scope != memory.scope => Ok(None),
            Some(old) => {
                let stored = MemoryItem {
                    access_count: old.access_count,
                    last_accessed: old.last_accessed,
                    ..memory.clone()
                };
                *old = stored.clone();
                Ok(Some(stored))
            }
            None => {
                table.items.push(memory.clone());
                Ok(Some(memory.clone()))
            }
        }
    }

    async fn touch_memory(
        &self,
        scopes: &[MemoryScope],
        id: &MemoryId,
        now: i64,
    ) -> Result<Option<MemoryItem>, StoreError> {
        let mut table = self.memories();
        Ok(table
            .items
            .iter_mut()
            .find(|m| &m.id == id && scopes.contains(&m.scope))
            .map(|m| {
                m.access_count = m.access_count.saturating_add(1);
                m.last_accessed = Some(now);
                m.clone()
            }))
    }

    async fn search_memories(
        &self,
        search: &MemorySearch,
    ) -> Result<MemorySearchResult, StoreError> {
        let table = self.memories();
        let terms = search
            .text
            .as_deref()
            .map(tokens::query_terms)
            .unwrap_or_default();
        // Relevance is computed over every memory, as FTS5 does, before the
        // filters apply.
        let relevance: Vec<Option<f64>> = if terms.is_empty() {
            vec![Some(0.0); table.items.len()]
        } else {
            let docs: Vec<Vec<String>> = table.items.iter().map(words).collect();
            bm25::scores(&docs, &terms)
        };
        let mut hits: Vec<(f64, &MemoryItem)> = table
            .items
            .iter()
            .zip(relevance)
            .filter_map(|(m, score)| Some((score?, m)))
            .filter(|(_, m)| matches(search, m))
            .collect();
        hits.sort_by(|(a_score, a), (b_score, b)| {
            b_score
                .partial_cmp(a_score)
                .unwrap_or(Ordering::Equal)
                .then_with(|| b.importance.total_cmp(&a.importance))
                .then_with(|| b.timestamp.cmp(&a.timestamp))
                .then_with(|| b.id.cmp(&a.id))
        });
        let total_count = hits.len() as u64;
        let memories = hits
            .into_iter()
            .take(search.limit.max(1))
            .map(|(_, m)| m.clone())
            .collect();
        Ok(MemorySearchResult {
            memories,
            total_count,
        })
    }

    async fn memory_stats(&self, scopes: &[MemoryScope]) -> Result<MemoryStats, StoreError> {
        let mut stats = MemoryStats::default();
        for m in self
            .memories()
            .items
            .iter()
            .filter(|m| scopes.contains(&m.scope))
        {
            stats.add(m.memory_type, 1);
        }
        Ok(stats)
    }

    async fn delete_memory(
        &self,
        scopes: &[MemoryScope],
        id: &MemoryId,
    ) -> Result<bool, StoreError> {
        let mut table = self.memories();
        let before = table.items.len();
        table
            .items
            .retain(|m| !(&m.id == id && scopes.contains(&m.scope)));
        Ok(table.items.len() < before)
    }

    async fn clear_memories(
        &self,
        scopes: &[MemoryScope],
        types: &[MemoryType],
    ) -> Result<u64, StoreError> {
        let mut table = self.memories();
        let before = table.items.len();
        table
            .items
            .retain(|m| !(scopes.contains(&m.scope) && types.contains(&m.memory_type)));
        Ok((before - table.items.len()) as u64)
    }
}

/// A memory's words as the full-text index sees them: content, then tags.
fn words(memory: &MemoryItem) -> Vec<String> {
    let mut words: Vec<String> = tokens::tokens(&memory.content).collect();
    for tag in &memory.tags {
        words.extend(tokens::tokens(tag));
    }
    words
}

/// Whether `memory` passes the search's filters (scope, importance, time, tags).
fn matches(search: &MemorySearch, memory: &MemoryItem) -> bool {
    search.scopes.contains(&memory.scope)
        && search
            .min_importance
            .is_none_or(|min| memory.importance >= min)
        && search.since.is_none_or(|since| memory.timestamp >= since)
        && search.tags.iter().all(|t| memory.tags.contains(t))
}
