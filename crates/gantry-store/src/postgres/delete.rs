//! Deleting a thread: its events, its row and its memories (with their
//! tags; the search vector is in the memory's row) in one transaction.

use gantry_types::ThreadId;
use gantry_types::memory::MemoryScope;
use sqlx::postgres::PgPool;

use super::db_error;
use crate::StoreError;
use crate::sql::{self, ThreadKey};

/// Deletes the thread `id`; false if nothing of it was stored. Cursors come
/// from the `event_cursor` row, so none is given twice; the last one is
/// still remembered, so `last_cursor` reads the same as on SQLite.
pub(super) async fn delete_thread(pool: &PgPool, id: &ThreadId) -> Result<bool, StoreError> {
    let mut tx = pool.begin().await.map_err(db_error("begin"))?;
    let (last,): (i64,) = sqlx::query_as("SELECT last FROM event_cursor WHERE id = 1")
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error("read the last cursor"))?;
    sqlx::query(sql::UPSERT_SETTING)
        .bind(sql::DELETED_CURSOR)
        .bind(last.to_string())
        .execute(&mut *tx)
        .await
        .map_err(db_error("remember the last cursor"))?;
    let scope = MemoryScope::Thread(id.clone()).key();
    let mut found = false;
    for (statement, key) in sql::DELETE_THREAD {
        let value = match key {
            ThreadKey::Scope => scope.as_str(),
            ThreadKey::Id => id.as_str(),
        };
        let done = sqlx::query(statement)
            .bind(value)
            .execute(&mut *tx)
            .await
            .map_err(db_error("delete thread"))?;
        found |= matches!(key, ThreadKey::Id) && done.rows_affected() > 0;
    }
    // Dropping `tx` on an error above rolls it back.
    tx.commit().await.map_err(db_error("commit"))?;
    Ok(found)
}
