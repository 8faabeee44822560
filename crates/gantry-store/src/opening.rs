//! [`Opening`]: a store opened in the background, so that work which does
//! not need it (a new thread's first model request) does not wait for it.
//!
//! Every call waits for the store, with one exception: a store being made
//! anew is known to hold nothing but the settings its schema sets, so until
//! something is written to it, reads are answered from that knowledge. A
//! read answered so is one the store would have answered the same way: no
//! write had begun. Reads whose arguments the store checks (a listing's
//! cursor, a memory search) always wait.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use gantry_types::cron::{CronExecution, CronJob};
use gantry_types::memory::{
    MemoryId, MemoryItem, MemoryScope, MemorySearchResult, MemoryStats, MemoryType,
};
use gantry_types::{Agent, AgentId, Event, ProviderConfig, Thread, ThreadId};
use tokio::sync::watch;

use crate::{
    Commit, CompactRequest, Compaction, JobStorage, MemorySearch, MemoryStorage, Store, StoreError,
    ThreadPage, ThreadQuery,
};

/// How the opening ended: the store, or why it could not be opened.
type Outcome = Option<Result<Arc<dyn Store>, String>>;

/// A store being opened on a thread of its own; see the module docs.
pub struct Opening {
    outcome: watch::Receiver<Outcome>,
    /// The store once it is open, so calls after that take no lock.
    open: OnceLock<Arc<dyn Store>>,
    /// A new store's settings: while `written` is false, reads are
    /// answered without the store. `None` for a store that may hold data.
    new: Option<BTreeMap<String, String>>,
    /// Set when the first write begins (before it reaches the store).
    written: AtomicBool,
}

impl std::fmt::Debug for Opening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opening")
            .field("open", &self.open.get().is_some())
            .field("new", &self.new.is_some())
            .field("written", &self.written.load(Ordering::Relaxed))
            .finish()
    }
}

impl Opening {
    /// Opens the store `open` makes on a blocking thread (opening a store
    /// writes and syncs files); every call waits for it. Must be called
    /// within a Tokio runtime.
    pub fn new<S, O, F>(open: O) -> Self
    where
        S: Store + 'static,
        O: FnOnce() -> F + Send + 'static,
        F: Future<Output = Result<S, StoreError>>,
    {
        Self::start(open, None)
    }

    /// Like [`Opening::new`], for a store that `open` makes anew, which
    /// then holds nothing but `settings`: until the first write, reads are
    /// answered at once.
    pub fn new_store<S, O, F>(open: O, settings: impl IntoIterator<Item = (String, String)>) -> Self
    where
        S: Store + 'static,
        O: FnOnce() -> F + Send + 'static,
        F: Future<Output = Result<S, StoreError>>,
    {
        Self::start(open, Some(settings.into_iter().collect()))
    }

    fn start<S, O, F>(open: O, new: Option<BTreeMap<String, String>>) -> Self
    where
        S: Store + 'static,
        O: FnOnce() -> F + Send + 'static,
        F: Future<Output = Result<S, StoreError>>,
    {
        let (tx, rx) = watch::channel(None);
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let outcome = match runtime.block_on(open()) {
                Ok(store) => Ok(Arc::new(store) as Arc<dyn Store>),
                Err(e) => Err(message(&e)),
            };
            // No receiver left: nobody needs the store any more.
            let _ = tx.send(Some(outcome));
        });
        Self {
            outcome: rx,
            open: OnceLock::new(),
            new,
            written: AtomicBool::new(false),
        }
    }

    /// Waits for the store; why it could not be opened, if it could not.
    pub async fn ready(&self) -> Result<&dyn Store, StoreError> {
        if let Some(store) = self.open.get() {
            return Ok(store.as_ref());
        }
        let mut outcome = self.outcome.clone();
        let ended = outcome
            .wait_for(Option::is_some)
            .await
            .map_err(|_| StoreError::Database("the store's opening stopped".into()))?;
        let store = match &*ended {
            Some(Ok(store)) => store.clone(),
            Some(Err(e)) => return Err(StoreError::Database(e.clone())),
            None => return Err(StoreError::Database("the store's opening stopped".into())),
        };
        drop(ended);
        Ok(self.open.get_or_init(|| store).as_ref())
    }

    /// The new store's settings, while reads may be answered without it.
    fn unwritten(&self) -> Option<&BTreeMap<String, String>> {
        self.new
            .as_ref()
            .filter(|_| !self.written.load(Ordering::Acquire))
    }

    /// The store, for a write: from now on every read waits for it.
    async fn for_write(&self) -> Result<&dyn Store, StoreError> {
        self.written.store(true, Ordering::Release);
        self.ready().await
    }
}

