//! `GET /v1/events`: every thread's updates over Server-Sent Events, in
//! commit order. Each event is `id: <cursor>`, `event: <kind>`, and JSON
//! data `{"cursor", "thread_id", "seq", "ts", "kind", "data"}`. The cursor
//! is opaque: `Last-Event-ID` (or `?after=`) resumes after it, with no gap
//! and no duplicate; without either the stream starts from now on (on
//! PostgreSQL perhaps with a few updates committed just before, while an
//! older transaction of the server was still running: never fewer).
//!
//! Runners and agents are in no thread's log: when what `GET /v1/runners`
//! or `GET /v1/agents` shows changes, the stream says `event: runners`
//! with `{}` and no `id:` (a hint to read them again; resuming is
//! unchanged), as `gantry serve` says a deleted thread.

use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use axum::response::sse::Event;
use futures_util::stream::{self, Stream, StreamExt};
use serde::Serialize;
use tokio::sync::watch;
use utoipa::ToSchema;

use super::error::ErrorBody;
use super::events::data;
use super::sse;
use crate::ControlPlane;
use crate::error::ApiError;
use crate::store::{LogCursor, LoggedUpdate};

/// The data of one event of every thread's stream; its SSE `id:` is
/// `cursor` and its `event:` is `kind`.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct ThreadsEvent {
    /// Its place in every thread's log: opaque, to resume after.
    pub cursor: String,
    /// The thread it is of.
    pub thread_id: String,
    /// Its seq in that thread's log (dense per thread, from 1).
    pub seq: i64,
    /// When the control plane applied it (ms since the epoch).
    pub ts: i64,
    /// What changed: `thread`, `turn`, `item`, `error` or `usage`.
    pub kind: String,
    /// As in a thread's own stream (ThreadEvent's `data`).
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

/// Follow every thread's updates live (Server-Sent Events).
#[utoipa::path(get, path = "/v1/events", tag = "events",
    params(
        ("after" = Option<String>, Query, description = "Start after this cursor (without Last-Event-ID); default: from now on"),
        ("Last-Event-ID" = Option<String>, Header, description = "Resume after this cursor: the missed updates of every thread are replayed, then live ones follow, with no gap and no duplicate")),
    responses(
        (status = 200, description = "Server-Sent Events in commit order: `id:` the cursor, `event:` the kind, `data:` a ThreadsEvent; a comment at once and every 15 s; and, with no `id:`, `event: runners` with `{}` when runners or agents change (read them again)", content_type = "text/event-stream", body = ThreadsEvent),
        (status = 400, description = "A bad cursor or query parameter", body = ErrorBody),
        (status = 503, description = "The store cannot be read", body = ErrorBody)))]
pub(super) async fn follow_all(
    State(cp): State<ControlPlane>,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let after = match sse::last_event_id(&headers)? {
        Some(text) => Some(cursor("Last-Event-ID", text)?),
        None => after_param(uri.query())?,
    };
    let after = match after {
        Some(after) => after,
        None => cp.log_head().await?,
    };
    let log = cp.follow_all(after).map(event);
    // Ends with the log's stream (its follower stops on a store error).
    let events = stream::select(
        log.map(Some).chain(stream::once(async { None })),
        hints(cp.watch_directory()).map(Some),
    )
    .take_while(|event| std::future::ready(event.is_some()))
    .filter_map(std::future::ready);
    Ok(sse::respond(events, cp.stopping()))
}

/// `event: runners` each time the runners or agents change (coalesced).
fn hints(watches: [watch::Receiver<()>; 2]) -> impl Stream<Item = Event> + Send {
    stream::unfold(watches, |[mut runners, mut agents]| async move {
        let changed = tokio::select! {
            changed = runners.changed() => changed,
            changed = agents.changed() => changed,
        };
        changed.ok()?;
        let hint = Event::default().event("runners").data("{}");
        Some((hint, [runners, agents]))
    })
}

/// The SSE event of one entry.
fn event(entry: LoggedUpdate) -> Event {
    let cursor = entry.cursor.to_string();
    let update = entry.update;
    let body = ThreadsEvent {
        cursor: cursor.clone(),
        thread_id: update.thread_id,
        seq: update.seq,
        ts: update.ts,
        kind: update.kind,
        data: data(update.data),
    };
    Event::default()
        .id(cursor)
        .event(&body.kind)
        .json_data(&body)
        .unwrap_or_default()
}

/// `?after=CURSOR`, the only parameter.
fn after_param(query: Option<&str>) -> Result<Option<LogCursor>, ApiError> {
    let mut after = None;
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        match pair.split_once('=') {
            Some(("after", value)) if after.is_none() => after = Some(cursor("after", value)?),
            Some(("after", _)) => {
                return Err(ApiError::BadRequest("after: given twice".into()));
            }
            _ => {
                let name = pair.split('=').next().unwrap_or_default();
                return Err(ApiError::BadRequest(format!(
                    "unknown query parameter {name:?}: this route takes `after` only"
                )));
            }
        }
    }
    Ok(after)
}

/// A cursor given as `what`.
fn cursor(what: &str, text: &str) -> Result<LogCursor, ApiError> {
    LogCursor::parse(text).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "{what}: {text:?} is not a cursor of this stream (an `id:` it sent)"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_takes_a_cursor_as_after_and_nothing_else() {
        assert_eq!(after_param(None).ok(), Some(None));
        assert_eq!(after_param(Some("")).ok(), Some(None));
        assert_eq!(
            after_param(Some("after=12.3")).ok(),
            Some(Some(LogCursor {
                tx: 12,
                position: 3
            }))
        );
        for bad in ["after=x", "after=", "after=1&after=2", "limit=3", "after"] {
            assert!(after_param(Some(bad)).is_err(), "{bad}");
        }
    }
}
