//! [`SqliteStore`]: the [`Store`](crate::Store) port on a SQLite file (WAL mode).
//!
//! Commits are serialized in-process by a mutex and run as one transaction
//! each, on a connection the mutex keeps for them; reads run concurrently on
//! a pool of others, which WAL lets proceed while a commit is writing. The queries are the ones
//! every SQL store runs (`shared/`); what is SQLite's own: the commit
//! (`write.rs`), deleting a thread (`delete.rs`) and the FTS5 index of
//! memories (`memories.rs`).

mod compact;
mod delete;
mod memories;
mod write;

use std::path::{Path, PathBuf};

use sqlx::migrate::Migrator;
use sqlx::sqlite::SqlitePool;
use tokio::sync::{Mutex, MutexGuard};

use crate::secrets::Sealer;
use crate::shared::check_log_format;
use crate::{Opening, Store, StoreError};

/// The schema migrations, embedded at compile time from `migrations/`.
pub static MIGRATOR: Migrator = sqlx::migrate!();

/// A new database holding exactly [`MIGRATOR`]'s migrations, made ahead of
/// time (`schema-image/`): a new store's file is written from it, not built
/// by running the migrations. Remade by `GANTRY_BLESS=1 cargo test -p
/// gantry-store --test it schema_image`; until then, a stale one is not used.
pub static IMAGE: gantry_sqlite::Image = gantry_sqlite::Image::new(
    include_bytes!("../../schema-image/gantry.db"),
    include_str!("../../schema-image/gantry.db.manifest"),
);

type Db = sqlx::Sqlite;
type Conn = sqlx::SqliteConnection;

/// Serializes commits; holds what they share.
pub(crate) type WriteLock = Mutex<Writer>;

/// What the write lock guards.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    /// The last commit cursor given; `None` until the first commit reads it
    /// from the file.
    last: Option<u64>,
    /// The connection commits and deletes run on, taken out of the pool at
    /// the first one. Kept rather than taken from the pool each time, since
    /// the pool checks a connection on the way out and back (two more round
    /// trips to SQLite's worker thread per commit). Dropped after a failed
    /// write, which may have left a transaction open on it.
    conn: Option<Conn>,
}

/// A store on a SQLite file.
#[derive(Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// Serializes writes (a second in-process writer would only spin on
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
        let pool = gantry_sqlite::open_with_image(path, &MIGRATOR, Some(&IMAGE))
            .await
            .map_err(|e| StoreError::Database(e.to_string()))?;
        let sealer = Sealer::load_or_create(&path.with_file_name(SECRET_KEY_FILE))?;
        let store = Self {
            pool,
            writer: Mutex::new(Writer::default()),
            sealer,
        };
        let version = store.setting("log_format_version").await?;
        check_log_format(version.as_deref(), &path.display().to_string())?;
        Ok(store)
    }

    /// Opens the database at `path` as [`SqliteStore::open`] does, in the
    /// background. If there is none yet, the store is known to hold
    /// nothing until written (only [`new_settings`]), so reads before the
    /// first write do not wait for the file to be made. Must be called
    /// within a Tokio runtime.
    pub fn open_in_background(path: PathBuf) -> Opening {
        if path.exists() {
            Opening::new(move || async move { Self::open(&path).await })
        } else {
            Opening::new_store(
                move || async move { Self::open(&path).await },
                new_settings(),
            )
        }
    }

    /// Closes every connection, waiting for them to finish (checkpointing the WAL).
    pub async fn close(&self) {
        if let Some(conn) = self.writer.lock().await.conn.take() {
            let _ = sqlx::Connection::close(conn).await;
        }
        self.pool.close().await;
    }

    /// Held across every write: one writer at a time in this process.
    async fn lock_writes(&self) -> MutexGuard<'_, Writer> {
        self.writer.lock().await
    }
}

impl Writer {
    /// The writer's connection, taken out of the pool if it has none.
    async fn conn(&mut self, pool: &SqlitePool) -> Result<&mut Conn, StoreError> {
        let conn = match self.conn.take() {
            Some(conn) => conn,
            None => pool
                .acquire()
                .await
                .map_err(crate::shared::db_error("connect"))?
                .detach(),
        };
        Ok(self.conn.insert(conn))
    }

    /// Rolls back whatever a failed write left open and closes the
    /// connection: the next write gets a fresh one.
    async fn discard(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            let _ = sqlx::query("ROLLBACK").execute(&mut conn).await;
            let _ = sqlx::Connection::close(conn).await;
        }
    }
}

/// The version of the stored log's format this build reads and writes
/// (the `log_format_version` setting, set by the migrations).
pub const LOG_FORMAT_VERSION: u32 = 1;

/// The settings a new store holds: the ones its migrations set.
pub fn new_settings() -> [(String, String); 1] {
    [(
        "log_format_version".to_owned(),
        LOG_FORMAT_VERSION.to_string(),
    )]
}

impl_store!(SqliteStore);
impl_job_storage!(SqliteStore);
impl_memory_storage!(SqliteStore);