/// An error's text without the `store: ` its display adds (it is added again).
fn message(e: &StoreError) -> String {
    match e {
        StoreError::Database(m) => m.clone(),
        other => other.to_string(),
    }
}

#[async_trait]
impl Store for Opening {
    async fn commit(&self, commit: &Commit) -> Result<u64, StoreError> {
        self.for_write().await?.commit(commit).await
    }

    async fn events(&self, thread: &ThreadId, from_seq: u64) -> Result<Vec<Event>, StoreError> {
        if self.unwritten().is_some() {
            return Ok(Vec::new());
        }
        self.ready().await?.events(thread, from_seq).await
    }

    async fn events_after(&self, after: u64, limit: usize) -> Result<Vec<Event>, StoreError> {
        if self.unwritten().is_some() {
            return Ok(Vec::new());
        }
        self.ready().await?.events_after(after, limit).await
    }

    async fn last_cursor(&self) -> Result<u64, StoreError> {
        if self.unwritten().is_some() {
            return Ok(0);
        }
        self.ready().await?.last_cursor().await
    }

    async fn thread(&self, id: &ThreadId) -> Result<Option<Thread>, StoreError> {
        if self.unwritten().is_some() {
            return Ok(None);
        }
        self.ready().await?.thread(id).await
    }

    async fn list_threads(&self, query: &ThreadQuery) -> Result<ThreadPage, StoreError> {
        // Not answered here: its cursor must be checked as the store does.
        self.ready().await?.list_threads(query).await
    }

    async fn delete_thread(&self, id: &ThreadId) -> Result<bool, StoreError> {
        self.for_write().await?.delete_thread(id).await
    }

    async fn running_threads(&self) -> Result<Vec<ThreadId>, StoreError> {
        if self.unwritten().is_some() {
            return Ok(Vec::new());
        }
        self.ready().await?.running_threads().await
    }

    async fn providers(&self) -> Result<Vec<ProviderConfig>, StoreError> {
        if self.unwritten().is_some() {
            return Ok(Vec::new());
        }
        self.ready().await?.providers().await
    }

    async fn put_provider(&self, provider: &ProviderConfig) -> Result<(), StoreError> {
        self.for_write().await?.put_provider(provider).await
    }

    async fn delete_provider(&self, name: &str) -> Result<bool, StoreError> {
        self.for_write().await?.delete_provider(name).await
    }

    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        if let Some(settings) = self.unwritten() {
            return Ok(settings.get(key).cloned());
        }
        self.ready().await?.setting(key).await
    }

    async fn put_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.for_write().await?.put_setting(key, value).await
    }

    async fn thread_key(&self, id: &ThreadId) -> Result<Option<String>, StoreError> {
        if self.unwritten().is_some() {
            return Ok(None);
        }
        self.ready().await?.thread_key(id).await
    }

    async fn put_thread_key(&self, id: &ThreadId, key: Option<&str>) -> Result<(), StoreError> {
        self.for_write().await?.put_thread_key(id, key).await
    }

    async fn agents(&self) -> Result<Vec<Agent>, StoreError> {
        if self.unwritten().is_some() {
            return Ok(Vec::new());
        }
        self.ready().await?.agents().await
    }

    async fn agent(&self, id: &AgentId) -> Result<Option<Agent>, StoreError> {
        if self.unwritten().is_some() {
            return Ok(None);
        }
        self.ready().await?.agent(id).await
    }

    async fn put_agent(&self, agent: &Agent) -> Result<(), StoreError> {
        self.for_write().await?.put_agent(agent).await
    }

    async fn delete_agent(&self, id: &AgentId) -> Result<bool, StoreError> {
        self.for_write().await?.delete_agent(id).await
    }

    async fn compact(&self, request: CompactRequest) -> Result<Compaction, StoreError> {
        self.for_write().await?.compact(request).await
    }
}

