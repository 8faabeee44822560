//! [`PostgresStore`]: the [`Store`] port on a PostgreSQL database, for
//! several Gantry processes sharing one log.
//!
//! It runs the statements of `sql.rs` through the code of `shared/`, as
//! SQLite does, on the schema of `migrations-postgres/`. What differs:
//! commit cursors come from a counter row whose lock orders commits across
//! processes (see `write.rs`), and memories are searched with a `tsvector`
//! column ranked by `ts_rank` (see `memories.rs`). Nothing is cached in the
//! process, and no writer lock is taken in it: another process may write at
//! any time, and the database orders writers.

mod compact;
mod delete;
mod memories;
mod write;

use std::path::Path;

use sqlx::migrate::Migrator;
use sqlx::postgres::PgPool;

use crate::secrets::Sealer;
use crate::shared::{check_log_format, db_error};
use crate::{Store, StoreError};

/// `url` without its password, fit for errors and logs.
pub use gantry_postgres::redacted;

/// Whether a database URL carries a password.
pub use gantry_postgres::has_password;

/// The schema migrations, embedded at compile time from `migrations-postgres/`.
pub static MIGRATOR: Migrator = sqlx::migrate!("./migrations-postgres");

type Db = sqlx::Postgres;
type Conn = sqlx::PgConnection;

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
        Self::open_with_password(url, None, secret_key).await
    }

    /// Like [`PostgresStore::open`], logging in with `password` when given
    /// (read from a file: a password in a command line's URL is visible to
    /// other processes).
    pub async fn open_with_password(
        url: &str,
        password: Option<&str>,
        secret_key: &Path,
    ) -> Result<Self, StoreError> {
        let pool = gantry_postgres::open_with_password(url, password, &MIGRATOR)
            .await
            .map_err(|e| StoreError::Database(e.to_string()))?;
        let sealer = Sealer::load_or_create(secret_key)?;
        let store = Self { pool, sealer };
        let version = store.setting("log_format_version").await?;
        check_log_format(version.as_deref(), &redacted(url))?;
        Ok(store)
    }

    /// Closes every connection, waiting for them to finish.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Held across every write in the SQLite store; here nothing is: the
    /// database orders writers, from this process and from others.
    async fn lock_writes(&self) {}

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

impl_store!(PostgresStore);
impl_job_storage!(PostgresStore);
impl_memory_storage!(PostgresStore);
