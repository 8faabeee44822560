//! [`PostgresStore`]: the [`Store`] port on a PostgreSQL database, for
//! several Gantry processes sharing one log.
//!
//! It runs the statements of `sql.rs`, as SQLite does, on the schema of
//! `migrations-postgres/`. What differs: commit cursors come from a counter
//! row whose lock orders commits across processes (see `write.rs`), and
//! memories are searched with a `tsvector` column ranked by `ts_rank`
//! (see `memories.rs`). Nothing is cached in the process: another one may
//! write at any time.

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
use sqlx::postgres::PgPool;

use crate::secrets::Sealer;
use crate::sqlite::LOG_FORMAT_VERSION;
use crate::{Commit, Store, StoreError, ThreadPage, ThreadQuery};

/// `url` without its password, fit for errors and logs.
pub use gantry_postgres::redacted;

/// The schema migrations, embedded at compile time from `migrations-postgres/`.
pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations-postgres");

/// A store on a PostgreSQL database.
#[derive(Debug)]
pub struct PostgresStore {
    pool: PgPool,
    /// Seals API keys before they are written (see [`crate::secrets`]).
    sealer: Sealer,
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user@host:port/name`),
    /// creating the database if it does not exist, and brings its schema up
    /// to date. API keys are sealed with the key in `secret_key` (a file,
    /// created if missing): every process sharing the database needs the
    /// same one to read the keys another stored.
    pub async fn open(url: &str, secret_key: &Path) -> Result<Self, StoreError> {
        let pool = gantry_postgres::open(url, &MIGRATOR)
            .await
            .map_err(|e| StoreError::Database(e.to_string()))?;
        let shown = redacted(url);
        check_log_format(&pool, &shown).await?;
        let sealer = Sealer::load_or_create(secret_key)?;
        Ok(Self { pool, sealer })
    }

    /// Closes every connection, waiting for them to finish.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Claims the database for this process, as the lock of a data dir
    /// does for SQLite: an engine recovers the turns it finds running at
    /// start, which must not be another live process's. Fails, saying so,
    /// if another process holds it; the claim ends when the returned value
    /// is dropped or the process dies (it is a session advisory lock on a
    /// connection of its own).
    pub async fn claim(&self) -> Result<Claim, StoreError> {
        let mut conn = self
            .pool
            .acquire()
            .await
            .map_err(db_error("claim the database"))?
            .detach();
        let (claimed,): (bool,) = sqlx::query_as("SELECT pg_try_advisory_lock($1)")
            .bind(CLAIM_KEY)
            .fetch_one(&mut conn)
            .await
            .map_err(db_error("claim the database"))?;
        if !claimed {
            return Err(StoreError::Database(
                "the database is in use by another gantry process; stop it or use another database"
                    .into(),
            ));
        }
        Ok(Claim { conn })
    }
}

/// The advisory lock key of [`PostgresStore::claim`] ("gantry" in ASCII).
const CLAIM_KEY: i64 = 0x6761_6e74_7279;

/// A database claimed by this process ([`PostgresStore::claim`]); dropping
/// it closes its connection, which releases the claim.
#[derive(Debug)]
pub struct Claim {
    conn: sqlx::PgConnection,
}

impl Claim {
    /// Gives the claim up now (dropping it does so once the server notices
    /// the connection closed).
    pub async fn release(mut self) -> Result<(), StoreError> {
        sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(CLAIM_KEY)
            .execute(&mut self.conn)
            .await
            .map_err(db_error("release the database"))?;
        let _ = sqlx::Connection::close(self.conn).await;
        Ok(())
    }
}

/// Refuses a database whose log a newer Gantry wrote (see the SQLite store's).
async fn check_log_format(pool: &PgPool, shown: &str) -> Result<(), StoreError> {
    let stored = settings::setting(pool, "log_format_version").await?;
    let version = stored
        .as_deref()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(0);
    if version > LOG_FORMAT_VERSION {
        return Err(StoreError::Database(format!(
            "{shown}: its event log has format version {version}, newer than this Gantry reads ({LOG_FORMAT_VERSION}); use a newer Gantry"
        )));
    }
    Ok(())
}

/// Maps a driver error, naming the operation that failed.
fn db_error(what: &str) -> impl FnOnce(sqlx::Error) -> StoreError + '_ {
    move |e| StoreError::Database(format!("{what}: {e}"))
}

#[async_trait]
impl Store for PostgresStore {
    async fn commit(&self, commit: &Commit) -> Result<u64, StoreError> {
        write::commit(&self.pool, &self.sealer, commit).await
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
        settings::put_provider(&self.pool, &self.sealer, provider).await
    }

    async fn delete_provider(&self, name: &str) -> Result<bool, StoreError> {
        settings::delete_provider(&self.pool, name).await
    }

    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        settings::setting(&self.pool, key).await
    }

    async fn put_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        settings::put_setting(&self.pool, key, value).await
    }

    async fn agents(&self) -> Result<Vec<Agent>, StoreError> {
        agents::agents(&self.pool).await
    }

    async fn agent(&self, id: &AgentId) -> Result<Option<Agent>, StoreError> {
        agents::agent(&self.pool, id).await
    }

    async fn put_agent(&self, agent: &Agent) -> Result<(), StoreError> {
        agents::put_agent(&self.pool, agent).await
    }

    async fn delete_agent(&self, id: &AgentId) -> Result<bool, StoreError> {
        agents::delete_agent(&self.pool, id).await
    }

    async fn delete_thread(&self, id: &ThreadId) -> Result<bool, StoreError> {
        delete::delete_thread(&self.pool, id).await
    }
}