#[async_trait]
impl MemoryStorage for Opening {
    async fn put_memory(&self, memory: &MemoryItem) -> Result<Option<MemoryItem>, StoreError> {
        self.for_write().await?.put_memory(memory).await
    }

    async fn touch_memory(
        &self,
        scopes: &[MemoryScope],
        id: &MemoryId,
        now: i64,
    ) -> Result<Option<MemoryItem>, StoreError> {
        if self.unwritten().is_some() {
            // No memory to touch, so nothing is written.
            return Ok(None);
        }
        self.for_write().await?.touch_memory(scopes, id, now).await
    }

    async fn search_memories(
        &self,
        search: &MemorySearch,
    ) -> Result<MemorySearchResult, StoreError> {
        // Not answered here: the store checks the query.
        self.ready().await?.search_memories(search).await
    }

    async fn memory_stats(&self, scopes: &[MemoryScope]) -> Result<MemoryStats, StoreError> {
        if self.unwritten().is_some() {
            return Ok(MemoryStats::default());
        }
        self.ready().await?.memory_stats(scopes).await
    }

    async fn delete_memory(
        &self,
        scopes: &[MemoryScope],
        id: &MemoryId,
    ) -> Result<bool, StoreError> {
        self.for_write().await?.delete_memory(scopes, id).await
    }

    async fn clear_memories(
        &self,
        scopes: &[MemoryScope],
        types: &[MemoryType],
    ) -> Result<u64, StoreError> {
        self.for_write().await?.clear_memories(scopes, types).await
    }
}

#[async_trait]
impl JobStorage for Opening {
    async fn jobs(&self) -> Result<Vec<CronJob>, StoreError> {
        if self.unwritten().is_some() {
            return Ok(Vec::new());
        }
        self.ready().await?.jobs().await
    }

    async fn job(&self, id: &str) -> Result<Option<CronJob>, StoreError> {
        if self.unwritten().is_some() {
            return Ok(None);
        }
        self.ready().await?.job(id).await
    }

    async fn job_by_name(&self, name: &str) -> Result<Option<CronJob>, StoreError> {
        if self.unwritten().is_some() {
            return Ok(None);
        }
        self.ready().await?.job_by_name(name).await
    }

    async fn put_job(&self, job: &CronJob) -> Result<(), StoreError> {
        self.for_write().await?.put_job(job).await
    }

    async fn delete_job(&self, id: &str) -> Result<bool, StoreError> {
        self.for_write().await?.delete_job(id).await
    }

    async fn put_execution(&self, execution: &CronExecution) -> Result<(), StoreError> {
        self.for_write().await?.put_execution(execution).await
    }

    async fn executions(
        &self,
        job_id: &str,
        limit: usize,
    ) -> Result<Vec<CronExecution>, StoreError> {
        if self.unwritten().is_some() {
            return Ok(Vec::new());
        }
        self.ready().await?.executions(job_id, limit).await
    }

    async fn unfinished_executions(&self) -> Result<Vec<CronExecution>, StoreError> {
        if self.unwritten().is_some() {
            return Ok(Vec::new());
        }
        self.ready().await?.unfinished_executions().await
    }
}
