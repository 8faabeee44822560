//! The read paths; each is one query on any pooled connection.

use gantry_types::{Event, Thread, ThreadId};
use sqlx::PgPool;

use super::db_error;
use crate::codec::{decode_event, decode_thread, status_name};
use crate::page::{check_cursor, page_limit};
use crate::secrets::Sealer;
use crate::{StoreError, ThreadPage, ThreadQuery, sql};

/// Columns of `THREAD_EVENTS`: seq, ts, turn_id, item_id, payload, pos.
type EventCols = (
    i64,
    i64,
    Option<String>,
    Option<String>,
    String,
    Option<i64>,
);
/// Columns of `EVENTS_AFTER`: thread_id, then those of [`EventCols`].
type AllEventCols = (
    String,
    i64,
    i64,
    Option<String>,
    Option<String>,
    String,
    Option<i64>,
);

/// A seq bound as a BIGINT; `None` when it is above every storable seq.
fn from_seq_db(from_seq: u64) -> Option<i64> {
    i64::try_from(from_seq).ok()
}

/// One thread's events with `seq >= from_seq`, in seq order.
pub(super) async fn events(
    pool: &PgPool,
    sealer: &Sealer,
    thread: &ThreadId,
    from_seq: u64,
) -> Result<Vec<Event>, StoreError> {
    let Some(from) = from_seq_db(from_seq) else {
        return Ok(Vec::new());
    };
    let rows: Vec<EventCols> = sqlx::query_as(sql::THREAD_EVENTS)
        .bind(thread.as_str())
        .bind(from)
        .fetch_all(pool)
        .await
        .map_err(db_error("read events"))?;
    rows.into_iter()
        .map(|(seq, ts, turn, item, payload, pos)| {
            decode_event(
                thread.clone(),
                seq,
                ts,
                turn,
                item,
                &sealer.open_json(&payload),
                pos,
            )
        })
        .collect()
}

/// A page of every thread's events after cursor `after`, in commit order;
/// unreadable rows are reported and left out.
pub(super) async fn events_after(
    pool: &PgPool,
    sealer: &Sealer,
    after: u64,
    limit: usize,
) -> Result<Vec<Event>, StoreError> {
    let Ok(after) = i64::try_from(after) else {
        return Ok(Vec::new());
    };
    let rows: Vec<AllEventCols> = sqlx::query_as(sql::EVENTS_AFTER)
        .bind(after)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(pool)
        .await
        .map_err(db_error("read events"))?;
    Ok(rows
        .into_iter()
        .filter_map(|(thread, seq, ts, turn, item, payload, pos)| {
            let payload = sealer.open_json(&payload);
            match decode_event(ThreadId(thread), seq, ts, turn, item, &payload, pos) {
                Ok(event) => Some(event),
                Err(e) => {
                    tracing::error!(error = %e, "leaving an unreadable event out of a replay");
                    None
                }
            }
        })
        .collect())
}

/// The cursor of the last event committed.
pub(super) async fn last_cursor(pool: &PgPool) -> Result<u64, StoreError> {
    let (last,): (i64,) = sqlx::query_as(sql::LAST_CURSOR)
        .fetch_one(pool)
        .await
        .map_err(db_error("read the last cursor"))?;
    Ok(u64::try_from(last).unwrap_or(0))
}

/// A thread's row, if stored.
pub(super) async fn thread(
    pool: &PgPool,
    sealer: &Sealer,
    id: &ThreadId,
) -> Result<Option<Thread>, StoreError> {
    let row: Option<(String, String)> = sqlx::query_as(sql::THREAD)
        .bind(id.as_str())
        .fetch_optional(pool)
        .await
        .map_err(db_error("read thread"))?;
    row.map(|(id, data)| decode_thread(&id, &sealer.open_json(&data)))
        .transpose()
}

/// A page of threads, newest first; fetches one extra row to know if more exist.
pub(super) async fn list_threads(
    pool: &PgPool,
    sealer: &Sealer,
    query: &ThreadQuery,
) -> Result<ThreadPage, StoreError> {
    let limit = page_limit(query.limit);
    let cursor = query.cursor.as_deref().map(check_cursor).transpose()?;
    // At most MAX_PAGE_SIZE + 1, so the conversion cannot fail.
    let fetch = i64::try_from(limit + 1).unwrap_or(i64::MAX);
    let select = match (query.archived, cursor) {
        (None, None) => sqlx::query_as(sql::LIST_ALL).bind(fetch),
        (None, Some(after)) => sqlx::query_as(sql::LIST_ALL_AFTER).bind(after).bind(fetch),
        (Some(archived), None) => sqlx::query_as(sql::LIST_ARCHIVED)
            .bind(archived)
            .bind(fetch),
        (Some(archived), Some(after)) => sqlx::query_as(sql::LIST_ARCHIVED_AFTER)
            .bind(archived)
            .bind(after)
            .bind(fetch),
    };
    let rows: Vec<(String, String)> = select
        .fetch_all(pool)
        .await
        .map_err(db_error("list threads"))?;
    let more = rows.len() > limit;
    let page = &rows[..rows.len().min(limit)];
    // A row that cannot be read is left out and reported: one bad thread
    // must not hide every other from a listing.
    let threads = page
        .iter()
        .filter_map(
            |(id, data)| match decode_thread(id, &sealer.open_json(data)) {
                Ok(thread) => Some(thread),
                Err(e) => {
                    tracing::error!(thread = %id, error = %e, "leaving an unreadable thread out of a listing");
                    None
                }
            },
        )
        .collect();
    let next_cursor = if more {
        page.last().map(|(id, _)| id.clone())
    } else {
        None
    };
    Ok(ThreadPage {
        threads,
        next_cursor,
    })
}

/// Ids of threads whose stored status is `running`.
pub(super) async fn running_threads(pool: &PgPool) -> Result<Vec<ThreadId>, StoreError> {
    let ids: Vec<(String,)> = sqlx::query_as(sql::THREADS_WITH_STATUS)
        .bind(status_name(gantry_types::ThreadStatus::Running))
        .fetch_all(pool)
        .await
        .map_err(db_error("running threads"))?;
    Ok(ids.into_iter().map(|(id,)| ThreadId(id)).collect())
}
