//! The write path: one statement per commit (one round trip), its cursors
//! taken from the `event_cursor` row, rows passed as arrays.
//!
//! Taking the cursors locks that row until the statement commits, so commits
//! from any number of processes run one after another: each starts from the
//! cursor the previous one ended on (dense) and becomes visible only after
//! it (in order). A reader therefore never sees cursor N + 1 without N,
//! which is what lets an all-threads feed resume from a cursor.

use super::PostgresStore;
use crate::codec::{EventRow, ThreadRow};
use crate::shared::{db_error, sealed_rows};
use crate::{Commit, Store, StoreError};

/// The whole commit in one statement, so in one round trip and one
/// implicit transaction: take `cardinality($1)` cursors from the counter
/// row (locking it until the statement commits), insert the events from
/// arrays numbered from the first of them, upsert the thread rows, and
/// return the last cursor. Any failure (a duplicate seq) rolls all of it
/// back, cursors included.
const COMMIT: &str = "WITH cursors AS (\
     UPDATE event_cursor SET last = last + cardinality($1::text[]) WHERE id = 1 RETURNING last), \
     new_events AS (\
     INSERT INTO events (thread_id, seq, ts, turn_id, item_id, kind, payload, pos) \
     SELECT e.thread_id, e.seq, e.ts, e.turn_id, e.item_id, e.kind, e.payload, \
     cursors.last - cardinality($1::text[]) + e.n \
     FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], \
     $7::text[]) WITH ORDINALITY AS e (thread_id, seq, ts, turn_id, item_id, kind, payload, n), \
     cursors), \
     new_threads AS (\
     INSERT INTO threads (id, created_at, updated_at, archived, status, data) \
     SELECT * FROM unnest($8::text[], $9::bigint[], $10::bigint[], $11::boolean[], \
     $12::text[], $13::text[]) \
     ON CONFLICT (id) DO UPDATE SET \
     created_at = excluded.created_at, updated_at = excluded.updated_at, \
     archived = excluded.archived, status = excluded.status, data = excluded.data) \
     SELECT last FROM cursors";

/// Applies `commit` atomically: on any error nothing of it is written.
/// Returns the cursor of the last event stored.
pub(super) async fn commit(store: &PostgresStore, commit: &Commit) -> Result<u64, StoreError> {
    // Sealed first: the statement holds the cursor row only for I/O.
    let (events, threads) = sealed_rows(commit, &store.sealer)?;
    if events.is_empty() && threads.is_empty() {
        return store.last_cursor().await;
    }
    let events = EventColumns::from(events);
    let threads = ThreadColumns::from(last_of_each(threads));
    let (end,): (i64,) = sqlx::query_as(COMMIT)
        .bind(events.thread_id)
        .bind(events.seq)
        .bind(events.ts)
        .bind(events.turn_id)
        .bind(events.item_id)
        .bind(events.kind)
        .bind(events.payload)
        .bind(threads.id)
        .bind(threads.created_at)
        .bind(threads.updated_at)
        .bind(threads.archived)
        .bind(threads.status)
        .bind(threads.data)
        .fetch_one(&store.pool)
        .await
        .map_err(db_error("commit"))?;
    Ok(u64::try_from(end).unwrap_or(0))
}

/// A thread may appear more than once in a commit, the last one winning;
/// one upsert statement may touch a row only once, so only the last is kept.
fn last_of_each(rows: Vec<ThreadRow>) -> Vec<ThreadRow> {
    let mut kept: Vec<ThreadRow> = Vec::with_capacity(rows.len());
    for row in rows.into_iter().rev() {
        if !kept.iter().any(|k| k.id == row.id) {
            kept.push(row);
        }
    }
    kept.reverse();
    kept
}

/// Event rows as one array per column, bound to [`COMMIT`].
#[derive(Default)]
struct EventColumns {
    thread_id: Vec<String>,
    seq: Vec<i64>,
    ts: Vec<i64>,
    turn_id: Vec<Option<String>>,
    item_id: Vec<Option<String>>,
    kind: Vec<&'static str>,
    payload: Vec<String>,
}

impl From<Vec<EventRow>> for EventColumns {
    fn from(rows: Vec<EventRow>) -> Self {
        let mut c = Self::default();
        for row in rows {
            c.thread_id.push(row.thread_id);
            c.seq.push(row.seq);
            c.ts.push(row.ts);
            c.turn_id.push(row.turn_id);
            c.item_id.push(row.item_id);
            c.kind.push(row.kind);
            c.payload.push(row.payload);
        }
        c
    }
}

/// Thread rows as one array per column, bound to [`COMMIT`].
#[derive(Default)]
struct ThreadColumns {
    id: Vec<String>,
    created_at: Vec<i64>,
    updated_at: Vec<i64>,
    archived: Vec<bool>,
    status: Vec<&'static str>,
    data: Vec<String>,
}

impl From<Vec<ThreadRow>> for ThreadColumns {
    fn from(rows: Vec<ThreadRow>) -> Self {
        let mut c = Self::default();
        for row in rows {
            c.id.push(row.id);
            c.created_at.push(row.created_at);
            c.updated_at.push(row.updated_at);
            c.archived.push(row.archived);
            c.status.push(row.status);
            c.data.push(row.data);
        }
        c
    }
}
