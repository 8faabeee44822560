//! Mapping between domain values and table columns, shared by the SQL stores
//! (and the bounds checks by the memory store, so both reject the same input).

use gantry_types::{Event, EventPayload, ItemId, Thread, ThreadId, ThreadStatus, TurnId};

use crate::StoreError;

/// The `status` column value of a thread status.
pub(crate) fn status_name(status: ThreadStatus) -> &'static str {
    // Exhaustive on purpose: a new status must choose its stored name here.
    match status {
        ThreadStatus::Idle => "idle",
        ThreadStatus::Running => "running",
        ThreadStatus::Paused => "paused",
        ThreadStatus::Failed => "failed",
    }
}

/// A seq as a BIGINT; seqs above `i64::MAX` cannot be stored.
pub(crate) fn seq_to_db(thread: &ThreadId, seq: u64) -> Result<i64, StoreError> {
    i64::try_from(seq)
        .map_err(|_| StoreError::Database(format!("thread {thread}: seq {seq} exceeds BIGINT")))
}

/// The columns of one `events` row.
pub(crate) struct EventRow {
    pub thread_id: String,
    pub seq: i64,
    pub ts: i64,
    pub turn_id: Option<String>,
    pub item_id: Option<String>,
    pub kind: &'static str,
    pub payload: String,
}

/// Encodes an event into its row.
pub(crate) fn encode_event(event: &Event) -> Result<EventRow, StoreError> {
    let seq = seq_to_db(&event.thread_id, event.seq)?;
    let payload = serde_json::to_string(&event.payload).map_err(|e| {
        StoreError::Database(format!(
            "thread {} seq {}: cannot encode payload: {e}",
            event.thread_id, event.seq
        ))
    })?;
    Ok(EventRow {
        thread_id: event.thread_id.0.clone(),
        seq,
        ts: event.ts,
        turn_id: event.turn_id.as_ref().map(|t| t.0.clone()),
        item_id: event.item_id.as_ref().map(|i| i.0.clone()),
        kind: event.payload.name(),
        payload,
    })
}

/// Rebuilds an event from its row; a bad seq or payload is [`StoreError::Corrupt`].
pub(crate) fn decode_event(
    thread_id: ThreadId,
    seq: i64,
    ts: i64,
    turn_id: Option<String>,
    item_id: Option<String>,
    payload: &str,
) -> Result<Event, StoreError> {
    let seq = u64::try_from(seq)
        .map_err(|_| StoreError::Corrupt(format!("thread {thread_id}: negative seq {seq}")))?;
    let payload: EventPayload = serde_json::from_str(payload)
        .map_err(|e| StoreError::Corrupt(format!("thread {thread_id} seq {seq}: payload: {e}")))?;
    Ok(Event {
        thread_id,
        seq,
        ts,
        turn_id: turn_id.map(TurnId),
        item_id: item_id.map(ItemId),
        payload,
    })
}

/// The columns of one `threads` row.
pub(crate) struct ThreadRow {
    pub id: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub archived: bool,
    pub status: &'static str,
    pub data: String,
}

/// Encodes a thread into its row.
pub(crate) fn encode_thread(thread: &Thread) -> Result<ThreadRow, StoreError> {
    let data = serde_json::to_string(thread)
        .map_err(|e| StoreError::Database(format!("thread {}: cannot encode: {e}", thread.id)))?;
    Ok(ThreadRow {
        id: thread.id.0.clone(),
        created_at: thread.created_at,
        updated_at: thread.updated_at,
        archived: thread.archived,
        status: status_name(thread.status),
        data,
    })
}

/// Rebuilds a thread from its row; bad JSON, or JSON of another thread, is
/// [`StoreError::Corrupt`].
pub(crate) fn decode_thread(id: &str, data: &str) -> Result<Thread, StoreError> {
    let thread: Thread = serde_json::from_str(data)
        .map_err(|e| StoreError::Corrupt(format!("thread {id}: data: {e}")))?;
    if thread.id.as_str() != id {
        return Err(StoreError::Corrupt(format!(
            "thread {id}: data holds thread {}",
            thread.id
        )));
    }
    Ok(thread)
}
