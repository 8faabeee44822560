//! Opening the SQLite database file the way every Gantry store does (as
//! `gantry-store` opens the engine's): WAL, a small pool, a busy timeout for
//! other processes' writes, the schema brought up to date by the migrations.

use std::path::Path;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::StoreError;

/// Connections in the pool: one writer at a time plus concurrent readers.
const MAX_CONNECTIONS: u32 = 4;

/// How long a statement waits for another process's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens (creating it and its parent directories if needed) the database at
/// `path` and runs `migrator` on it.
pub(crate) async fn open(path: &Path, migrator: &Migrator) -> Result<SqlitePool, StoreError> {
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
    migrator
        .run(&pool)
        .await
        .map_err(|e| StoreError::Database(format!("migrate {}: {e}", path.display())))?;
    Ok(pool)
}
