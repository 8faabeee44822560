//! A store that holds reads of one thread's log until the test opens the
//! gate: a thread whose load is stuck on I/O, on demand. It can also hold
//! every commit (a store that has stopped writing, on demand), or serve a
//! synthetic all-threads log of any length without holding it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use gantry_store::{
    Commit, JobStorage, MemorySearch, MemoryStorage, Store, StoreError, ThreadPage, ThreadQuery,
};
use gantry_types::cron::{CronExecution, CronJob};
use gantry_types::memory::{
    MemoryId, MemoryItem, MemoryScope, MemorySearchResult, MemoryStats, MemoryType,
};
use gantry_types::{Agent, AgentId, Event, EventPayload, ProviderConfig, Thread, ThreadId};
use tokio::sync::watch;

/// Delegates to `inner`; `events` of the gated thread waits for the gate,
/// and every commit for `commits` when there is one.
pub(crate) struct GatedStore {
    pub inner: Arc<dyn Store>,
    pub thread: ThreadId,
    pub open: watch::Receiver<bool>,
    pub commits: Option<watch::Receiver<bool>>,
    /// When set, the all-threads log (`events_after`, `last_cursor`) is
    /// this one, computed on demand.
    pub log: Option<Arc<SyntheticLog>>,
}

/// A stored log of `events` events spread over `threads` threads, made up
/// as it is read: a log far longer than memory would hold, for free.
#[derive(Debug, Default)]
pub(crate) struct SyntheticLog {
    pub events: u64,
    pub threads: u64,
    /// The most events one read asked for.
    pub largest_read: AtomicUsize,
}

impl SyntheticLog {
    /// The event at commit cursor `cursor` (1-based).
    pub(crate) fn event(&self, cursor: u64) -> Event {
        let n = cursor - 1;
        Event {
            thread_id: ThreadId::from(format!("thread-{:03}", n % self.threads).as_str()),
            seq: n / self.threads + 1,
            ts: 0,
            turn_id: None,
            item_id: None,
            payload: EventPayload::ThreadArchived,
            cursor,
        }
    }
}

#[async_trait]
impl Store for GatedStore {
    async fn commit(&self, commit: &Commit) -> Result<u64, StoreError> {
        if let Some(commits) = &self.commits {
            let _ = commits.clone().wait_for(|o| *o).await;
        }
        self.inner.commit(commit).await
    }
    async fn events(&self, thread: &ThreadId, from_seq: u64) -> Result<Vec<Event>, StoreError> {
        if *thread == self.thread {
            let mut open = self.open.clone();
            let _ = open.wait_for(|o| *o).await;
        }
        self.inner.events(thread, from_seq).await
    }
    async fn events_after(&self, after: u64, limit: usize) -> Result<Vec<Event>, StoreError> {
        let Some(log) = &self.log else {
            return self.inner.events_after(after, limit).await;
        };
        log.largest_read.fetch_max(limit, Ordering::Relaxed);
        let end = log.events.min(after.saturating_add(limit as u64));
        Ok((after + 1..=end).map(|c| log.event(c)).collect())
    }
    async fn last_cursor(&self) -> Result<u64, StoreError> {
        match &self.log {
            Some(log) => Ok(log.events),
            None => self.inner.last_cursor().await,
        }
    }
    async fn thread(&self, id: &ThreadId) -> Result<Option<Thread>, StoreError> {
        self.inner.thread(id).await
    }
    async fn list_threads(&self, query: &ThreadQuery) -> Result<ThreadPage, StoreError> {
        self.inner.list_threads(query).await
    }
    async fn running_threads(&self) -> Result<Vec<ThreadId>, StoreError> {
        self.inner.running_threads().await
    }
    async fn providers(&self) -> Result<Vec<ProviderConfig>, StoreError> {
        self.inner.providers().await
    }
    async fn put_provider(&self, provider: &ProviderConfig) -> Result<(), StoreError> {
        self.inner.put_provider(provider).await
    }
    async fn delete_provider(&self, name: &str) -> Result<bool, StoreError> {
        self.inner.delete_provider(name).await
    }
    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.inner.setting(key).await
    }
    async fn put_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.inner.put_setting(key, value).await
    }
    async fn thread_key(&self, id: &ThreadId) -> Result<Option<String>, StoreError> {
        self.inner.thread_key(id).await
    }
    async fn put_thread_key(&self, id: &ThreadId, key: Option<&str>) -> Result<(), StoreError> {
        self.inner.put_thread_key(id, key).await
    }
    async fn agents(&self) -> Result<Vec<Agent>, StoreError> {
        self.inner.agents().await
    }
    async fn agent(&self, id: &AgentId) -> Result<Option<Agent>, StoreError> {
        self.inner.agent(id).await
    }
    async fn put_agent(&self, agent: &Agent) -> Result<(), StoreError> {
        self.inner.put_agent(agent).await
    }
    async fn delete_agent(&self, id: &AgentId) -> Result<bool, StoreError> {
        self.inner.delete_agent(id).await
    }
    async fn compact(
        &self,
        request: gantry_store::CompactRequest,
    ) -> Result<gantry_store::Compaction, StoreError> {
        self.inner.compact(request).await
    }
    async fn delete_thread(&self, id: &ThreadId) -> Result<bool, StoreError> {
        self.inner.delete_thread(id).await
    }
}

