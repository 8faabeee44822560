//! The Rust both SQL stores run unchanged. sqlx types a query by its
//! database, so one function cannot serve a SQLite and a PostgreSQL pool
//! without a wall of trait bounds; the queries are written once here as
//! macros, expanded in each backend's `mod.rs`, and what they read is
//! turned into types by plain functions (`rows.rs`). The control plane's
//! store shares its code the same way (its `store/shared.rs`).
//!
//! The expansion site provides: the store's fields `pool` and `sealer`;
//! `async fn lock_writes(&self)`, held across every write (SQLite's
//! in-process writer lock; nothing on PostgreSQL, which orders writers
//! itself); the type aliases `Db` (its `sqlx::Database`) and `Conn` (its
//! connection); the modules `write` (`commit`), `delete`
//! (`delete_thread`) and `compact` (`compact`), which differ; and its full-text index (see
//! `impl_memory_storage!`).

#[macro_use]
mod jobs;
#[macro_use]
pub(crate) mod memories;
pub(crate) mod rows;
#[macro_use]
mod store;

use crate::codec::{EventRow, ThreadRow, encode_event, encode_thread};
use crate::secrets::Sealer;
use crate::sqlite::LOG_FORMAT_VERSION;
use crate::{Commit, StoreError};

/// Maps a driver error, naming the operation that failed.
pub(crate) fn db_error(what: &str) -> impl FnOnce(sqlx::Error) -> StoreError + '_ {
    move |e| StoreError::Database(format!("{what}: {e}"))
}

/// Refuses a database whose log a newer Gantry wrote in a format this one
/// does not know (`stored`: its `log_format_version` setting): reading it
/// could misread events, writing could mix formats.
pub(crate) fn check_log_format(stored: Option<&str>, shown: &str) -> Result<(), StoreError> {
    let version = stored.and_then(|v| v.parse::<u32>().ok()).unwrap_or(0);
    if version > LOG_FORMAT_VERSION {
        return Err(StoreError::Database(format!(
            "{shown}: its event log has format version {version}, newer than this Gantry reads ({LOG_FORMAT_VERSION}); use a newer Gantry"
        )));
    }
    Ok(())
}

/// A commit's rows, encoded and sealed before any write begins: no
/// plaintext key reaches the database (nor SQLite's WAL), and the write
/// only does I/O.
pub(crate) fn sealed_rows(
    commit: &Commit,
    sealer: &Sealer,
) -> Result<(Vec<EventRow>, Vec<ThreadRow>), StoreError> {
    let events = commit
        .events
        .iter()
        .map(|e| {
            let mut row = encode_event(e)?;
            row.payload = sealer.seal_json(row.payload)?;
            Ok(row)
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let threads = commit
        .threads
        .iter()
        .map(|t| {
            let mut row = encode_thread(t)?;
            row.data = sealer.seal_json(row.data)?;
            Ok(row)
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok((events, threads))
}
