//! [`SqliteStore`]: the [`Store`] port on a SQLite file (WAL mode).
//!
//! One pool: commits are serialized in-process by a mutex and run as one
//! transaction each; reads run concurrently on the other connections, which
//! WAL lets proceed while a commit is writing.

mod agents;
mod delete;
mod jobs;
mod memories;
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

/// Serializes commits and holds the last commit cursor given (`None` until
/// the first commit reads it from the file).
pub(crate) type WriteLock = Mutex<Option<u64>>;

/// A store on a SQLite file.
#[derive(Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// Serializes commits (a second in-process writer would only spin on
    /// SQLite's busy handler) and holds the last commit cursor given; `None`
    /// until the first commit reads it from the file.
    writer: WriteLock,
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
        let pool = gantry_sqlite::open(path, &MIGRATOR)
            .await
            .map_err(|e| StoreError::Database(e.to_string()))?;
        check_log_format(&pool, path).await?;
        let sealer = Sealer::load_or_create(&path.with_file_name(SECRET_KEY_FILE))?;
        Ok(Self {
            pool,
            writer: Mutex::new(None),
            sealer,
        })
    }

    /// Closes every connection, waiting for them to finish (checkpointing the WAL).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// The version of the stored log's format this build reads and writes
/// (the `log_format_version` setting, set by the migrations).
pub const LOG_FORMAT_VERSION: u32 = 1;

/// Refuses a database whose log a newer Gantry wrote in a format this one
/// does not know: reading it could misread events, writing could mix formats.
async fn check_log_format(pool: &SqlitePool, path: &Path) -> Result<(), StoreError> {
    let stored = settings::setting(pool, "log_format_version").await?;
    let version = stored
        .as_deref()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(0);
    if version > LOG_FORMAT_VERSION {
        return Err(StoreError::Database(format!(
            "{}: its event log has format version {version}, newer than this Gantry reads ({LOG_FORMAT_VERSION}); use a newer Gantry",
            path.display()
        )));
    }
    Ok(())
}

/// Maps a driver error, naming the operation that failed.
fn db_error(what: &str) -> impl FnOnce(sqlx::Error) -> StoreError + '_ {
    move |e| StoreError::Database(format!("{what}: {e}"))
}

#[async_trait]
impl Store for SqliteStore {
    async fn commit(&self, commit: &Commit) -> Result<u64, StoreError> {
        write::commit(&self.pool, &self.writer, &self.sealer, commit).await
    }

    async fn events(&self, thread: &ThreadId, from_seq: u64) -> Result<Vec<Event>, StoreError> {
        read::events(&self.pool, &self.sealer, thread, from_seq).await
    }

    async fn events_after(&self, after: u64, limit: usize) -> Result<Vec<Event>, StoreError> {
        read::events_after(&self.pool, &self.sealer, after, limit).await
    }

    async fn last_cursor(&self) -> Result<u64, StoreError> {
        read::last_cursor(&self.pool).await
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

    async fn delete_thread(&self, id: &ThreadId) -> Result<bool, StoreError> {
        delete::delete_thread(&self.pool, &self.writer, id).await
    }
}
