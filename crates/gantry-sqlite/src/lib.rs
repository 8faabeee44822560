//! Opening a SQLite database file the way every Gantry store does (the
//! engine's in `gantry-store`, the control plane's in `gantry-control-plane`):
//! WAL, a small pool, a busy timeout for other processes' writes, the schema
//! brought up to date by the store's own migrations. A new file is made
//! whole before it appears (`create`), from the store's image of one where
//! it ships a current one (`image`).

mod batch;
mod create;
pub mod image;

pub use image::Image;

use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

/// Connections in the pool: one writer at a time plus concurrent readers.
const MAX_CONNECTIONS: u32 = 4;

/// How long a statement waits for another process's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a database could not be opened; names the file and the step.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Its directory could not be created.
    #[error("create {}: {source}", dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// SQLite could not open it.
    #[error("open {}: {source}", path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        source: sqlx::Error,
    },
    /// A new database could not be made and put in place.
    #[error("create {}: {source}", path.display())]
    Create {
        /// The database file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A migration failed (or the file holds a newer schema than this build knows).
    #[error("migrate {}: {source}", path.display())]
    Migrate {
        /// The database file.
        path: PathBuf,
        /// What the migrator said.
        source: sqlx::migrate::MigrateError,
    },
}

/// Opens (creating it and its parent directories if needed) the database at
/// `path` and runs `migrator` on it.
pub async fn open(path: &Path, migrator: &Migrator) -> Result<SqlitePool, OpenError> {
    open_with_image(path, migrator, None).await
}

/// [`open`], a new file written from `image` while it holds exactly
/// `migrator`'s migrations (else built as `open` builds it).
pub async fn open_with_image(
    path: &Path,
    migrator: &Migrator,
    image: Option<&Image>,
) -> Result<SqlitePool, OpenError> {
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| OpenError::CreateDir {
            dir: dir.to_owned(),
            source,
        })?;
    }
    // A file made here holds exactly the migrator's schema: running it again
    // would only read the schema and the migrations table once more.
    let made_here = !path.exists() && create::create(path, migrator, image).await?;
    let pool = SqlitePoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .min_connections(0)
        // SQLite connections do not go stale; reopening one only costs time.
        .max_lifetime(None)
        .connect_with(options(path))
        .await
        .map_err(|source| OpenError::Open {
            path: path.to_owned(),
            source,
        })?;
    if !made_here {
        migrator
            .run(&pool)
            .await
            .map_err(|source| OpenError::Migrate {
                path: path.to_owned(),
                source,
            })?;
    }
    Ok(pool)
}

/// How every connection to the database at `path` is opened.
fn options(path: &Path) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // Under WAL, NORMAL is durable against application crashes and
        // only risks the last commits on power loss, at a fraction of FULL's fsyncs.
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(BUSY_TIMEOUT)
        .foreign_keys(true)
}
