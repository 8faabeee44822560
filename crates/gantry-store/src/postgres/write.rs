//! The write path: one transaction per commit, its cursors taken from the
//! `event_cursor` row, events in multi-row inserts.
//!
//! Taking the cursors locks that row until the transaction ends, so commits
//! from any number of processes run one after another: each starts from the
//! cursor the previous one ended on (dense) and becomes visible only after
//! it (in order). A reader therefore never sees cursor N + 1 without N,
//! which is what lets an all-threads feed resume from a cursor.

use sqlx::{PgConnection, PgPool};

use super::db_error;
use crate::codec::{EventRow, ThreadRow, encode_event, encode_thread};
use crate::secrets::Sealer;
use crate::{Commit, StoreError, sql};

/// Takes `$1` cursors: returns the last of them (the first is that minus
/// `$1` plus one), holding the row's lock until commit or rollback.
const TAKE_CURSORS: &str = "UPDATE event_cursor SET last = last + $1 WHERE id = 1 RETURNING last";

/// Applies `commit` atomically: on any error nothing of it is written.
/// Returns the cursor of the last event stored.
pub(super) async fn commit(
    pool: &PgPool,
    sealer: &Sealer,
    commit: &Commit,
) -> Result<u64, StoreError> {
    // Encode and seal before the transaction, so it holds the cursor row
    // only for I/O.
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
    if events.is_empty() && threads.is_empty() {
        return super::read::last_cursor(pool).await;
    }
    let count = i64::try_from(events.len())
        .map_err(|_| StoreError::Database("too many events in one commit".into()))?;

    let mut tx = pool.begin().await.map_err(db_error("begin"))?;
    let written = async {
        let end = if events.is_empty() {
            // Only thread rows: no cursors taken, no lock on the counter.
            let (last,): (i64,) = sqlx::query_as(sql::LAST_CURSOR)
                .fetch_one(&mut *tx)
                .await
                .map_err(db_error("read the last cursor"))?;
            last
        } else {
            let (end,): (i64,) = sqlx::query_as(TAKE_CURSORS)
                .bind(count)
                .fetch_one(&mut *tx)
                .await
                .map_err(db_error("take commit cursors"))?;
            let mut events = events;
            for (row, pos) in events.iter_mut().zip(end - count + 1..) {
                row.pos = pos;
            }
            insert_events(&mut tx, events).await?;
            end
        };
        upsert_threads(&mut tx, threads).await?;
        Ok::<_, StoreError>(end)
    }
    .await;
    match written {
        Ok(end) => {
            tx.commit().await.map_err(db_error("commit"))?;
            Ok(u64::try_from(end).unwrap_or(0))
        }
        Err(e) => {
            // Gives the cursors back: the next commit takes the same ones.
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}

/// Inserts rows in chunks of power-of-two sizes, as the SQLite store does,
/// so only a handful of statement texts are ever prepared.
async fn insert_events(conn: &mut PgConnection, rows: Vec<EventRow>) -> Result<(), StoreError> {
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
/// (the last one wins), which one multi-row upsert would reject.
async fn upsert_threads(conn: &mut PgConnection, rows: Vec<ThreadRow>) -> Result<(), StoreError> {
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
