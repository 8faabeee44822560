//! The write path: one transaction per commit, events in multi-row inserts.

use sqlx::{SqliteConnection, SqlitePool};
use tokio::sync::Mutex;

use super::db_error;
use crate::codec::{EventRow, ThreadRow, encode_event, encode_thread};
use crate::secrets::Sealer;
use crate::{Commit, StoreError, sql};

/// Applies `commit` atomically: on any error nothing of it is written.
pub(super) async fn commit(
    pool: &SqlitePool,
    writer: &Mutex<()>,
    sealer: &Sealer,
    commit: &Commit,
) -> Result<(), StoreError> {
    if commit.events.is_empty() && commit.threads.is_empty() {
        return Ok(());
    }
    // Encode before taking the lock so the transaction only does I/O.
    // Keys are sealed here, so no plaintext key reaches the file or its WAL.
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

    let _writer = writer.lock().await;
    let mut tx = pool.begin().await.map_err(db_error("begin"))?;
    let written = async {
        insert_events(&mut tx, events).await?;
        upsert_threads(&mut tx, threads).await
    }
    .await;
    match written {
        Ok(()) => tx.commit().await.map_err(db_error("commit")),
        Err(e) => {
            // The commit's error is the one worth reporting; a failed rollback
            // leaves nothing behind either, since the transaction never committed.
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}

/// Inserts rows in chunks of power-of-two sizes (64 + 32 + 4 for 100 rows), so
/// few statements run and only a handful of statement texts are ever prepared.
async fn insert_events(conn: &mut SqliteConnection, rows: Vec<EventRow>) -> Result<(), StoreError> {
    let mut left = rows.len();
    let mut rows = rows.into_iter();
    while left > 0 {
        let chunk = 1usize << left.min(sql::MAX_INSERT_ROWS).ilog2();
        let mut query = sqlx::query(sql::insert_events(chunk));
        for row in rows.by_ref().take(chunk) {
            query = query
                .bind(row.thread_id)
                .bind(row.seq)
                .bind(row.ts)
                .bind(row.turn_id)
                .bind(row.item_id)
                .bind(row.kind)
                .bind(row.payload);
        }
        query
            .execute(&mut *conn)
            .await
            .map_err(db_error("insert events"))?;
        left -= chunk;
    }
    Ok(())
}

/// Upserts thread rows one by one: a thread may appear twice in a commit
/// (the last one wins), which a single multi-row upsert would reject on PostgreSQL.
async fn upsert_threads(
    conn: &mut SqliteConnection,
    rows: Vec<ThreadRow>,
) -> Result<(), StoreError> {
    for row in rows {
        sqlx::query(sql::UPSERT_THREAD)
            .bind(row.id)
            .bind(row.created_at)
            .bind(row.updated_at)
            .bind(row.archived)
            .bind(row.status)
            .bind(row.data)
            .execute(&mut *conn)
            .await
            .map_err(db_error("upsert thread"))?;
    }
    Ok(())
}
