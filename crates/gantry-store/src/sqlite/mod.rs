//! [`SqliteStore`]: the [`Store`] port on a SQLite file (WAL mode).
//!
//! One pool: commits are serialized in-process by a mutex and run as one
//! transaction each; reads run concurrently on the other connections, which
//! WAL lets proceed while a commit is writing.

mod agents;
mod jobs;
mod memories;
pub(crate) mod pool;
mod read;
mod settings;
mod write;

use std::path::Path;

use async_trait::async_trait;
use gantry_types::{Agent, AgentId, Event, ProviderConfig, Thread, ThreadId};
use sqlx::migrate::Migrator;
use sqlx::sqlite::SqlitePool;
use tokio::sync::Mutex;

use crate::secrets::Sealer;
use crate::{Commit, Store, StoreError, ThreadPage, ThreadQuery};

/// The schema migrations, embedded at compile time from `migrations/`.
pub static MIGRATOR: Migrator = sqlx::migrate!();

/// A store on a SQLite file.
#[derive(Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// Serializes commits: a second in-process writer would only spin on
    /// SQLite's busy handler.
    writer: Mutex<()>,
    /// Seals API keys before they are written (see [`crate::secrets`]).
    sealer: Sealer,
}

/// The file, next to the database, holding the key API keys are sealed with.
pub const SECRET_KEY_FILE: &str = "secret.key";

impl SqliteStore {
    /// Opens (creating it and its parent directories if needed) the database
    /// at `path` and brings its schema up to date. API keys are sealed with
    /// the key in [`SECRET_KEY_FILE`] next to it (created if missing).
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        let pool = pool::open(path, &MIGRATOR).await?;
        let sealer = Sealer::load_or_create(&path.with_file_name(SECRET_KEY_FILE))?;
        Ok(Self {
            pool,
            writer: Mutex::new(()),
            sealer,
        })
    }

    /// Closes every connection, waiting for them to finish (checkpointing the WAL).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Maps a driver error, naming the operation that failed.
fn db_error(what: &str) -> impl FnOnce(sqlx::Error) -> StoreError + '_ {
    move |e| StoreError::Database(format!("{what}: {e}"))
}

#[async_trait]
impl Store for SqliteStore {
    async fn commit(&self, commit: &Commit) -> Result<(), StoreError> {
        write::commit(&self.pool, &self.writer, &self.sealer, commit).await
    }

    async fn events(&self, thread: &ThreadId, from_seq: u64) -> Result<Vec<Event>, StoreError> {
        read::events(&self.pool, &self.sealer, thread, from_seq).await
    }

    async fn all_events(&self, from_seq: u64) -> Result<Vec<Event>, StoreError> {
        read::all_events(&self.pool, &self.sealer, from_seq).await
    }

    async fn thread(&self, id: &ThreadId) -> Result<Option<Thread>, StoreError> {
        read::thread(&self.pool, &self.sealer, id).await
    }

    async fn list_threads(&self, query: &ThreadQuery) -> Result<ThreadPage, StoreError> {
        read::list_threads(&self.pool, &self.sealer, query).await
    }

    async fn running_threads(&self) -> Result<Vec<ThreadId>, StoreError> {
        read::running_threads(&self.pool).await
    }

    async fn providers(&self) -> Result<Vec<ProviderConfig>, StoreError> {
        settings::providers(&self.pool, &self.sealer).await
    }

    async fn put_provider(&self, provider: &ProviderConfig) -> Result<(), StoreError> {
        settings::put_provider(&self.pool, &self.writer, &self.sealer, provider).await
    }

    async fn delete_provider(&self, name: &str) -> Result<bool, StoreError> {
        settings::delete_provider(&self.pool, &self.writer, name).await
    }

    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        settings::setting(&self.pool, key).await
    }

    async fn put_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        settings::put_setting(&self.pool, &self.writer, key, value).await
    }

    async fn agents(&self) -> Result<Vec<Agent>, StoreError> {
        agents::agents(&self.pool).await
    }

    async fn agent(&self, id: &AgentId) -> Result<Option<Agent>, StoreError> {
        agents::agent(&self.pool, id).await
    }

    async fn put_agent(&self, agent: &Agent) -> Result<(), StoreError> {
        agents::put_agent(&self.pool, &self.writer, agent).await
    }

    async fn delete_agent(&self, id: &AgentId) -> Result<bool, StoreError> {
        agents::delete_agent(&self.pool, &self.writer, id).await
    }
}
