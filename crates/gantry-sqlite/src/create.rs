//! Making a new database file: written from the store's image where it has
//! a current one (`image.rs`), else its schema built, in a scratch file next
//! to it with no journal on disk and no sync; then synced once and linked
//! into place. A crash meanwhile leaves no database at the path (the next
//! start makes one anew), never a half-made one that would be taken as
//! complete.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use sqlx::migrate::{MigrateError, Migrator};
use sqlx::sqlite::{SqliteConnection, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection};

use crate::OpenError;
use crate::batch::{self, Stamp};
use crate::image::Image;

/// Makes the database at `path` (which does not exist) with `migrator`'s
/// schema, from `image` if it holds exactly that. If another process makes
/// it first, theirs is kept.
/// Returns whether the file now there is the one made here (so it holds
/// exactly `migrator`'s schema).
pub(crate) async fn create(
    path: &Path,
    migrator: &Migrator,
    image: Option<&Image>,
) -> Result<bool, OpenError> {
    let scratch = scratch_path(path);
    let stamped = image.and_then(|image| image.stamped(migrator, SystemTime::now()));
    let made = match stamped {
        Some(file) => write_new(&scratch, &file).map_err(|source| OpenError::Create {
            path: scratch.clone(),
            source,
        }),
        None => build(&scratch, migrator, Stamp::Measured).await,
    };
    let placed = match made {
        Ok(()) => place(&scratch, path).map_err(|source| OpenError::Create {
            path: path.to_owned(),
            source,
        }),
        Err(e) => Err(e),
    };
    remove_scratch(&scratch);
    placed
}

/// A name no other process creating the same database uses at the same time.
pub(crate) fn scratch_path(path: &Path) -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut name = OsString::from(path.as_os_str());
    name.push(format!(".new-{}-{nanos}", std::process::id()));
    PathBuf::from(name)
}

/// Writes `file` as a new file at `scratch`, with the mode SQLite gives the
/// files it creates (0644, less the umask). Not synced: `place` does that.
fn write_new(scratch: &Path, file: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    let mut options = File::options();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o644);
    options.open(scratch)?.write_all(file)
}

/// Migrates a new file at `scratch` on one connection. Nothing is synced: the
/// file only counts once `place` has synced it.
pub(crate) async fn build(
    scratch: &Path,
    migrator: &Migrator,
    stamp: Stamp,
) -> Result<(), OpenError> {
    // No journal on disk and no sync while the schema is built: switching a
    // new file to WAL first would sync a rollback journal four times.
    let mut conn: SqliteConnection = crate::options(scratch)
        .journal_mode(SqliteJournalMode::Memory)
        .synchronous(SqliteSynchronous::Off)
        .connect()
        .await
        .map_err(|source| OpenError::Open {
            path: scratch.to_owned(),
            source,
        })?;
    let migrated = match batch::applies(migrator) {
        true => batch::apply(&mut conn, migrator, stamp).await,
        false => migrator.run(&mut conn).await,
    };
    let migrated = match migrated {
        // WAL is kept in the file's header, so the store opens it in WAL.
        Ok(()) => sqlx::query("PRAGMA journal_mode = WAL")
            .execute(&mut conn)
            .await
            .map(drop)
            .map_err(MigrateError::from),
        Err(e) => Err(e),
    };
    // Closing checkpoints the write-ahead log into the file and removes it.
    let closed = conn.close().await;
    migrated.map_err(|source| OpenError::Migrate {
        path: scratch.to_owned(),
        source,
    })?;
    closed.map_err(|source| OpenError::Open {
        path: scratch.to_owned(),
        source,
    })
}

/// Syncs the finished `scratch` (so the name never shows a half-written
/// file) and links it at `path`, unless a database is there by now
/// (another process's, possibly in use: never replaced). Returns whether
/// the link is ours.
fn place(scratch: &Path, path: &Path) -> io::Result<bool> {
    if wal_path(scratch).exists() {
        // Its log was not checkpointed into the file: the file alone is not
        // the whole database.
        return Err(io::Error::other(
            "the new database's log was not written back",
        ));
    }
    File::open(scratch)?.sync_all()?;
    match std::fs::hard_link(scratch, path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(e),
    }
    // The new name is not synced here: SQLite syncs the directory when it
    // first syncs the write-ahead log it creates beside the file, before any
    // commit can be durable. A crash before that loses only the name of a
    // database holding nothing yet; the next start makes it again.
    Ok(true)
}

fn wal_path(db: &Path) -> PathBuf {
    let mut name = OsString::from(db.as_os_str());
    name.push("-wal");
    PathBuf::from(name)
}

/// Removes the scratch file and whatever SQLite left beside it.
pub(crate) fn remove_scratch(scratch: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = OsString::from(scratch.as_os_str());
        name.push(suffix);
        // Missing is the usual case; anything else only leaves a stray file.
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}
