//! Durable storage for the event log. The engine persists through the
//! [`Store`] port; this crate holds the port and its implementations:
//! SQLite (a file, the default), PostgreSQL (a database several processes
//! share) and in-memory (nothing written); and [`Opening`], any of them
//! opened in the background.
//!
//! The schema is an append-only `events` table keyed by `(thread_id, seq)` and
//! a `threads` table that indexes each thread's latest metadata for listing.

#![warn(missing_docs)]

// First: the macros both SQL stores expand (`sqlite`, `postgres`).
#[macro_use]
mod shared;

mod codec;
mod compact;
mod jobs;
mod memories;
pub mod memory;
mod opening;
mod page;
pub mod postgres;
mod secrets;
mod sql;
pub mod sqlite;

use async_trait::async_trait;
use gantry_types::{Agent, AgentId, Event, ProviderConfig, Thread, ThreadId};

pub use compact::{CompactMode, CompactRequest, Compaction};
pub use jobs::JobStorage;
pub use memories::{MemorySearch, MemoryStorage};

pub use memory::MemoryStore;
pub use opening::Opening;
pub use page::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

/// A group of writes applied atomically: events appended, thread rows upserted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Commit {
    /// Events to append; `(thread_id, seq)` must be new.
    pub events: Vec<Event>,
    /// Latest metadata of the threads the events touched.
    pub threads: Vec<Thread>,
}

/// Filters for listing threads, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadQuery {
    /// `Some(true)`: only archived; `Some(false)`: only not archived; `None`: all.
    pub archived: Option<bool>,
    /// Page size (0 means the default of 50).
    pub limit: usize,
    /// Continue after this cursor (from a previous page's `next_cursor`).
    pub cursor: Option<String>,
}

/// One page of threads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadPage {
    /// Threads, newest first.
    pub threads: Vec<Thread>,
    /// Pass as `cursor` for the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database failed.
    #[error("store: {0}")]
    Database(String),
    /// A stored row could not be decoded.
    #[error("store: corrupt row: {0}")]
    Corrupt(String),
    /// A cursor that this store did not hand out.
    #[error("invalid cursor {0:?}")]
    BadCursor(String),
}

/// The setting that holds thread `id`'s API key ([`Store::thread_key`]).
pub fn thread_key_setting(id: &ThreadId) -> String {
    format!("thread_api_key/{}", id.as_str())
}

/// The storage port. Memory items and scheduled jobs are parts of it of
/// their own ([`MemoryStorage`], [`JobStorage`]).
#[async_trait]
pub trait Store: MemoryStorage + JobStorage + Send + Sync {
    /// Applies a commit atomically, giving its events the next commit
    /// cursors in order (their own `cursor` is ignored). Returns the cursor
    /// of the last event stored so far (0 when none is).
    async fn commit(&self, commit: &Commit) -> Result<u64, StoreError>;

    /// A thread's events with `seq >= from_seq`, in seq order.
    async fn events(&self, thread: &ThreadId, from_seq: u64) -> Result<Vec<Event>, StoreError>;

    /// At most `limit` events of every thread with a cursor above `after`,
    /// in commit order: one page of an all-threads replay. A row that
    /// cannot be read is left out and reported.
    async fn events_after(&self, after: u64, limit: usize) -> Result<Vec<Event>, StoreError>;

    /// The cursor of the last event committed (0 when none is).
    async fn last_cursor(&self) -> Result<u64, StoreError>;

    /// A thread's latest metadata.
    async fn thread(&self, id: &ThreadId) -> Result<Option<Thread>, StoreError>;

    /// Lists threads, newest first.
    async fn list_threads(&self, query: &ThreadQuery) -> Result<ThreadPage, StoreError>;

    /// Deletes a thread at once: its events, its row and its memories
    /// (with their tags and search rows); false if nothing of it was
    /// stored. The commit cursors its events had are never given again.
    async fn delete_thread(&self, id: &ThreadId) -> Result<bool, StoreError>;

    /// Threads whose stored status is `running`: the ones to recover after a crash.
    async fn running_threads(&self) -> Result<Vec<ThreadId>, StoreError>;

    /// Every stored provider, by name. Literal keys are returned as stored;
    /// keys read from the environment never reach the store.
    async fn providers(&self) -> Result<Vec<ProviderConfig>, StoreError>;

    /// Inserts or replaces the provider named `provider.name`.
    async fn put_provider(&self, provider: &ProviderConfig) -> Result<(), StoreError>;

    /// Deletes a provider; false if there was none of that name.
    async fn delete_provider(&self, name: &str) -> Result<bool, StoreError>;

    /// A setting's value (e.g. `default_model`).
    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError>;

    /// Sets a setting.
    async fn put_setting(&self, key: &str, value: &str) -> Result<(), StoreError>;

    /// The API key of thread `id`'s own model server
    /// ([`ModelEndpoint`](gantry_types::ModelEndpoint)), kept beside the
    /// thread: no event holds it, so no stream, log or view can show it.
    /// Deleted with the thread.
    async fn thread_key(&self, id: &ThreadId) -> Result<Option<String>, StoreError> {
        let value = self.setting(&thread_key_setting(id)).await?;
        Ok(value.filter(|v| !v.is_empty()))
    }

    /// Keeps `key` as thread `id`'s API key (sealed where the store seals
    /// keys); `None`: the thread has none now.
    async fn put_thread_key(&self, id: &ThreadId, key: Option<&str>) -> Result<(), StoreError> {
        self.put_setting(&thread_key_setting(id), key.unwrap_or_default())
            .await
    }

    /// Every stored agent, by id.
    async fn agents(&self) -> Result<Vec<Agent>, StoreError>;

    /// The agent with `id`.
    async fn agent(&self, id: &AgentId) -> Result<Option<Agent>, StoreError>;

    /// Inserts or replaces the agent with `agent.id`.
    async fn put_agent(&self, agent: &Agent) -> Result<(), StoreError>;

    /// Deletes an agent; false if there was none with that id.
    async fn delete_agent(&self, id: &AgentId) -> Result<bool, StoreError>;

    /// Gives back the space deleted rows left behind, as far as the
    /// database can (see [`CompactMode`]), and says how big it was before
    /// and after. Commits of this process wait while it runs.
    async fn compact(&self, request: CompactRequest) -> Result<Compaction, StoreError>;
}
