//! Deleting a thread: its events, its row and its memories (with their tags
//! and full-text index rows) in one transaction.

use gantry_types::ThreadId;
use gantry_types::memory::MemoryScope;
use sqlx::{SqliteConnection, SqlitePool};

use super::db_error;
use crate::StoreError;
use crate::sql::{self, ThreadKey};

/// Deletes the thread `id`; false if nothing of it was stored. The last
/// cursor given is remembered first, so the cursors of the deleted events
/// (the newest ones, maybe) are never given again, even after a restart.
pub(super) async fn delete_thread(
    pool: &SqlitePool,
    writer: &super::WriteLock,
    id: &ThreadId,
) -> Result<bool, StoreError> {
    // Taken like a commit: no commit runs meanwhile.
    let _writer = writer.lock().await;
    let mut conn = pool.acquire().await.map_err(db_error("connect"))?;
    let deleted = async {
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut *conn)
            .await
            .map_err(db_error("begin"))?;
        let found = delete_rows(&mut conn, id).await?;
        sqlx::query("COMMIT")
            .execute(&mut *conn)
            .await
            .map_err(db_error("commit"))?;
        Ok(found)
    }
    .await;
    if deleted.is_err() {
        // As after a failed commit: never hand back a connection that may
        // still be inside the transaction.
        let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
        let _ = conn.close().await;
    }
    deleted
}

async fn delete_rows(conn: &mut SqliteConnection, id: &ThreadId) -> Result<bool, StoreError> {
    let (last,): (i64,) = sqlx::query_as(sql::LAST_CURSOR)
        .fetch_one(&mut *conn)
        .await
        .map_err(db_error("read the last cursor"))?;
    sqlx::query(sql::UPSERT_SETTING)
        .bind(sql::DELETED_CURSOR)
        .bind(last.to_string())
        .execute(&mut *conn)
        .await
        .map_err(db_error("remember the last cursor"))?;
    let scope = MemoryScope::Thread(id.clone()).key();
    sqlx::query(sql::DELETE_THREAD_FTS)
        .bind(&scope)
        .execute(&mut *conn)
        .await
        .map_err(db_error("delete the thread's memory index"))?;
    let mut found = false;
    for (statement, key) in sql::DELETE_THREAD {
        let value = match key {
            ThreadKey::Scope => scope.as_str(),
            ThreadKey::Id => id.as_str(),
        };
        let done = sqlx::query(statement)
            .bind(value)
            .execute(&mut *conn)
            .await
            .map_err(db_error("delete thread"))?;
        found |= matches!(key, ThreadKey::Id) && done.rows_affected() > 0;
    }
    Ok(found)
}
