//! Deleting a thread: its events, its row and its memories (with their
//! tags; the search vector is in the memory's row) in one transaction.

use gantry_types::ThreadId;

use super::PostgresStore;
use crate::StoreError;
use crate::shared::db_error;

/// Deletes the thread `id`; false if nothing of it was stored. Cursors come
/// from the `event_cursor` row, so none is given twice; the last one is
/// still remembered, so `last_cursor` reads the same as on SQLite.
pub(super) async fn delete_thread(
    store: &PostgresStore,
    id: &ThreadId,
) -> Result<bool, StoreError> {
    let mut tx = store.pool.begin().await.map_err(db_error("begin"))?;
    let (last,): (i64,) = sqlx::query_as("SELECT last FROM event_cursor WHERE id = 1")
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error("read the last cursor"))?;
    // The memories' search vectors go with their rows.
    let found = PostgresStore::forget_thread(&mut tx, id, last, None).await?;
    // Dropping `tx` on an error above rolls it back.
    tx.commit().await.map_err(db_error("commit"))?;
    Ok(found)
}