#[async_trait]
impl MemoryStorage for GatedStore {
    async fn put_memory(&self, memory: &MemoryItem) -> Result<Option<MemoryItem>, StoreError> {
        self.inner.put_memory(memory).await
    }
    async fn touch_memory(
        &self,
        scopes: &[MemoryScope],
        id: &MemoryId,
        now: i64,
    ) -> Result<Option<MemoryItem>, StoreError> {
        self.inner.touch_memory(scopes, id, now).await
    }
    async fn search_memories(
        &self,
        search: &MemorySearch,
    ) -> Result<MemorySearchResult, StoreError> {
        self.inner.search_memories(search).await
    }
    async fn memory_stats(&self, scopes: &[MemoryScope]) -> Result<MemoryStats, StoreError> {
        self.inner.memory_stats(scopes).await
    }
    async fn delete_memory(
        &self,
        scopes: &[MemoryScope],
        id: &MemoryId,
    ) -> Result<bool, StoreError> {
        self.inner.delete_memory(scopes, id).await
    }
    async fn clear_memories(
        &self,
        scopes: &[MemoryScope],
        types: &[MemoryType],
    ) -> Result<u64, StoreError> {
        self.inner.clear_memories(scopes, types).await
    }
}

#[async_trait]
impl JobStorage for GatedStore {
    async fn jobs(&self) -> Result<Vec<CronJob>, StoreError> {
        self.inner.jobs().await
    }
    async fn job(&self, id: &str) -> Result<Option<CronJob>, StoreError> {
        self.inner.job(id).await
    }
    async fn job_by_name(&self, name: &str) -> Result<Option<CronJob>, StoreError> {
        self.inner.job_by_name(name).await
    }
    async fn put_job(&self, job: &CronJob) -> Result<(), StoreError> {
        self.inner.put_job(job).await
    }
    async fn delete_job(&self, id: &str) -> Result<bool, StoreError> {
        self.inner.delete_job(id).await
    }
    async fn put_execution(&self, execution: &CronExecution) -> Result<(), StoreError> {
        self.inner.put_execution(execution).await
    }
    async fn executions(
        &self,
        job_id: &str,
        limit: usize,
    ) -> Result<Vec<CronExecution>, StoreError> {
        self.inner.executions(job_id, limit).await
    }
    async fn unfinished_executions(&self) -> Result<Vec<CronExecution>, StoreError> {
        self.inner.unfinished_executions().await
    }
}
