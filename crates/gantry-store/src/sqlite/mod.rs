//! [`SqliteStore`]: the [`Store`] port on a SQLite file (WAL mode).
//!
//! One pool: commits are serialized in-process by a mutex and run as one
//! transaction each; reads run concurrently on the other connections, which
//! WAL lets proceed while a commit is writing.

mod agents;
mod jobs;
mod memories;
mod read;
mod settings;
mod write;

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use gantry_types::{Agent, AgentId, Event, ProviderConfig, Thread, ThreadId};
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use tokio::sync::Mutex;

use crate::{Commit, Store, StoreError, ThreadPage, ThreadQuery};

/// The schema migrations, embedded at compile time from `migrations/`.
pub static MIGRATOR: Migrator = sqlx::migrate!();

/// Connections in the pool: one writer at a time plus concurrent readers.
const MAX_CONNECTIONS: u32 = 4;

/// How long a statement waits for another process's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A store on a SQLite file.
#[derive(Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// Serializes commits: a second in-process writer would only spin on
    /// SQLite's busy handler.
    writer: Mutex<()>,
}

impl SqliteStore {
    /// Opens (creating it and its parent directories if needed) the database
    /// at `path` and brings its schema up to date.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| StoreError::Database(format!("create {}: {e}", parent.display())))?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // Under WAL, NORMAL is durable against application crashes and
            // only risks the last commits on power loss, at a fraction of FULL's fsyncs.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(MAX_CONNECTIONS)
            .min_connections(0)
            // SQLite connections do not go stale; reopening one only costs time.
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(|e| StoreError::Database(format!("open {}: {e}", path.display())))?;
        MIGRATOR
            .run(&pool)
            .await
            .map_err(|e| StoreError::Database(format!("migrate {}: {e}", path.display())))?;
        Ok(Self {
            pool,
            writer: Mutex::new(()),
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
        write::commit(&self.pool, &self.writer, commit).await
    }

    async fn events(&self, thread: &ThreadId, from_seq: u64) -> Result<Vec<Event>, StoreError> {
        read::events(&self.pool, thread, from_seq).await
    }

    async fn all_events(&self, from_seq: u64) -> Result<Vec<Event>, StoreError> {
        read::all_events(&self.pool, from_seq).await
    }

    async fn thread(&self, id: &ThreadId) -> Result<Option<Thread>, StoreError> {
        read::thread(&self.pool, id).await
    }

    async fn list_threads(&self, query: &ThreadQuery) -> Result<ThreadPage, StoreError> {
        read::list_threads(&self.pool, query).await
    }

    async fn running_threads(&self) -> Result<Vec<ThreadId>, StoreError> {
        read::running_threads(&self.pool).await
    }

    async fn providers(&self) -> Result<Vec<ProviderConfig>, StoreError> {
        settings::providers(&self.pool).await
    }

    async fn put_provider(&self, provider: &ProviderConfig) -> Result<(), StoreError> {
        settings::put_provider(&self.pool, &self.writer, provider).await
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
