//! `GET /v1/threads/{id}/events`: a thread's updates over Server-Sent
//! Events. Each event is `id: <seq>`, `event: <kind>`, and JSON data
//! `{"seq", "ts", "kind", "data"}`; a `Last-Event-ID` header resumes after
//! that seq.

use std::convert::Infallible;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::StreamExt;

use crate::ControlPlane;
use crate::error::ApiError;
use crate::store::ThreadUpdateRecord;

/// The header a reconnecting `EventSource` sends.
const LAST_EVENT_ID: &str = "last-event-id";

/// Follows a thread from after `Last-Event-ID` (from the start without it).
pub(super) async fn follow(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    let after = last_event_id(&headers)?;
    cp.thread_record(&id).await?;
    let events = cp
        .follow(id, after)
        .map(|entry| Ok::<_, Infallible>(event(&entry)));
    // The connection ends with the stream: a browser leaving the page would
    // otherwise keep the socket (draining a body that never ends) and soon
    // run out of sockets to this host (the dashboard reloaded a few times).
    Ok((
        [(header::CONNECTION, "close")],
        Sse::new(events).keep_alive(KeepAlive::default()),
    ))
}

/// The seq to resume after: `Last-Event-ID`, else 0.
fn last_event_id(headers: &HeaderMap) -> Result<i64, ApiError> {
    let Some(value) = headers.get(LAST_EVENT_ID) else {
        return Ok(0);
    };
    let bad = |v: &str| {
        ApiError::BadRequest(format!(
            "Last-Event-ID: {v:?} is not a seq (a non-negative integer)"
        ))
    };
    let text = value.to_str().map_err(|_| bad("<not text>"))?.trim();
    if text.is_empty() {
        return Ok(0);
    }
    text.parse::<i64>()
        .ok()
        .filter(|seq| *seq >= 0)
        .ok_or_else(|| bad(text))
}

/// The SSE event of one log entry.
fn event(entry: &ThreadUpdateRecord) -> Event {
    // The stored data is our own JSON; should it not parse, it goes as a string.
    let data = serde_json::from_str(&entry.data)
        .unwrap_or_else(|_| serde_json::Value::String(entry.data.clone()));
    let body = serde_json::json!({
        "seq": entry.seq,
        "ts": entry.ts,
        "kind": entry.kind,
        "data": data,
    });
    Event::default()
        .id(entry.seq.to_string())
        .event(&entry.kind)
        .data(body.to_string())
}
