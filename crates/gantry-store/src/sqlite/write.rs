//! The write path: one transaction per commit, events in multi-row inserts.

use sqlx::SqliteConnection;

use super::SqliteStore;
use crate::codec::{EventRow, ThreadRow};
use crate::shared::{db_error, sealed_rows};
use crate::{Commit, Store, StoreError, sql};

/// Applies `commit` atomically: on any error nothing of it is written.
/// Returns the cursor of the last event stored.
pub(super) async fn commit(store: &SqliteStore, commit: &Commit) -> Result<u64, StoreError> {
    let (events, threads) = sealed_rows(commit, &store.sealer)?;
    let mut writer = store.lock_writes().await;
    let base = match writer.last {
        Some(cursor) => cursor,
        None => store.last_cursor().await?,
    };
    if events.is_empty() && threads.is_empty() {
        writer.last = Some(base);
        return Ok(base);
    }
    let end = base + events.len() as u64;
    let mut events = events;
    for (row, pos) in events.iter_mut().zip(base + 1..) {
        row.pos = i64::try_from(pos)
            .map_err(|_| StoreError::Database(format!("commit cursor {pos} exceeds BIGINT")))?;
    }
    let written = async {
        let conn = writer.conn(&store.pool).await?;
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut *conn)
            .await
            .map_err(db_error("begin"))?;
        insert_events(conn, events).await?;
        upsert_threads(conn, threads).await?;
        sqlx::query("COMMIT")
            .execute(&mut *conn)
            .await
            .map_err(db_error("commit"))
    }
    .await;
    match written {
        Ok(_) => {
            writer.last = Some(end);
            Ok(end)
        }
        Err(e) => {
            // A failed write (a full disk: SQLITE_FULL) can leave SQLite's
            // transaction open on the connection. Kept, the next commit
            // would run inside it and "succeed" without ever committing, and
            // every other connection would see "database is locked". So:
            // roll back, and never reuse the connection.
            writer.discard().await;
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
                .bind(row.payload)
                .bind(row.pos);
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
