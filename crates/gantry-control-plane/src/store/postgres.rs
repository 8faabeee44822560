//! [`PostgresControlPlaneStore`]: the control plane's store on a PostgreSQL
//! database, which several control-plane replicas may share.
//!
//! It runs the statements of `sql.rs`, as SQLite does, on the schema of
//! `migrations-postgres/`. What differs: no in-process writer lock (the
//! database orders writers, and another process may write at any time);
//! [`ControlPlaneStore::apply`] takes a per-thread advisory lock so two
//! processes never compute the same next seq (a batch's seqs, assigned by
//! its writer, are refused twice by the log's primary key). It opens as the
//! engine's PostgreSQL store does, through `gantry-postgres`.

use async_trait::async_trait;
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::postgres::PgPool;
use sqlx::query::Query;

use super::log::{LogCursor, LogPage, LogRow, logged};
use super::records::{
    AgentRecord, ApiTokenRecord, ItemRecord, RequestRecord, RunnerLoad, RunnerRecord, SkillRecord,
    ThreadChange, ThreadRecord, ThreadUpdateRecord, TurnRecord, Write,
};
use super::sql;
use super::token_stamp::TokenCache;
use super::{ControlPlaneStore, StoreError};

/// The schema migrations, embedded at compile time from `migrations-postgres/`.
static MIGRATOR: Migrator = sqlx::migrate!("./migrations-postgres");

type Db = sqlx::Postgres;
type Conn = sqlx::PgConnection;
type Args = sqlx::postgres::PgArguments;

/// The first key of [`ControlPlaneStore::apply`]'s advisory locks ("cp"),
/// the second being the thread id's hash: apart from any other lock taken
/// on the database.
const APPLY_LOCK_SPACE: i32 = 0x6370;

/// The control plane's store on a PostgreSQL database.
#[derive(Debug)]
pub struct PostgresControlPlaneStore {
    pool: PgPool,
    /// Keeps nothing: another replica or machine may change the tokens.
    tokens: TokenCache,
}

impl PostgresControlPlaneStore {
    /// Connects to the database at `url` (`postgres://user@host:port/name`),
    /// creating the database if it does not exist, and brings its schema up
    /// to date. The database must be the control plane's own, not the
    /// engine's: both have tables named `threads` and `agents`.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with_password(url, None).await
    }

    /// Like [`PostgresControlPlaneStore::open`], logging in with `password`
    /// when given (read from a file: a password in a command line's URL is
    /// visible to other processes).
    pub async fn open_with_password(url: &str, password: Option<&str>) -> Result<Self, StoreError> {
        let pool = gantry_postgres::open_with_password(url, password, &MIGRATOR).await.map_err(|e| {
            let hint = match &e {
                gantry_postgres::OpenError::Migrate {
                    source: MigrateError::VersionMismatch(_) | MigrateError::VersionMissing(_),
                    ..
                } => {
                    " (is it another schema's, e.g. the engine's store? the control plane needs a database of its own)"
                }
                _ => "",
            };
            StoreError::Database(format!("{e}{hint}"))
        })?;
        Ok(Self {
            pool,
            tokens: TokenCache::none(),
        })
    }

    /// Runs one write statement; the rows it affected.
    async fn execute(&self, what: &str, query: Query<'_, Db, Args>) -> Result<u64, StoreError> {
        let done = query.execute(&self.pool).await.map_err(db_error(what))?;
        Ok(done.rows_affected())
    }
}

batch_functions!();

impl_control_plane_store!(PostgresControlPlaneStore, {
    async fn close(&self) {
        self.pool.close().await;
    }

    async fn log_head(&self) -> Result<LogCursor, StoreError> {
        let (horizon,): (i64,) = sqlx::query_as(LOG_HEAD)
            .fetch_one(&self.pool)
            .await
            .map_err(db_error("read the log's end"))?;
        Ok(LogCursor {
            tx: horizon,
            position: 0,
        })
    }

    async fn log_after(&self, after: LogCursor, limit: i64) -> Result<LogPage, StoreError> {
        let read = async {
            // One snapshot for both reads: what is held back is judged by
            // the horizon the page was read under.
            let mut tx = self.pool.begin().await?;
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                .execute(&mut *tx)
                .await?;
            let rows: Vec<LogRow> = sqlx::query_as(LOG_AFTER)
                .bind(after.tx)
                .bind(after.position)
                .bind(limit)
                .fetch_all(&mut *tx)
                .await?;
            let full = i64::try_from(rows.len()).unwrap_or(i64::MAX) >= limit;
            let held_back = if full {
                false
            } else {
                let (held,): (bool,) = sqlx::query_as(LOG_HELD_BACK)
                    .bind(after.tx)
                    .bind(after.position)
                    .fetch_one(&mut *tx)
                    .await?;
                held
            };
            tx.commit().await?;
            Ok::<_, sqlx::Error>(LogPage {
                updates: rows.into_iter().map(logged).collect(),
                held_back,
            })
        };
        read.await.map_err(db_error("read every thread's log"))
    }

    async fn apply(&self, change: &ThreadChange) -> Result<ThreadUpdateRecord, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_error("begin"))?;
        let locked = sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
            .bind(APPLY_LOCK_SPACE)
            .bind(&change.thread_id)
            .execute(&mut *tx)
            .await
            .map_err(db_error("lock the thread's log"));
        match locked {
            Ok(_) => {}
            Err(e) => {
                let _ = tx.rollback().await;
                return Err(e);
            }
        }
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
        let mut tx = self.pool.begin().await.map_err(db_error("begin"))?;
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

/// The oldest transaction still running: every entry written before it is
/// final (committed or rolled back), in the snapshot of the statement.
macro_rules! horizon {
    () => {
        "(SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint)"
    };
}

/// Where every thread's log ends: entries of transactions from the horizon
/// on come after it (position 0 precedes every position).
const LOG_HEAD: &str = concat!("SELECT ", horizon!());

/// A page of every thread's log after a cursor, of transactions below the
/// horizon only: none of those can commit later and land before the page.
const LOG_AFTER: &str = concat!(
    "SELECT log_tx, log_position, thread_id, seq, ts, kind, data FROM thread_updates \
     WHERE (log_tx, log_position) > ($1, $2) AND log_tx < ",
    horizon!(),
    " ORDER BY log_tx, log_position LIMIT $3"
);

/// Whether committed entries after a cursor wait behind the horizon.
const LOG_HELD_BACK: &str = concat!(
    "SELECT EXISTS (SELECT 1 FROM thread_updates \
     WHERE (log_tx, log_position) > ($1, $2) AND log_tx >= ",
    horizon!(),
    ")"
);
