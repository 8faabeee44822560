//! `GET /v1/threads/{id}/events`: a thread's updates over Server-Sent
//! Events. Each event is `id: <seq>`, `event: <kind>`, and JSON data
//! `{"seq", "ts", "kind", "data"}`; a `Last-Event-ID` header resumes after
//! that seq.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::response::sse::Event;
use futures_util::StreamExt;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::ErrorBody;
use super::sse;
use crate::ControlPlane;
use crate::error::ApiError;
use crate::store::ThreadUpdateRecord;

/// The data of one event of a thread's stream; its SSE `id:` is `seq` and
/// its `event:` is `kind`.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct ThreadEvent {
    /// Dense per thread, from 1.
    pub seq: i64,
    /// When the control plane applied it (ms since the epoch).
    pub ts: i64,
    /// What changed: `thread`, `turn`, `item`, `error` or `usage`.
    pub kind: String,
    /// thread: a Thread; turn: a Turn; item: an Item; error:
    /// `{request_id, error}`; usage: the thread's token usage.
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

impl ThreadEvent {
    /// The event of one log entry.
    pub(super) fn of(entry: ThreadUpdateRecord) -> Self {
        Self {
            seq: entry.seq,
            ts: entry.ts,
            kind: entry.kind,
            data: data(entry.data),
        }
    }
}

/// A log entry's JSON. The stored data is our own JSON; should it not
/// parse, it goes as a string.
pub(super) fn data(stored: String) -> serde_json::Value {
    serde_json::from_str(&stored).unwrap_or(serde_json::Value::String(stored))
}

/// Follow a thread's updates live (Server-Sent Events).
#[utoipa::path(get, path = "/v1/threads/{id}/events", tag = "events",
    params(("id" = String, Path, description = "Thread id"),
        ("Last-Event-ID" = Option<i64>, Header, description = "Resume after this seq: the missed updates are replayed, then live ones follow, with no gap and no duplicate")),
    responses(
        (status = 200, description = "Server-Sent Events: `id:` the seq, `event:` the kind, `data:` a ThreadEvent; a comment at once and every 15 s", content_type = "text/event-stream", body = ThreadEvent),
        (status = 400, description = "A bad Last-Event-ID", body = ErrorBody),
        (status = 404, description = "No such thread", body = ErrorBody)))]
pub(super) async fn follow(
    State(cp): State<ControlPlane>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let after = after_seq(&headers)?;
    cp.thread_record(&id).await?;
    let events = cp.follow(id, after).map(|entry| {
        let event = ThreadEvent::of(entry);
        Event::default()
            .id(event.seq.to_string())
            .event(&event.kind)
            .json_data(&event)
            .unwrap_or_default()
    });
    Ok(sse::respond(events, cp.stopping()))
}

/// The seq to resume after: `Last-Event-ID`, else 0.
fn after_seq(headers: &HeaderMap) -> Result<i64, ApiError> {
    let Some(text) = sse::last_event_id(headers)? else {
        return Ok(0);
    };
    text.parse::<i64>()
        .ok()
        .filter(|seq| *seq >= 0)
        .ok_or_else(|| {
            ApiError::BadRequest(format!(
                "Last-Event-ID: {text:?} is not a seq (a non-negative integer)"
            ))
        })
}
