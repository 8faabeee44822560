//! [`SqliteControlPlaneStore`]: the control plane's store on its own SQLite
//! file (WAL mode), written by one in-process writer at a time.

use std::path::Path;

use async_trait::async_trait;
use sqlx::Connection;
use sqlx::migrate::Migrator;
use sqlx::pool::PoolConnection;
use sqlx::query::Query;
use sqlx::sqlite::SqlitePool;
use tokio::sync::{MappedMutexGuard, MutexGuard};

use super::log::{LogCursor, LogPage, LogRow, logged};
use super::records::{
    AgentRecord, ApiTokenRecord, ItemRecord, RequestRecord, RunnerLoad, RunnerRecord, SkillRecord,
    ThreadChange, ThreadRecord, ThreadUpdateRecord, TurnRecord, Write,
};
use super::sql;
use super::token_stamp::TokenCache;
use super::{ControlPlaneStore, StoreError};

/// The database's file name in the data dir.
pub const CONTROL_PLANE_DB: &str = "control-plane.db";

/// Where every thread's log ends.
const LOG_HEAD: &str = "SELECT COALESCE(MAX(log_position), 0) FROM thread_updates";

/// A page of every thread's log after a position: row ids are given in
/// commit order (one writer at a time; no entry is ever deleted).
const LOG_AFTER: &str = "SELECT 0, log_position, thread_id, seq, ts, kind, data \
     FROM thread_updates WHERE log_position > $1 ORDER BY log_position LIMIT $2";

/// The control plane's migrations, embedded at compile time.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

type Db = sqlx::Sqlite;
type Conn = sqlx::SqliteConnection;
type Args = sqlx::sqlite::SqliteArguments;

/// The control plane's store on a SQLite file.
#[derive(Debug)]
pub struct SqliteControlPlaneStore {
    pool: SqlitePool,
    /// Serializes writes (seqs are computed inside the write transaction,
    /// and a second in-process writer would only spin on SQLite's lock),
    /// and holds the connection they go through: taken from the pool once,
    /// not per write, since every group commit would otherwise pay for it.
    writer: tokio::sync::Mutex<Option<PoolConnection<sqlx::Sqlite>>>,
    /// The API tokens, kept until any process changes them.
    tokens: TokenCache,
}

impl SqliteControlPlaneStore {
    /// Opens (creating it and its parent directories if needed) the database
    /// at `path` and brings its schema up to date.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        let pool = gantry_sqlite::open(path, &MIGRATOR)
            .await
            .map_err(|e| StoreError::Database(e.to_string()))?;
        Ok(Self {
            pool,
            writer: tokio::sync::Mutex::new(None),
            tokens: TokenCache::beside(path),
        })
    }

    /// Opens `control-plane.db` in `data_dir`.
    pub async fn open_in(data_dir: &Path) -> Result<Self, StoreError> {
        Self::open(&data_dir.join(CONTROL_PLANE_DB)).await
    }

    /// The writer's connection, under the writer lock.
    async fn writer(
        &self,
    ) -> Result<MappedMutexGuard<'_, PoolConnection<sqlx::Sqlite>>, StoreError> {
        let mut writer = self.writer.lock().await;
        if writer.is_none() {
            *writer = Some(self.pool.acquire().await.map_err(db_error("connect"))?);
        }
        MutexGuard::try_map(writer, Option::as_mut)
            .map_err(|_| StoreError::Database("the writer has no connection".to_owned()))
    }

    /// Runs one write statement on the writer's connection; the rows it
    /// affected.
    async fn execute(&self, what: &str, query: Query<'_, Db, Args>) -> Result<u64, StoreError> {
        let mut conn = self.writer().await?;
        let done = query.execute(&mut **conn).await.map_err(db_error(what))?;
        Ok(done.rows_affected())
    }
}

batch_functions!();

impl_control_plane_store!(SqliteControlPlaneStore, {
    async fn close(&self) {
        // The pool closes once every connection is back, the writer's too.
        drop(self.writer.lock().await.take());
        self.pool.close().await;
    }

    async fn log_head(&self) -> Result<LogCursor, StoreError> {
        let (position,): (i64,) = sqlx::query_as(LOG_HEAD)
            .fetch_one(&self.pool)
            .await
            .map_err(db_error("read the log's end"))?;
        Ok(LogCursor { tx: 0, position })
    }

    async fn log_after(&self, after: LogCursor, limit: i64) -> Result<LogPage, StoreError> {
        let rows: Vec<LogRow> = sqlx::query_as(LOG_AFTER)
            .bind(after.position)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(db_error("read every thread's log"))?;
        Ok(LogPage {
            updates: rows.into_iter().map(logged).collect(),
            held_back: false,
        })
    }

    async fn apply(&self, change: &ThreadChange) -> Result<ThreadUpdateRecord, StoreError> {
        let mut conn = self.writer().await?;
        let mut tx = conn.begin().await.map_err(db_error("begin"))?;
        match apply_in(&mut tx, change).await {
            Ok(entry) => {
                tx.commit().await.map_err(db_error("commit"))?;
                Ok(entry)
            }
            Err(e) => {
                // The change's error is the one worth reporting; nothing
                // was committed either way.
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }

    async fn write(&self, batch: &[Write]) -> Result<Vec<ThreadUpdateRecord>, StoreError> {
        let mut conn = self.writer().await?;
        let mut tx = conn.begin().await.map_err(db_error("begin"))?;
        match write_all_in(&mut tx, batch).await {
            Ok(entries) => {
                tx.commit().await.map_err(db_error("commit"))?;
                Ok(entries)
            }
            Err(e) => {
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }
});
