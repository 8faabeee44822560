//! [`MemoryStore`]: the [`Store`] port in memory, for `--storage-backend memory`
//! and tests. Same semantics as the SQLite store, nothing survives the process.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use gantry_types::{Agent, AgentId, Event, ProviderConfig, Thread, ThreadId, ThreadStatus};

use crate::codec::seq_to_db;

mod jobs;
mod memories;
use crate::page::{check_cursor, page_limit};
use crate::{
    Commit, CompactMode, CompactRequest, Compaction, MemoryStorage, Store, StoreError, ThreadPage,
    ThreadQuery,
};

/// A store that keeps everything in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    memories: Mutex<memories::MemoryTable>,
    jobs: Mutex<jobs::JobTables>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Each thread's log, by seq. `ThreadId` orders by bytes, like SQLite TEXT.
    events: BTreeMap<ThreadId, BTreeMap<u64, Event>>,
    /// Every event's place, by commit cursor.
    by_cursor: BTreeMap<u64, (ThreadId, u64)>,
    threads: BTreeMap<ThreadId, Thread>,
    providers: BTreeMap<String, ProviderConfig>,
    settings: BTreeMap<String, String>,
    agents: BTreeMap<AgentId, Agent>,
    /// The last cursor given when a thread was deleted: never given again.
    deleted_cursor: u64,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Commits validate before they mutate, so a panicking holder cannot
        // have left half a commit behind: the data is still consistent.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Inner {
    fn last_cursor(&self) -> u64 {
        let newest = self.by_cursor.last_key_value().map_or(0, |(c, _)| *c);
        newest.max(self.deleted_cursor)
    }

    /// Rejects the commit, before anything is written, if any event is a
    /// duplicate (of a stored event or of another event in the same commit).
    fn check(&self, commit: &Commit) -> Result<(), StoreError> {
        let mut seen = HashSet::with_capacity(commit.events.len());
        for event in &commit.events {
            seq_to_db(&event.thread_id, event.seq)?;
            let stored = self
                .events
                .get(&event.thread_id)
                .is_some_and(|log| log.contains_key(&event.seq));
            if stored || !seen.insert((&event.thread_id, event.seq)) {
                return Err(StoreError::Database(format!(
                    "duplicate event: thread {} seq {}",
                    event.thread_id, event.seq
                )));
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Store for MemoryStore {
    async fn commit(&self, commit: &Commit) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        inner.check(commit)?;
        let mut last = inner.last_cursor();
        for event in &commit.events {
            last += 1;
            let mut event = event.clone();
            event.cursor = last;
            inner
                .by_cursor
                .insert(last, (event.thread_id.clone(), event.seq));
            inner
                .events
                .entry(event.thread_id.clone())
                .or_default()
                .insert(event.seq, event);
        }
        for thread in &commit.threads {
            inner.threads.insert(thread.id.clone(), thread.clone());
        }
        Ok(last)
    }

    async fn events_after(&self, after: u64, limit: usize) -> Result<Vec<Event>, StoreError> {
        let inner = self.lock();
        Ok(inner
            .by_cursor
            .range(after.saturating_add(1)..)
            .take(limit)
            .filter_map(|(_, (thread, seq))| inner.events.get(thread)?.get(seq).cloned())
            .collect())
    }

    async fn last_cursor(&self) -> Result<u64, StoreError> {
        Ok(self.lock().last_cursor())
    }

    async fn events(&self, thread: &ThreadId, from_seq: u64) -> Result<Vec<Event>, StoreError> {
        let inner = self.lock();
        Ok(inner
            .events
            .get(thread)
            .map(|log| log.range(from_seq..).map(|(_, e)| e.clone()).collect())
            .unwrap_or_default())
    }

    async fn thread(&self, id: &ThreadId) -> Result<Option<Thread>, StoreError> {
        Ok(self.lock().threads.get(id).cloned())
    }

    async fn list_threads(&self, query: &ThreadQuery) -> Result<ThreadPage, StoreError> {
        let limit = page_limit(query.limit);
        let cursor = query.cursor.as_deref().map(check_cursor).transpose()?;
        let inner = self.lock();
        let mut threads: Vec<Thread> = inner
            .threads
            .values()
            .rev()
            .filter(|t| cursor.is_none_or(|c| t.id.as_str() < c))
            .filter(|t| query.archived.is_none_or(|a| t.archived == a))
            .take(limit + 1)
            .cloned()
            .collect();
        let next_cursor = if threads.len() > limit {
            threads.truncate(limit);
            threads.last().map(|t| t.id.0.clone())
        } else {
            None
        };
        Ok(ThreadPage {
            threads,
            next_cursor,
        })
    }

    async fn running_threads(&self) -> Result<Vec<ThreadId>, StoreError> {
        Ok(self
            .lock()
            .threads
            .values()
            .filter(|t| t.status == ThreadStatus::Running)
            .map(|t| t.id.clone())
            .collect())
    }

    async fn providers(&self) -> Result<Vec<ProviderConfig>, StoreError> {
        Ok(self.lock().providers.values().cloned().collect())
    }

    async fn put_provider(&self, provider: &ProviderConfig) -> Result<(), StoreError> {
        self.lock()
            .providers
            .insert(provider.name.clone(), provider.clone());
        Ok(())
    }

    async fn delete_provider(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self.lock().providers.remove(name).is_some())
    }

    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self.lock().settings.get(key).cloned())
    }

    async fn put_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.lock()
            .settings
            .insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    async fn agents(&self) -> Result<Vec<Agent>, StoreError> {
        Ok(self.lock().agents.values().cloned().collect())
    }

    async fn agent(&self, id: &AgentId) -> Result<Option<Agent>, StoreError> {
        Ok(self.lock().agents.get(id).cloned())
    }

    async fn put_agent(&self, agent: &Agent) -> Result<(), StoreError> {
        self.lock().agents.insert(agent.id.clone(), agent.clone());
        Ok(())
    }

    async fn delete_agent(&self, id: &AgentId) -> Result<bool, StoreError> {
        Ok(self.lock().agents.remove(id).is_some())
    }

    async fn compact(&self, _request: CompactRequest) -> Result<Compaction, StoreError> {
        // Nothing is on disk; what is deleted is already gone.
        Ok(Compaction {
            mode: CompactMode::Memory,
            size_before: 0,
            size_after: 0,
        })
    }

    async fn delete_thread(&self, id: &ThreadId) -> Result<bool, StoreError> {
        let found = {
            let mut inner = self.lock();
            inner.deleted_cursor = inner.last_cursor();
            let events = inner.events.remove(id);
            for event in events.iter().flat_map(|log| log.values()) {
                inner.by_cursor.remove(&event.cursor);
            }
            inner.settings.remove(&crate::thread_key_setting(id));
            inner.threads.remove(id).is_some() || events.is_some()
        };
        let scope = [gantry_types::memory::MemoryScope::Thread(id.clone())];
        self.clear_memories(&scope, &gantry_types::memory::MemoryType::ALL)
            .await?;
        Ok(found)
    }
}
