//! Deleting a thread: its events, its row and its memories (with their tags
//! and full-text index rows) in one transaction.

use gantry_types::ThreadId;
use sqlx::SqliteConnection;

use super::SqliteStore;
use crate::shared::db_error;
use crate::{StoreError, sql};

/// Deletes the thread `id`; false if nothing of it was stored. The last
/// cursor given is remembered first, so the cursors of the deleted events
/// (the newest ones, maybe) are never given again, even after a restart.
pub(super) async fn delete_thread(store: &SqliteStore, id: &ThreadId) -> Result<bool, StoreError> {
    // Taken like a commit: no commit runs meanwhile.
    let mut writer = store.lock_writes().await;
    let deleted = async {
        let conn = writer.conn(&store.pool).await?;
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut *conn)
            .await
            .map_err(db_error("begin"))?;
        let found = delete_rows(conn, id).await?;
        sqlx::query("COMMIT")
            .execute(&mut *conn)
            .await
            .map_err(db_error("commit"))?;
        Ok(found)
    }
    .await;
    if deleted.is_err() {
        // As after a failed commit: never reuse a connection that may still
        // be inside the transaction.
        writer.discard().await;
    }
    deleted
}

/// The thread's rows, its memories' FTS5 rows among them.
async fn delete_rows(conn: &mut SqliteConnection, id: &ThreadId) -> Result<bool, StoreError> {
    let (last,): (i64,) = sqlx::query_as(sql::LAST_CURSOR)
        .fetch_one(&mut *conn)
        .await
        .map_err(db_error("read the last cursor"))?;
    SqliteStore::forget_thread(conn, id, last, Some(sql::DELETE_THREAD_FTS)).await
}
