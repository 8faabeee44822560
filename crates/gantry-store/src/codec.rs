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
    pub pos: i64,
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
        pos: 0,
    })
}

/// How deeply stored JSON may nest. Every parser that lets outside JSON in
/// (a model's tool-call arguments, HTTP bodies) stops at serde_json's 128,
/// and an event wraps such a value in a few levels more: anything written
/// is read back. serde_json's own limit (128) would refuse those rows.
pub(crate) const MAX_STORED_DEPTH: usize = 256;

/// Parses stored JSON with [`MAX_STORED_DEPTH`] instead of serde_json's 128.
pub(crate) fn from_stored_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let depth = json_depth(text);
    if depth > MAX_STORED_DEPTH {
        return Err(format!(
            "nested {depth} deep, more than the {MAX_STORED_DEPTH} levels a store reads"
        ));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    // The depth was checked above, so recursion stays bounded (a few KiB of
    // stack per level at most).
    de.disable_recursion_limit();
    let value = T::deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(value)
}

/// The deepest nesting of arrays and objects in `text` (strings skipped);
/// what the parser would recurse to, computed without recursing.
pub(crate) fn json_depth(text: &str) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Rebuilds an event from its row; a bad seq or payload is [`StoreError::Corrupt`].
pub(crate) fn decode_event(
    thread_id: ThreadId,
    seq: i64,
    ts: i64,
    turn_id: Option<String>,
    item_id: Option<String>,
    payload: &str,
    pos: Option<i64>,
) -> Result<Event, StoreError> {
    let seq = u64::try_from(seq)
        .map_err(|_| StoreError::Corrupt(format!("thread {thread_id}: negative seq {seq}")))?;
    let payload: EventPayload = from_stored_json(payload)
        .map_err(|e| StoreError::Corrupt(format!("thread {thread_id} seq {seq}: payload: {e}")))?;
    Ok(Event {
        thread_id,
        seq,
        ts,
        turn_id: turn_id.map(TurnId),
        item_id: item_id.map(ItemId),
        payload,
        // Rows are given a position when committed; none is negative.
        cursor: pos.and_then(|p| u64::try_from(p).ok()).unwrap_or(0),
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
    let thread: Thread = from_stored_json(data)
        .map_err(|e| StoreError::Corrupt(format!("thread {id}: data: {e}")))?;
    if thread.id.as_str() != id {
        return Err(StoreError::Corrupt(format!(
            "thread {id}: data holds thread {}",
            thread.id
        )));
    }
    Ok(thread)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gantry_types::{Item, ItemKind, ItemStatus};
    use proptest::prelude::*;
    use serde_json::{Value, json};

    /// A value nested `depth` levels deep, as a model's arguments may be.
    fn nested(depth: usize) -> Value {
        (1..depth).fold(json!({}), |inner, _| json!({ "a": inner }))
    }

    fn tool_call_event(arguments: Value) -> Event {
        Event {
            thread_id: ThreadId("t".into()),
            seq: 7,
            ts: 1,
            turn_id: Some(TurnId("u".into())),
            item_id: Some(ItemId("i".into())),
            payload: EventPayload::ItemCompleted {
                item: Item {
                    id: ItemId("i".into()),
                    turn_id: TurnId("u".into()),
                    round: 1,
                    status: ItemStatus::Failed,
                    started_at: 1,
                    completed_at: Some(2),
                    kind: ItemKind::ToolCall {
                        name: "x".into(),
                        arguments,
                        result: None,
                        error: None,
                    },
                    tool_call: None,
                },
            },
            cursor: 7,
        }
    }

    fn round_trip(event: &Event) -> Result<Event, StoreError> {
        let row = encode_event(event)?;
        decode_event(
            ThreadId(row.thread_id),
            row.seq,
            row.ts,
            row.turn_id,
            row.item_id,
            &row.payload,
            Some(7),
        )
    }

    #[test]
    fn arguments_as_deep_as_any_parser_accepts_are_read_back() {
        // serde_json parses a model's arguments up to 127 levels; stored in
        // an event they nest deeper than serde_json reads by default.
        let text = serde_json::to_string(&nested(127)).unwrap();
        let arguments: Value = serde_json::from_str(&text).unwrap();
        let event = tool_call_event(arguments);
        assert_eq!(round_trip(&event).unwrap(), event);
    }

    #[test]
    fn depth_ignores_brackets_inside_strings() {
        assert_eq!(json_depth(r#"{"a":"[[[{{\"]]"}"#), 1);
        assert_eq!(json_depth(r#"[[1],[[2]]]"#), 3);
        assert_eq!(json_depth("12"), 0);
    }

    #[test]
    fn json_deeper_than_the_store_reads_is_a_corrupt_row_not_a_crash() {
        let text = "[".repeat(100_000);
        let err = decode_event(ThreadId("t".into()), 1, 0, None, None, &text, None).unwrap_err();
        assert!(
            matches!(err, StoreError::Corrupt(ref m) if m.contains("deep")),
            "{err}"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever bytes a row holds, reading it is an event or a corrupt
        /// row, never a panic.
        #[test]
        fn any_stored_payload_decodes_or_is_corrupt(payload in ".{0,256}", seq in any::<i64>()) {
            let _ = decode_event(ThreadId("t".into()), seq, 0, None, None, &payload, Some(seq));
            let _ = decode_thread("t", &payload);
        }

        /// Structurally plausible payloads: JSON objects with arbitrary
        /// nesting and keys, some of them real event tags.
        #[test]
        fn json_shaped_payloads_decode_or_are_corrupt(
            kind in prop::sample::select(vec!["thread_created", "item_started", "item_completed", "turn_completed", "nope"]),
            depth in 0usize..300,
        ) {
            let payload = format!(r#"{{"type":"{kind}","item":{}}}"#, "[".repeat(depth) + &"]".repeat(depth));
            let _ = decode_event(ThreadId("t".into()), 1, 0, None, None, &payload, None);
        }
    }
}
